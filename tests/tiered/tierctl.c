/* tierctl: print tier_mallctl values for shell tests in the VM.
 *   tierctl NAME...           each value on its own line; the type comes
 *                             from the name (strings, bools, sizes, counts)
 *   tierctl -w NAME=VALUE ... write a size_t/unsigned/bool knob first
 *   tierctl -W ...            first wait (up to 20 s) until the background
 *                             thread has run a period (its sources started)
 *   tierctl -S SECONDS ...    first sleep that long
 *   tierctl -U SECS NAME TEXT  wait (up to SECS) until the string NAME holds
 *                             TEXT; prints the value and the wait, or fails
 * The options and names run in the order given, and may alternate.
 * Exit status 1 with a message when a name fails. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tiermalloc.h"

enum kind { K_STR, K_BOOL, K_UNSIGNED, K_SIZE, K_U64, K_DOUBLE };

static enum kind kind_of(const char *n)
{
	const char *last = strrchr(n, '.');
	last = last ? last + 1 : n;
	static const char *const strs[] = {"version", "nodes", "reason", "method", "off_reason", "kind", "devices"};
	static const char *const bools[] = {"active", "enabled", "migrate", "verbose", "running", "idle",
					    "advise"};
	static const char *const uns[] = {"count", "arena", "period_ms", "heat_half_life_ms",
					  "promote_rate_mbps", "demote_rate_mbps", "heat_sources",
					  "stats_print"};
	static const char *const dbl[] = {"watermark_high", "watermark_low", "hysteresis", "share", "bg_cpu"};
	/* job.* and cgroup.* (job.c); opt.job and opt.job_fast_limit read as text */
	if (!strcmp(n, "opt.job") || !strcmp(n, "opt.job_fast_limit"))
		return K_STR;
	if (!strncmp(n, "job.", 4) || !strncmp(n, "cgroup.", 7)) {
		static const char *const jstr[] = {"state", "name", "ledger", "cgroup", "mems"};
		for (size_t i = 0; i < sizeof(jstr) / sizeof(*jstr); i++)
			if (!strcmp(last, jstr[i]))
				return K_STR;
		if (!strcmp(last, "members"))
			return K_UNSIGNED;
		if (!strcmp(last, "requests") || !strncmp(last, "memory_", 7))
			return K_U64;
		return K_SIZE;
	}
	for (size_t i = 0; i < sizeof(strs) / sizeof(*strs); i++)
		if (!strcmp(last, strs[i]))
			return K_STR;
	for (size_t i = 0; i < sizeof(bools) / sizeof(*bools); i++)
		if (!strcmp(last, bools[i]))
			return K_BOOL;
	for (size_t i = 0; i < sizeof(uns) / sizeof(*uns); i++)
		if (!strcmp(last, uns[i]))
			return K_UNSIGNED;
	for (size_t i = 0; i < sizeof(dbl) / sizeof(*dbl); i++)
		if (!strcmp(last, dbl[i]))
			return K_DOUBLE;
	if (!strcmp(last, "nodemask") || !strncmp(n, "stats.heat", 10) || !strncmp(n, "stats.bg.", 9) ||
	    !strncmp(n, "stats.monitor.", 14) ||
	    strstr(n, "_bytes") || strstr(n, "_blocks") || strstr(n, "_pages") || strstr(n, "_ns"))
		return K_U64;
	if (!strcmp(n, "tier.heat.sources"))
		return K_STR;
	return K_SIZE;
}

static double mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int write_knob(const char *arg)
{
	char name[128];
	const char *eq = strchr(arg, '=');
	if (!eq || (size_t)(eq - arg) >= sizeof(name))
		return EINVAL;
	memcpy(name, arg, (size_t)(eq - arg));
	name[eq - arg] = '\0';
	const char *v = eq + 1;
	switch (kind_of(name)) {
	case K_BOOL: {
		bool b = !strcmp(v, "true") || !strcmp(v, "1");
		return tier_mallctl(name, NULL, NULL, &b, sizeof(b));
	}
	case K_UNSIGNED: {
		unsigned u = (unsigned)strtoul(v, NULL, 0);
		return tier_mallctl(name, NULL, NULL, &u, sizeof(u));
	}
	case K_DOUBLE: {
		double d = strtod(v, NULL);
		return tier_mallctl(name, NULL, NULL, &d, sizeof(d));
	}
	default: {
		size_t z = strtoull(v, NULL, 0);
		return tier_mallctl(name, NULL, NULL, &z, sizeof(z));
	}
	}
}

static int read_name(const char *n)
{
	int e;
	union { const char *s; bool b; unsigned u; size_t z; uint64_t q; double d; } v;
	size_t len;
	switch (kind_of(n)) {
	case K_STR: len = sizeof(v.s); e = tier_mallctl(n, &v.s, &len, NULL, 0); if (!e) printf("%s\n", v.s); break;
	case K_BOOL: len = sizeof(v.b); e = tier_mallctl(n, &v.b, &len, NULL, 0); if (!e) printf("%s\n", v.b ? "true" : "false"); break;
	case K_UNSIGNED: len = sizeof(v.u); e = tier_mallctl(n, &v.u, &len, NULL, 0); if (!e) printf("%u\n", v.u); break;
	case K_U64: len = sizeof(v.q); e = tier_mallctl(n, &v.q, &len, NULL, 0); if (!e) printf("%llu\n", (unsigned long long)v.q); break;
	case K_DOUBLE: len = sizeof(v.d); e = tier_mallctl(n, &v.d, &len, NULL, 0); if (!e) printf("%g\n", v.d); break;
	default: len = sizeof(v.z); e = tier_mallctl(n, &v.z, &len, NULL, 0); if (!e) printf("%zu\n", v.z); break;
	}
	if (e)
		fprintf(stderr, "tierctl: %s: %s\n", n, strerror(e));
	fflush(stdout);
	return e;
}

/* Arguments run in order: -W, -S, -w and names may alternate. */
int main(int argc, char **argv)
{
	int rc = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-W")) {
			for (int k = 0; k < 2000; k++) {
				uint64_t periods = 0;
				size_t l = sizeof(periods);
				if (tier_mallctl("stats.bg.periods", &periods, &l, NULL, 0) == 0 && periods > 0)
					break;
				usleep(10000);
			}
		} else if (!strcmp(argv[i], "-S") && i + 1 < argc) {
			usleep((useconds_t)(atof(argv[++i]) * 1e6));
		} else if (!strcmp(argv[i], "-U") && i + 3 < argc) {
			double secs = atof(argv[i + 1]), t0 = mono(), waited = 0;
			const char *name = argv[i + 2], *text = argv[i + 3], *v = NULL;
			i += 3;
			for (;;) {
				size_t l = sizeof(v);
				if (tier_mallctl(name, &v, &l, NULL, 0) == 0 && v && strstr(v, text))
					break;
				if (waited >= secs) {
					v = NULL;
					break;
				}
				usleep(100000);
				waited = mono() - t0;
			}
			if (v) {
				printf("%s (after %.1f s)\n", v, waited);
			} else {
				printf("no \"%s\" in %s after %.0f s\n", text, name, secs);
				rc = 1;
			}
			fflush(stdout);
		} else if (!strcmp(argv[i], "-w") && i + 1 < argc) {
			int e = write_knob(argv[++i]);
			if (e) {
				fprintf(stderr, "tierctl: writing %s: %s\n", argv[i], strerror(e));
				rc = 1;
			}
		} else if (read_name(argv[i])) {
			rc = 1;
		}
	}
	return rc;
}
