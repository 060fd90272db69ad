/* TIERMALLOC_CONF="key:value,key:value": parsed all or nothing, so that a
 * typo never leaves a half-applied configuration behind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "knobs.h"

#define REPORT(...)                                        \
	do {                                               \
		char line_[400];                           \
		snprintf(line_, sizeof(line_), __VA_ARGS__); \
		err(ctx, line_);                           \
		errors++;                                  \
	} while (0)

TIER_STARTUP static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n'; }

TIER_STARTUP int tier_conf_parse(const char *conf, struct tier_settings *out,
                    void (*err)(void *ctx, const char *line), void *ctx)
{
	struct tier_settings s = *out;
	int errors = 0;
	const char *p = conf;

	while (*p) {
		/* one token: up to the next ',' */
		const char *t = p, *e = p;
		while (*e && *e != ',')
			e++;
		p = *e ? e + 1 : e;
		while (t < e && is_space(*t))
			t++;
		const char *te = e;
		while (te > t && is_space(te[-1]))
			te--;
		if (t == te)
			continue;
		const char *colon = memchr(t, ':', (size_t)(te - t));
		if (!colon) {
			REPORT("TIERMALLOC_CONF: \"%.*s\" is not key:value", (int)(te - t), t);
			continue;
		}
		size_t klen = (size_t)(colon - t);
		const struct tier_knob *k = tier_knob_find(t, klen);
		if (!k) {
			REPORT("TIERMALLOC_CONF: unknown key \"%.*s\"", (int)klen, t);
			continue;
		}
		const char *v = colon + 1;
		/* A node list may continue past commas: "fast_nodes:0,2,slow_nodes:1". */
		if (k->type == TK_NODES) {
			while (*p) {
				const char *q = p;
				while (*q && *q != ',' && *q != ':')
					q++;
				if (*q == ':' || q == p)
					break;
				te = q;
				p = *q ? q + 1 : q;
			}
		}
		if (tier_knob_parse(k, v, (size_t)(te - v), &s)) {
			REPORT("TIERMALLOC_CONF: bad value \"%.*s\" for %s (expected %s)",
			       (int)(te - v), v, k->name, k->expect);
		}
	}
	if (!errors) {
		const char *why = tier_settings_check(&s);
		if (why)
			REPORT("TIERMALLOC_CONF: %s", why);
	}
	if (!errors)
		*out = s;
	return errors;
}

static void err_to_log(void *ctx, const char *line)
{
	(void)ctx;
	tier_log("%s; configuration ignored, running with defaults", line);
}

TIER_STARTUP void tier_conf_load(struct tier_settings *s)
{
	/* setuid/setgid programs must not be steered by the caller's environment */
	if (getauxval(AT_SECURE))
		return;
	const char *conf = getenv("TIERMALLOC_CONF");
	if (conf)
		tier_conf_parse(conf, s, err_to_log, NULL);
}
