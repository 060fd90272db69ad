/* tier_mallctl names, values and error codes; tier_malloc; pins; stats. */
#include <errno.h>
#include <jemalloc/jemalloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../tap.h"
#include "tiermalloc.h"

int main(void)
{
	const char *str = "";
	size_t len = sizeof(str);
	unsigned u = 0;
	size_t z = 0, zl = sizeof(z), ul = sizeof(u);
	bool b;
	size_t bl = sizeof(b);

	int e;
	e = tier_mallctl("version", &str, &len, NULL, 0);
	ok(e == 0 && !strcmp(str, TIERMALLOC_VERSION), "version = %s", str);
	e = tier_mallctl("tier.count", &u, &ul, NULL, 0);
	ok(e == 0 && u >= 1, "tier.count = %u", u);
	unsigned ntiers = u;
	e = tier_mallctl("tier.0.nodes", &str, &len, NULL, 0);
	ok(e == 0 && str[0], "tier.0.nodes = %s", str);
	e = tier_mallctl("tier.0.reason", &str, &len, NULL, 0);
	ok(e == 0 && strstr(str, "node"), "tier.0.reason = %s", str);
	ok(tier_mallctl("tier.active", &b, &bl, NULL, 0) == 0 && b == (ntiers > 1), "tier.active");
	e = tier_mallctl("tier.off_reason", &str, &len, NULL, 0);
	ok(e == 0 && (ntiers > 1 || str[0]), "tier.off_reason = \"%s\"", str);

	/* errors */
	ok(tier_mallctl("no.such.name", &z, &zl, NULL, 0) == ENOENT, "unknown name: ENOENT");
	ok(tier_mallctl("tier", &z, &zl, NULL, 0) == ENOENT, "a non-leaf: ENOENT");
	ok(tier_mallctl("", &z, &zl, NULL, 0) == ENOENT && tier_mallctl(NULL, &z, &zl, NULL, 0) == ENOENT,
	   "empty and NULL names: ENOENT");
	ok(tier_mallctl("tier.99.nodes", &str, &len, NULL, 0) == ENOENT, "tier index out of range: ENOENT");
	ok(tier_mallctl("tier.x.nodes", &str, &len, NULL, 0) == ENOENT, "non-numeric index: ENOENT");
	ok(tier_mallctl("tier.0.nodes.extra", &str, &len, NULL, 0) == ENOENT, "trailing component: ENOENT");
	size_t small = 2;
	ok(tier_mallctl("tier.count", &u, &small, NULL, 0) == EINVAL && small == 2,
	   "wrong oldlen: EINVAL, partial copy");
	ok(tier_mallctl("tier.count", NULL, NULL, &u, sizeof(u)) == EPERM, "write to read-only: EPERM");
	ok(tier_mallctl("stats.extents", NULL, NULL, &z, sizeof(z)) == EPERM, "stats are read-only");

	/* rw knobs */
	size_t lim = 0, newlim = 123 << 20;
	e = tier_mallctl("tier.fast_limit", &lim, &zl, &newlim, sizeof(newlim));
	ok(e == 0 && lim > 0, "tier.fast_limit read old (%zu) and write", lim);
	ok(tier_mallctl("tier.fast_limit", &lim, &zl, NULL, 0) == 0 && lim == newlim,
	   "tier.fast_limit reads back");
	ok(tier_mallctl("tier.fast_limit", NULL, NULL, &newlim, 4) == EINVAL, "wrong newlen: EINVAL");
	ok(tier_mallctl("opt.fast_limit", &lim, &zl, NULL, 0) == 0 && lim == newlim,
	   "opt.fast_limit shows the value in effect");
	ok(tier_mallctl("opt.fast_limit", NULL, NULL, &newlim, sizeof(newlim)) == EPERM,
	   "opt.* is read-only");
	b = false;
	ok(tier_mallctl("tier.enabled", NULL, NULL, &b, sizeof(b)) == 0, "tier.enabled = false");
	ok(tier_mallctl("tier.active", &b, &bl, NULL, 0) == 0 && !b, "tiering inactive when disabled");
	b = true;
	tier_mallctl("tier.enabled", NULL, NULL, &b, sizeof(b));
	ok(tier_mallctl("tier.active", &b, &bl, NULL, 0) == 0 && b == (ntiers > 1),
	   "re-enabled: active again iff there are tiers");

	unsigned period = 0, zero = 0, ok_period = 250;
	ok(tier_mallctl("tier.period_ms", NULL, NULL, &zero, sizeof(zero)) == EINVAL,
	   "period_ms 0: EINVAL");
	ok(tier_mallctl("tier.period_ms", NULL, NULL, &ok_period, sizeof(ok_period)) == 0 &&
		   tier_mallctl("tier.period_ms", &period, &ul, NULL, 0) == 0 && period == 250,
	   "period_ms 250 accepted");
	double lo = 0.99, d = 0;
	size_t dl = sizeof(d);
	ok(tier_mallctl("tier.watermark_low", NULL, NULL, &lo, sizeof(lo)) == EINVAL &&
		   tier_mallctl("tier.watermark_low", &d, &dl, NULL, 0) == 0 && d == 0.85,
	   "watermark_low above watermark_high: EINVAL, unchanged");
	ok(tier_mallctl("tier.verbose", &b, &bl, NULL, 0) == ENOENT &&
		   tier_mallctl("opt.verbose", &b, &bl, NULL, 0) == 0,
	   "start-up-only knobs exist only as opt.*");

	/* explicit tier arenas */
	unsigned arena = 0;
	e = tier_mallctl("tier.0.arena", &arena, &ul, NULL, 0);
	ok(e == 0 && arena != UINT32_MAX, "tier.0.arena = %u", arena);
	void *p = mallocx(1 << 20, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);
	ok(p != NULL, "mallocx from the tier arena");
	dallocx(p, MALLOCX_TCACHE_NONE);
	errno = 0;
	ok(tier_malloc(99, 10) == NULL && errno == EINVAL, "tier_malloc(99): EINVAL");
	size_t res0 = 0, res1 = 0;
	tier_mallctl("tier.0.resident", &res0, &zl, NULL, 0);
	char *t = tier_malloc(0, 32 << 20);
	memset(t, 3, 32 << 20);
	e = tier_mallctl("tier.0.resident", &res1, &zl, NULL, 0);
	ok(e == 0 && res1 >= res0 + (32u << 20), "tier.0.resident grows by the 32 MiB touched (%zu -> %zu)",
	   res0, res1);

	/* pins */
	int local;
	ok(tier_pin(&local, sizeof(local)) == EINVAL, "pinning the stack: EINVAL");
	ok(tier_pin(t, 32 << 20) == 0 && tier_pin(t, 10) == 0, "pin twice");
	ok(tier_unpin(t, 10) == 0 && tier_unpin(t, 32 << 20) == 0, "unpin twice");
	ok(tier_unpin(t, 10) == EINVAL, "unpinning an unpinned range: EINVAL");
	ok(tier_pin(NULL, 1) == EINVAL && tier_pin(t, 0) == EINVAL, "NULL or empty range: EINVAL");
	free(t);

	e = tier_mallctl("stats.extents", &z, &zl, NULL, 0);
	ok(e == 0 && z > 0, "stats.extents = %zu", z);
	e = tier_mallctl("stats.mapped", &z, &zl, NULL, 0);
	ok(e == 0 && z >= (32u << 20), "stats.mapped = %zu", z);

	/* stats printing */
	tier_stats_print(tap_out_cb, NULL, NULL);
	ok(strstr(tap_out, "Begin tiermalloc statistics") && strstr(tap_out, "tier 0, nodes") &&
		   strstr(tap_out, "extents:") && strstr(tap_out, "End tiermalloc statistics"),
	   "text stats have tiers and extents");
	if (ntiers == 1)
		ok(strstr(tap_out, "tiering: active false, ") != NULL, "text stats say why tiering is off");
	tap_out_reset();
	tier_stats_print(tap_out_cb, NULL, "J");
	ok(tap_out[0] == '{' && strstr(tap_out, "\"tiers\":[{\"index\":0") && tap_out[tap_outn - 2] == '}',
	   "JSON stats");
	return done();
}
