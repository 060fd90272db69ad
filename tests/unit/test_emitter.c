/* The emitter: one walk gives the text, the JSON and the JSON paths, with
 * the same values in each (nesting, arrays, escaping). */
#include <stdint.h>

#include "../tap.h"
#include "emitter.h"

static void walk(struct tier_emitter *e)
{
	tier_emit_begin(e);
	tier_emit_str(e, "version", NULL, "1.2");
	tier_emit_dict_begin(e, "hooks", NULL);
	tier_emit_u64(e, "arenas", "automatic arenas", 3);
	tier_emit_bool(e, "huge", "huge arena hooked", true);
	tier_emit_dict_begin(e, "samples", NULL);
	tier_emit_u64(e, "perf", NULL, 7);
	tier_emit_double(e, "share", NULL, 0.25);
	tier_emit_dict_end(e);
	tier_emit_int(e, "errno", "last errno", -2);
	tier_emit_dict_end(e);
	tier_emit_array_begin(e, "tiers", NULL);
	for (int i = 0; i < 2; i++) {
		tier_emit_dict_begin(e, NULL, NULL);
		tier_emit_int(e, "index", "tier", i);
		tier_emit_str(e, "why", NULL, i ? "a \"quoted\"\\ reason\n" : "fast");
		tier_emit_dict_end(e);
	}
	tier_emit_array_end(e);
	tier_emit_u64(e, "mapped", NULL, UINT64_MAX);
	tier_emit_end(e);
}

static const char *run(enum tier_emit_mode mode)
{
	struct tier_emitter e;
	tap_out_reset();
	tier_emit_init(&e, mode, tap_out_cb, NULL);
	walk(&e);
	return tap_out;
}

int main(void)
{
	const char *json = run(TIER_EMIT_JSON);
	ok(!strcmp(json, "{\"tiermalloc\":{\"version\":\"1.2\",\"hooks\":{\"arenas\":3,\"huge\":true,"
			 "\"samples\":{\"perf\":7,\"share\":0.25},\"errno\":-2},\"tiers\":[{\"index\":0,"
			 "\"why\":\"fast\"},{\"index\":1,\"why\":\"a \\\"quoted\\\"\\\\ reason\\u000a\"}],"
			 "\"mapped\":18446744073709551615}}\n"),
	   "JSON: nested objects, an array of objects, escaped strings: %s", json);
	const char *text = run(TIER_EMIT_TEXT);
	ok(!strcmp(text, "___ Begin tiermalloc statistics ___\n"
			 "version: 1.2\n"
			 "hooks: automatic arenas 3, huge arena hooked true; samples: perf 7, share 0.25, last errno -2\n"
			 "tiers:\n"
			 "   tier 0, why fast\n"
			 "   tier 1, why a \"quoted\"\\ reason\n\n"
			 "mapped: 18446744073709551615\n"
			 "___ End tiermalloc statistics ___\n"),
	   "text: a section a line, groups inline, array items indented:\n%s", text);
	const char *names = run(TIER_EMIT_NAMES);
	ok(!strcmp(names, "version\nhooks.arenas\nhooks.huge\nhooks.samples.perf\nhooks.samples.share\n"
			  "hooks.errno\ntiers.index\ntiers.why\ntiers.index\ntiers.why\nmapped\n"),
	   "names: every value's JSON path, in order:\n%s", names);
	return done();
}
