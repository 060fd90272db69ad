/* The knob table and typed value parsing shared by conf.c and ctl.c. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "knobs.h"
#include "list.h"

TIER_BOOT_DATA struct tier_settings tier_settings;

static pthread_mutex_t ctl_mutex = PTHREAD_MUTEX_INITIALIZER;
void tier_ctl_lock(void) { pthread_mutex_lock(&ctl_mutex); }
void tier_ctl_unlock(void) { pthread_mutex_unlock(&ctl_mutex); }

#define OFF(f) offsetof(struct tier_settings, f)

const struct tier_knob tier_knobs[] = {
	{"fast_limit", TK_SIZE, OFF(fast_limit), 0, (double)SIZE_MAX, true,
	 "a size such as 512M or 4G",
	 "18446744073709551615", "90% of the fast tier's free memory at start",
	 "fast-tier budget of this process (bytes placed in fast-tier blocks)"},
	{"enabled", TK_BOOL, OFF(enabled), 0, 1, true,
	 "true or false",
	 "true", NULL,
	 "tiering on when there are at least two tiers"},
	{"fast_nodes", TK_NODES, OFF(fast_nodes), 0, 0, false,
	 "a node list such as 0 or 0-1+4",
	 NULL, "discovered",
	 "override the topology: the fast tier's nodes, e.g. fast_nodes:0,slow_nodes:1"},
	{"slow_nodes", TK_NODES, OFF(slow_nodes), 0, 0, false,
	 "a node list such as 1 or 2-3",
	 NULL, "discovered",
	 "override the topology: the slow tier's nodes, e.g. slow_nodes:2+3"},
	{"stats_print", TK_STATS, OFF(stats_print), 0, 2, false,
	 "true, false or json",
	 "false", NULL,
	 "true or json: print stats at exit (to a copy of stderr)"},
	{"verbose", TK_BOOL, OFF(verbose), 0, 1, false,
	 "true or false",
	 "false", NULL,
	 "say at start what tiering does in this process and why"},
	{"trace", TK_BOOL, OFF(trace), 0, 1, true,
	 "true or false",
	 "false", NULL,
	 "log each policy round's moves, one line each: the block, its heat, the bound and error it was judged on"},
	{"period_ms", TK_UINT, OFF(period_ms), 1, 60000, true,
	 "milliseconds, 1 to 60000",
	 "100", NULL,
	 "background thread period"},
	{"heat_half_life_ms", TK_UINT, OFF(heat_half_life_ms), 1, 3600000, true,
	 "milliseconds, 1 to 3600000",
	 "200", NULL,
	 "heat decay"},
	{"promote_rate_mbps", TK_UINT, OFF(promote_rate_mbps), 1, 1000000, true,
	 "MiB per second, 1 to 1000000",
	 "2048", NULL,
	 "promotion rate limit (MiB/s)"},
	{"demote_rate_mbps", TK_UINT, OFF(demote_rate_mbps), 1, 1000000, true,
	 "MiB per second, 1 to 1000000",
	 "2048", NULL,
	 "demotion rate limit (MiB/s)"},
	{"watermark_high", TK_DOUBLE, OFF(watermark_high), 0.01, 1.0, true,
	 "a fraction of fast_limit, 0.01 to 1",
	 "0.95", NULL,
	 "fraction of fast_limit: above it, demote the coldest down to watermark_low; promotions fill up to it, placement (migrate:true) half way from watermark_low"},
	{"watermark_low", TK_DOUBLE, OFF(watermark_low), 0.0, 1.0, true,
	 "a fraction of fast_limit, 0 to 1, not above watermark_high",
	 "0.85", NULL,
	 "fraction of fast_limit that demotions bring the fast tier down to"},
	{"hysteresis", TK_DOUBLE, OFF(hysteresis), 1.0, 1000.0, true,
	 "a factor, 1 to 1000",
	 "2", NULL,
	 "a hot slow block displaces fast blocks only if it is this many times hotter"},
	{"heat_sources", TK_SOURCES, OFF(heat_sources), 0, 0, false,
	 "sources joined by '+': perf, damon, pagemap, recency, cxl, all, none",
	 "perf+damon+pagemap+recency", "perf+damon+pagemap+recency, and cxl when cxl_reports is given",
	 "perf+damon+pagemap+recency+cxl (all), any subset joined by +, or none"},
	{"migrate", TK_BOOL, OFF(migrate), 0, 1, true,
	 "true or false",
	 "true", NULL,
	 "background promotion/demotion"},
	{"bg_cpu", TK_DOUBLE, OFF(bg_cpu), 0.001, 1.0, true,
	 "a share of one core, 0.001 to 1 (0.01 = 1%)",
	 "0.01", NULL,
	 "CPU budget of all background work, as a share of one core: the background thread, the sources' threads, our share of kdamond, and the write faults tracking makes the program take"},
	{"bg_cpu_burst", TK_DOUBLE, OFF(bg_cpu_burst), 0.0, 1.0, true,
	 "a share of one core, 0 to 1 (0: no bursts)",
	 "0.3", NULL,
	 "CPU budget of a burst: while the change detector sees a gain to be had (hot memory on the slow tier, the fast tier's hit share falling, moves the policy wants), all background work may spend this share of a core instead of bg_cpu, for 2 s at a time; bursts are paid from a bank earned at bg_cpu (about a fifth of the time at most)"},
	{"advise", TK_BOOL, OFF(advise), 0, 1, false,
	 "true or false",
	 "false", NULL,
	 "run the heat sources and report the hot-set curve even with one tier or migrate:false (start-up only)"},
	{"signal_safe", TK_BOOL, OFF(signal_safe), 0, 1, false,
	 "true or false",
	 "false", NULL,
	 "serve malloc calls from signal handlers that interrupt the allocator from a pool of their own instead of deadlocking in jemalloc; costs about 2 ns a call (start-up only)"},
	{"advise_csv", TK_PATH, OFF(advise_csv), 0, 0, false,
	 "an absolute file path, at most 255 bytes, without ','",
	 NULL, "none",
	 "an absolute path: append the hot-set curve there once a second (CSV, header on the first line)"},
	{"cxl_reports", TK_PATH, OFF(cxl_reports), 0, 0, false,
	 "an absolute file path, at most 255 bytes, without ','",
	 NULL, "none",
	 "an absolute path: a file or FIFO of CXL hot-list records (see \"CXL hot lists\") that the cxl heat source reads each period"},
	{"always_hook", TK_BOOL, OFF(always_hook), 0, 1, false,
	 "true or false",
	 "false", NULL,
	 "install the extent hooks even where nothing can be tiered, so that stats count every extent and tier_pin accepts malloc memory"},
	{"ctl", TK_BOOL, OFF(ctl), 0, 1, false,
	 "true or false",
	 "false", NULL,
	 "publish the control channel (tiermalloc stat/top/ctl) even when nothing is tiered; with tiering on it is always published"},
	{"run_dir", TK_PATH, OFF(run_dir), 0, 0, false,
	 "an absolute directory path, at most 255 bytes, without ','",
	 NULL, "see \"Runtime directory\"",
	 "an absolute path: this user's runtime directory (control channels), tried before the default places"},
	{"job", TK_NAME, OFF(job), 0, 0, false,
	 "a name of 1 to 63 letters, digits, '.', '_' or '-'",
	 NULL, "none: the cgroup, when job_fast_limit is given",
	 "join the job of this name: its processes share one fast-tier budget (see \"Job-wide tiering\")"},
	{"job_fast_limit", TK_SHARE, OFF(job_fast_limit), 0, 0, false,
	 "a size such as 512M, or a share of the fast tier's memory such as 50%",
	 NULL, "fast_limit, when only job is given",
	 "the fast-tier budget of the whole job, shared by its processes; given alone, the job is this process's cgroup"},
	{"large_cache", TK_SIZE, OFF(large_cache), 0, (double)((size_t)1 << 40), false,
	 "a size: 0 (off), or bytes with K, M or G",
	 "4M", NULL,
	 "keep freed large buffers (4 MiB and up, served by jemalloc's huge arena) for reuse instead of purging them at once, within this much above the recent peak of live large memory; 0: jemalloc's eager purge (start-up only)"},
};
_Static_assert(sizeof(tier_knobs) / sizeof(tier_knobs[0]) <= 32, "struct tier_settings.set has 32 bits");
const size_t tier_nknobs = sizeof(tier_knobs) / sizeof(tier_knobs[0]);

static const char *const src_names[TIER_SRC_COUNT] = {"perf", "damon", "pagemap", "recency", "cxl"};

const char *tier_source_name(unsigned src)
{
	return src < TIER_SRC_COUNT ? src_names[src] : "?";
}

/* fast_limit's default, SIZE_MAX, stands for "resolved from the topology
 * at boot" (init.c) */
_Static_assert(SIZE_MAX == 18446744073709551615ull, "fast_limit's default is SIZE_MAX");

/* Each row's default, parsed as TIERMALLOC_CONF would: the rows are the
 * one place a default is written. */
TIER_STARTUP void tier_settings_default(struct tier_settings *s)
{
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < tier_nknobs; i++) {
		const char *v = tier_knobs[i].init;
		if (v && tier_knob_parse(&tier_knobs[i], v, strlen(v), s))
			abort(); /* a row's default that its own parser refuses */
	}
	s->set = 0;
}

const char *tier_knob_default_words(const struct tier_knob *k)
{
	return k->def ? k->def : k->init ? k->init : "none";
}

TIER_STARTUP const struct tier_knob *tier_knob_find(const char *name, size_t len)
{
	for (size_t i = 0; i < tier_nknobs; i++)
		if (strlen(tier_knobs[i].name) == len && !memcmp(tier_knobs[i].name, name, len))
			return &tier_knobs[i];
	return NULL;
}

TIER_STARTUP int tier_knob_index(const struct tier_knob *k)
{
	return (int)(k - tier_knobs);
}

TIER_STARTUP bool tier_knob_given(const struct tier_settings *s, const char *name)
{
	const struct tier_knob *k = tier_knob_find(name, strlen(name));
	return k && (s->set >> tier_knob_index(k) & 1);
}

TIER_STARTUP size_t tier_knob_size(const struct tier_knob *k)
{
	switch (k->type) {
	case TK_SIZE: return sizeof(size_t);
	case TK_BOOL: return sizeof(bool);
	case TK_UINT: case TK_STATS: case TK_SOURCES: return sizeof(unsigned);
	case TK_DOUBLE: return sizeof(double);
	case TK_NODES: return sizeof(tier_nodemask_t);
	case TK_PATH: return TIER_PATH_MAX;
	case TK_NAME: return TIER_NAME_MAX;
	case TK_SHARE: return sizeof(struct tier_size_share);
	}
	return 0;
}

/* ASCII case folding by hand: strncasecmp reads the locale's tables,
 * pages no other start-up code maps. */
TIER_STARTUP static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

TIER_STARTUP static bool word_is(const char *v, size_t len, const char *w)
{
	if (strlen(w) != len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (lower(v[i]) != lower(w[i]))
			return false;
	return true;
}

TIER_STARTUP static int bool_parse(const char *v, size_t len, bool *out)
{
	if (word_is(v, len, "true") || word_is(v, len, "1") || word_is(v, len, "yes") ||
	    word_is(v, len, "on"))
		*out = true;
	else if (word_is(v, len, "false") || word_is(v, len, "0") || word_is(v, len, "no") ||
		 word_is(v, len, "off"))
		*out = false;
	else
		return -1;
	return 0;
}

TIER_STARTUP static int uint_parse(const char *v, size_t len, unsigned long long *out)
{
	unsigned long long x = 0;
	size_t i = 0;
	if (len == 0)
		return -1;
	for (; i < len && v[i] >= '0' && v[i] <= '9'; i++) {
		if (x > (ULLONG_MAX - (unsigned)(v[i] - '0')) / 10)
			return -1;
		x = x * 10 + (unsigned)(v[i] - '0');
	}
	if (i == 0)
		return -1;
	*out = x;
	return (int)i;
}

/* "4096", "64K", "64k", "512M", "2G", "1T", optionally followed by "B" or
 * "iB": binary multiples, no fractions, no overflow. */
TIER_STARTUP int tier_size_parse(const char *v, size_t len, size_t *out)
{
	unsigned long long x;
	int n = uint_parse(v, len, &x);
	if (n < 0)
		return -1;
	size_t i = (size_t)n;
	unsigned shift = 0;
	if (i < len) {
		switch (v[i]) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		case 'b': case 'B': break;
		default: return -1;
		}
		if (v[i] != 'b' && v[i] != 'B') {
			i++;
			if (i < len && (v[i] == 'i') && i + 1 < len && (v[i + 1] == 'B' || v[i + 1] == 'b'))
				i += 2;
			else if (i < len && (v[i] == 'B' || v[i] == 'b'))
				i++;
		} else {
			i++;
		}
		if (i != len)
			return -1;
	}
	if (shift && x > (SIZE_MAX >> shift))
		return -1;
	if (x > SIZE_MAX)
		return -1;
	*out = (size_t)(x << shift);
	return 0;
}

/* Digits with at most one '.': m / 10^k of two exact doubles, so rounded
 * once, as strtod rounds, while m < 2^53 and k <= 22.  The defaults all
 * are: parsing them at start-up then maps none of libc's strtod pages. */
TIER_STARTUP static bool decimal_exact(const char *v, size_t len, double *out)
{
	static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
				     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
				     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
	uint64_t m = 0;
	int k = -1, nd = 0; /* k: digits after the point, -1 before it */
	for (size_t i = 0; i < len; i++) {
		if (v[i] == '.') {
			if (k >= 0)
				return false;
			k = 0;
			continue;
		}
		if (m >= ((uint64_t)1 << 53) / 10)
			return false;
		m = m * 10 + (uint64_t)(v[i] - '0');
		nd++;
		if (k >= 0)
			k++;
	}
	if (!nd || k > 22)
		return false;
	*out = (double)m / p10[k < 0 ? 0 : k];
	return true;
}

TIER_STARTUP static int double_parse(const char *v, size_t len, double *out)
{
	char buf[64];
	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, v, len);
	buf[len] = '\0';
	for (size_t i = 0; i < len; i++)
		if (!((buf[i] >= '0' && buf[i] <= '9') || buf[i] == '.'))
			return -1;
	if (decimal_exact(buf, len, out))
		return 0;
	char *end;
	double d = strtod(buf, &end);
	if (end != buf + len || !isfinite(d))
		return -1;
	*out = d;
	return 0;
}

/* one item of a sources list: a source, "all" or "none" */
TIER_STARTUP static int source_item(void *ctx, const char *v, size_t len)
{
	unsigned *m = ctx;
	if (word_is(v, len, "all")) {
		*m |= TIER_SRC_ALL;
		return 0;
	}
	if (word_is(v, len, "none"))
		return 0;
	for (unsigned k = 0; k < TIER_SRC_COUNT; k++)
		if (word_is(v, len, src_names[k])) {
			*m |= 1u << k;
			return 0;
		}
	return -1;
}

TIER_STARTUP int tier_sources_parse(const char *v, size_t len, unsigned *out)
{
	unsigned m = 0;
	if (tier_list_parse(v, len, "+", source_item, &m))
		return -1;
	*out = m;
	return 0;
}

TIER_STARTUP int tier_knob_check(const struct tier_knob *k, const void *val)
{
	double d;
	switch (k->type) {
	case TK_SIZE: d = (double)*(const size_t *)val; break;
	case TK_UINT: case TK_STATS: d = *(const unsigned *)val; break;
	case TK_DOUBLE: d = *(const double *)val; if (!isfinite(d)) return -1; break;
	case TK_BOOL: return 0;
	case TK_SOURCES: return (*(const unsigned *)val & ~TIER_SRC_ALL) ? -1 : 0;
	case TK_NODES: return 0;
	case TK_PATH: {
		const char *p = val;
		size_t n = strnlen(p, TIER_PATH_MAX);
		return n < TIER_PATH_MAX && (n == 0 || p[0] == '/') && !memchr(p, ',', n) ? 0 : -1;
	}
	case TK_NAME: {
		const char *p = val;
		size_t n = strnlen(p, TIER_NAME_MAX);
		if (n == 0 || n >= TIER_NAME_MAX)
			return -1;
		for (size_t i = 0; i < n; i++)
			if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
			      (p[i] >= '0' && p[i] <= '9') || p[i] == '.' || p[i] == '_' || p[i] == '-'))
				return -1;
		return 0;
	}
	case TK_SHARE: {
		const struct tier_size_share *z = val;
		if (z->share != 0)
			return isfinite(z->share) && z->share > 0 && z->share <= 1 && !z->bytes ? 0 : -1;
		return 0;
	}
	default: return -1;
	}
	return (d < k->min || d > k->max) ? -1 : 0;
}

TIER_STARTUP int tier_knob_parse(const struct tier_knob *k, const char *v, size_t len, struct tier_settings *s)
{
	char *field = (char *)s + k->offset;
	union { size_t z; bool b; unsigned u; double d; tier_nodemask_t m; char path[TIER_PATH_MAX];
		struct tier_size_share ss; } x;
	unsigned long long ull = 0;
	switch (k->type) {
	case TK_SIZE:
		if (tier_size_parse(v, len, &x.z)) return -1;
		break;
	case TK_BOOL:
		if (bool_parse(v, len, &x.b)) return -1;
		break;
	case TK_UINT:
		if (uint_parse(v, len, &ull) != (int)len || ull > UINT32_MAX) return -1;
		x.u = (unsigned)ull;
		break;
	case TK_DOUBLE:
		if (double_parse(v, len, &x.d)) return -1;
		break;
	case TK_NODES:
		if (tier_nodemask_parse(v, len, &x.m)) return -1;
		break;
	case TK_STATS:
		if (word_is(v, len, "json"))
			x.u = 2;
		else if (bool_parse(v, len, &x.b))
			return -1;
		else
			x.u = x.b ? 1 : 0;
		break;
	case TK_SOURCES:
		if (tier_sources_parse(v, len, &x.u)) return -1;
		break;
	case TK_PATH:
		if (len >= TIER_PATH_MAX) return -1;
		memset(x.path, 0, sizeof(x.path));
		memcpy(x.path, v, len);
		if (memchr(x.path, '\0', len)) return -1;
		break;
	case TK_NAME:
		if (len >= TIER_NAME_MAX) return -1;
		memset(x.path, 0, TIER_NAME_MAX);
		memcpy(x.path, v, len);
		break;
	case TK_SHARE:
		memset(&x.ss, 0, sizeof(x.ss));
		if (len > 1 && v[len - 1] == '%') {
			if (double_parse(v, len - 1, &x.d)) return -1;
			double pct = x.d;
			memset(&x.ss, 0, sizeof(x.ss));
			x.ss.share = pct / 100.0;
			if (!(x.ss.share > 0)) return -1;
		} else if (tier_size_parse(v, len, &x.ss.bytes) || !x.ss.bytes) {
			return -1;
		}
		break;
	}
	if (tier_knob_check(k, &x))
		return -1;
	memcpy(field, &x, tier_knob_size(k));
	s->set |= 1u << tier_knob_index(k);
	return 0;
}

TIER_STARTUP const char *tier_settings_check(const struct tier_settings *s)
{
	if (s->watermark_low > s->watermark_high)
		return "watermark_low must not exceed watermark_high";
	if (s->fast_nodes & s->slow_nodes)
		return "fast_nodes and slow_nodes share a node";
	return NULL;
}

/* A knob's value as TIERMALLOC_CONF would spell it. */
const char *tier_knob_format(const struct tier_knob *k, const struct tier_settings *s, char *buf, size_t len)
{
	const char *field = (const char *)s + k->offset;
	buf[0] = '\0';
	switch (k->type) {
	case TK_SIZE: snprintf(buf, len, "%zu", *(const size_t *)field); break;
	case TK_BOOL: snprintf(buf, len, "%s", *(const bool *)field ? "true" : "false"); break;
	case TK_UINT: snprintf(buf, len, "%u", *(const unsigned *)field); break;
	case TK_DOUBLE: snprintf(buf, len, "%g", *(const double *)field); break;
	case TK_NODES: tier_nodemask_str(*(const tier_nodemask_t *)field, buf, len); break;
	case TK_STATS: {
		unsigned v = *(const unsigned *)field;
		snprintf(buf, len, "%s", v == 2 ? "json" : v ? "true" : "false");
		break;
	}
	case TK_SOURCES: {
		unsigned m = *(const unsigned *)field;
		size_t n = 0;
		if (!m)
			snprintf(buf, len, "none");
		for (unsigned i = 0; i < TIER_SRC_COUNT && n < len; i++)
			if (m >> i & 1) {
				int r = snprintf(buf + n, len - n, "%s%s", n ? "+" : "", src_names[i]);
				n += r > 0 ? (size_t)r : 0;
			}
		break;
	}
	case TK_PATH: case TK_NAME: snprintf(buf, len, "%s", field); break;
	case TK_SHARE: {
		const struct tier_size_share *z = (const void *)field;
		if (z->share > 0)
			snprintf(buf, len, "%g%%", z->share * 100.0);
		else
			snprintf(buf, len, "%zu", z->bytes);
		break;
	}
	}
	return buf;
}

/* Effects registered by their owners (place.c's budget, the background
 * thread's wake-up): indexed like tier_knobs. */
TIER_BOOT_DATA static void (*on_set[32])(void);
TIER_BOOT_DATA static void (*on_any)(void);

TIER_STARTUP void tier_knob_on_set(const char *name, void (*fn)(void))
{
	const struct tier_knob *k = tier_knob_find(name, strlen(name));
	if (!k)
		abort(); /* a registration naming no knob: a typo caught at the first boot */
	on_set[tier_knob_index(k)] = fn;
}

TIER_STARTUP void tier_knob_on_any(void (*fn)(void))
{
	on_any = fn;
}

void tier_knob_written(const struct tier_knob *k)
{
	void (*fn)(void) = on_set[tier_knob_index(k)];
	if (fn)
		fn();
	if (on_any)
		on_any();
}
