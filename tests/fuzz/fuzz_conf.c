/* libFuzzer target: TIERMALLOC_CONF parsing (src/conf.c, src/knobs.c).
 * Beyond memory errors (ASan), it checks the parser's promises: all or
 * nothing (on any error the settings are left exactly as they were), a
 * settings set it accepts passes tier_settings_check, and error lines are
 * NUL-terminated text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "knobs.h"

static void on_error(void *ctx, const char *line)
{
	size_t n = strlen(line);
	if (n == 0 || n >= 400)
		__builtin_trap();
	++*(int *)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *conf = malloc(size + 1);
	if (!conf)
		return 0;
	memcpy(conf, data, size);
	conf[size] = '\0';
	struct tier_settings s, before;
	tier_settings_default(&s);
	before = s;
	int lines = 0;
	int errors = tier_conf_parse(conf, &s, on_error, &lines);
	if (errors != lines)
		__builtin_trap(); /* every error said once */
	if (errors && memcmp(&s, &before, sizeof(s)))
		__builtin_trap(); /* a rejected string changed something */
	if (!errors && tier_settings_check(&s))
		__builtin_trap(); /* accepted settings that do not hold together */
	free(conf);
	return 0;
}
