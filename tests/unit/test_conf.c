/* TIERMALLOC_CONF parsing: valid strings, invalid ones (all or nothing),
 * size edge cases, node lists. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "knobs.h"

static char last_err[512];
static int nerr;
static void err(void *ctx, const char *line)
{
	(void)ctx;
	nerr++;
	snprintf(last_err, sizeof(last_err), "%s", line);
}

static int parse(const char *s, struct tier_settings *out)
{
	nerr = 0;
	last_err[0] = '\0';
	tier_settings_default(out);
	return tier_conf_parse(s, out, err, NULL);
}

/* A bad string must report errors and leave the defaults untouched. */
static void bad(const char *s, const char *must_mention)
{
	struct tier_settings s1, def;
	tier_settings_default(&def);
	int e = parse(s, &s1);
	ok(e > 0 && nerr == e && !memcmp(&s1, &def, sizeof(def)) && strstr(last_err, must_mention),
	   "rejected \"%s\" (error names \"%s\": %s)", s, must_mention, last_err);
}

static void size_ok(const char *v, size_t expect)
{
	char buf[128];
	struct tier_settings s;
	snprintf(buf, sizeof(buf), "fast_limit:%s", v);
	int e = parse(buf, &s);
	ok(e == 0 && s.fast_limit == expect, "fast_limit:%s = %zu (got %zu)", v, expect, s.fast_limit);
}

int main(void)
{
	struct tier_settings s, def;
	tier_settings_default(&def);

	ok(parse("", &s) == 0 && !memcmp(&s, &def, sizeof(s)), "empty string changes nothing");

	/* decimals are read without strtod where that is exact (knobs.c):
	 * the same doubles strtod gives, in and past that range */
	static const char *const dec[] = {"0.95", "0.85", "0.01", "0.3", "1", "2.", "1000",
					  "0.1234567890123456789", "3.14159265358979323846",
					  "999.000000000000000000000001", "0.0000000000000000000000123"};
	bool same = true;
	int tried = 0;
	for (size_t i = 0; i < sizeof(dec) / sizeof(dec[0]); i++) {
		char conf[96];
		double d = strtod(dec[i], NULL);
		if (d >= 1 && d <= 1000) { /* hysteresis: 1 to 1000 */
			snprintf(conf, sizeof(conf), "hysteresis:%s", dec[i]);
			same &= parse(conf, &s) == 0 && s.hysteresis == d;
			tried++;
		}
		if (d <= def.watermark_high) {
			snprintf(conf, sizeof(conf), "watermark_low:%s", dec[i]);
			same &= parse(conf, &s) == 0 && s.watermark_low == d;
			tried++;
		}
	}
	same &= tried == 11;
	ok(same, "decimal knobs read as strtod reads them");
	ok(def.enabled && def.migrate && def.fast_limit == SIZE_MAX && def.heat_sources == TIER_SRC_DEFAULT,
	   "defaults: enabled, migrate, fast_limit unset, all sources but cxl");

	/* sizes */
	size_ok("0", 0);
	size_ok("4096", 4096);
	size_ok("1K", 1024);
	size_ok("1k", 1024);
	size_ok("1KiB", 1024);
	size_ok("1KB", 1024);
	size_ok("64M", 64ull << 20);
	size_ok("2g", 2ull << 30);
	size_ok("3T", 3ull << 40);
	size_ok("12B", 12);
	size_ok("18446744073709551615", SIZE_MAX);
	size_ok("16777215T", 16777215ull << 40);
	bad("fast_limit:16777216T", "fast_limit");
	bad("fast_limit:18446744073709551616", "fast_limit");
	bad("fast_limit:", "fast_limit");
	bad("fast_limit:abc", "\"abc\"");
	bad("fast_limit:-1", "\"-1\"");
	bad("fast_limit:1.5G", "\"1.5G\"");
	bad("fast_limit:64Q", "\"64Q\"");
	bad("fast_limit:64MM", "\"64MM\"");
	bad("fast_limit: 64M", "fast_limit");

	/* several keys, spaces around tokens, later keys win */
	ok(parse(" fast_limit:64M , enabled:false,verbose:yes,stats_print:json", &s) == 0 &&
		   s.fast_limit == 64ull << 20 && !s.enabled && s.verbose && s.stats_print == 2,
	   "several keys with spaces around tokens");
	ok(parse("fast_limit:1G,fast_limit:2G", &s) == 0 && s.fast_limit == 2ull << 30,
	   "a repeated key: the last one wins");
	ok(parse("stats_print:true,", &s) == 0 && s.stats_print == 1, "trailing comma is harmless");
	ok(tier_knob_given(&s, "stats_print") && !tier_knob_given(&s, "fast_limit"),
	   "explicitly given knobs are remembered");

	/* all or nothing */
	bad("fast_limit:1G,bogus:1", "unknown key \"bogus\"");
	bad("fast_limt:1G", "unknown key \"fast_limt\"");
	bad("verbose", "not key:value");
	bad("enabled:maybe", "enabled");
	bad("period_ms:0", "period_ms");
	bad("period_ms:60001", "period_ms");
	bad("period_ms:1e3", "period_ms");
	bad("watermark_high:1.5", "watermark_high");
	bad("hysteresis:0.5", "hysteresis");
	bad("watermark_low:0.9,watermark_high:0.8", "watermark_low must not exceed watermark_high");
	bad("fast_nodes:0,slow_nodes:0", "share a node");
	bad("heat_sources:damon+bogus", "heat_sources");
	bad("heat_sources:damon+", "heat_sources");
	{
		struct tier_settings t;
		int e = parse("bogus:1,fast_limit:zz,verbose:true", &t);
		ok(e == 2 && nerr == 2 && !t.verbose, "each bad entry reported once; nothing applied (%d)",
		   e);
	}

	/* node lists */
	ok(parse("fast_nodes:0,slow_nodes:1", &s) == 0 && s.fast_nodes == 1 && s.slow_nodes == 2,
	   "fast_nodes:0,slow_nodes:1");
	ok(parse("fast_nodes:0,2,slow_nodes:1,3", &s) == 0 && s.fast_nodes == 5 && s.slow_nodes == 10,
	   "node lists continue past commas");
	ok(parse("fast_nodes:0-1+4", &s) == 0 && s.fast_nodes == 0x13, "ranges and '+' in node lists");
	ok(parse("slow_nodes:63", &s) == 0 && s.slow_nodes == 1ull << 63, "node 63 is the last valid id");
	bad("slow_nodes:64", "slow_nodes");
	bad("slow_nodes:2-1", "slow_nodes");
	bad("slow_nodes:1-", "slow_nodes");

	/* other types */
	ok(parse("heat_sources:damon+pagemap", &s) == 0 &&
		   s.heat_sources == (1u << TIER_SRC_DAMON | 1u << TIER_SRC_PAGEMAP),
	   "heat_sources:damon+pagemap");
	ok(parse("heat_sources:none", &s) == 0 && s.heat_sources == 0, "heat_sources:none");
	ok(parse("watermark_high:0.9,watermark_low:0.5,hysteresis:1.25", &s) == 0 &&
		   s.watermark_high == 0.9 && s.watermark_low == 0.5 && s.hysteresis == 1.25,
	   "fractions");
	ok(parse("period_ms:250,promote_rate_mbps:100,demote_rate_mbps:50,migrate:off", &s) == 0 &&
		   s.period_ms == 250 && s.promote_rate_mbps == 100 && s.demote_rate_mbps == 50 &&
		   !s.migrate,
	   "integers and booleans");

	ok(parse("bg_cpu:0.05,advise:true,advise_csv:/tmp/hot.csv", &s) == 0 && s.bg_cpu == 0.05 &&
		   s.advise && !strcmp(s.advise_csv, "/tmp/hot.csv"),
	   "bg_cpu, advise, advise_csv");
	ok(def.bg_cpu == 0.01 && !def.advise && !def.advise_csv[0], "defaults: bg_cpu 1%%, no advice");
	bad("bg_cpu:0", "bg_cpu");
	bad("bg_cpu:1.5", "bg_cpu");
	bad("advise_csv:hot.csv", "advise_csv");
	{
		char long_path[400] = "advise_csv:/";
		memset(long_path + 12, 'x', 300);
		long_path[312] = '\0';
		bad(long_path, "advise_csv");
	}

	/* job-wide tiering: a job name, a budget as a size or a share */
	ok(parse("job:web-1.a_b,job_fast_limit:2G", &s) == 0 && !strcmp(s.job, "web-1.a_b") &&
		   s.job_fast_limit.bytes == (size_t)2 << 30 && s.job_fast_limit.share == 0,
	   "job and job_fast_limit as a size");
	ok(parse("job_fast_limit:50%", &s) == 0 && s.job_fast_limit.share == 0.5 && !s.job_fast_limit.bytes,
	   "job_fast_limit as a share (50%%)");
	{
		char b[64];
		const struct tier_knob *k = tier_knob_find("job_fast_limit", 14);
		ok(k && !strcmp(tier_knob_format(k, &s, b, sizeof(b)), "50%"), "the share prints back as 50%%");
	}
	ok(!def.job[0] && !def.job_fast_limit.bytes && def.job_fast_limit.share == 0, "defaults: no job");
	bad("job:a/b", "job");
	bad("job:a b", "job");
	bad("job:", "job");
	bad("job_fast_limit:0", "job_fast_limit");
	bad("job_fast_limit:150%", "job_fast_limit");
	bad("job_fast_limit:0%", "job_fast_limit");
	bad("job_fast_limit:%", "job_fast_limit");
	bad("job_fast_limit:5x%", "job_fast_limit");

	/* node masks print back */
	char buf[64];
	ok(!strcmp(tier_nodemask_str(0x1d, buf, sizeof(buf)), "0,2-4"), "mask 0x1d prints as 0,2-4 (%s)",
	   buf);
	return done();
}
