/* tier_mallctl: a small name tree with jemalloc's mallctl conventions:
 * ENOENT for an unknown name or index, EINVAL for a wrong size or value,
 * EPERM for writing a read-only name. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "arena.h"
#include "init.h"
#include "place.h"
#include "pool.h"
#include "registry.h"
#include "resident.h"
#include "stats.h"

struct req {
	void *oldp;
	size_t *oldlenp;
	void *newp;
	size_t newlen;
};

static int readonly(const struct req *r)
{
	return (r->newp || r->newlen) ? EPERM : 0;
}

/* Copy a value out, jemalloc style: on a size mismatch copy what fits and
 * report EINVAL. */
static int out(const struct req *r, const void *v, size_t size)
{
	if (!r->oldp || !r->oldlenp)
		return 0;
	if (*r->oldlenp != size) {
		size_t n = size < *r->oldlenp ? size : *r->oldlenp;
		memcpy(r->oldp, v, n);
		*r->oldlenp = n;
		return EINVAL;
	}
	memcpy(r->oldp, v, size);
	return 0;
}

#define RO_VALUE(type, expr)                        \
	do {                                        \
		int e_ = readonly(r);               \
		if (e_)                             \
			return e_;                  \
		type v_ = (expr);                   \
		return out(r, &v_, sizeof(v_));     \
	} while (0)

typedef int (*handler)(const struct req *r, long idx, const struct tier_knob *k);

static int h_version(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	RO_VALUE(const char *, TIERMALLOC_VERSION);
}
static int h_count(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	RO_VALUE(unsigned, (unsigned)tier_topo.ntiers);
}
static int h_active(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	RO_VALUE(bool, atomic_load(&tier_place.active));
}
static int h_method(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	RO_VALUE(const char *, tier_topo.method);
}
static int h_off_reason(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	RO_VALUE(const char *, atomic_load(&tier_place.active) ? ""
			       : tier_topo.ntiers < 2 ? tier_topo.why_single
						      : "disabled (tier.enabled is false)");
}
static int h_nodes(const struct req *r, long i, const struct tier_knob *k)
{
	(void)k;
	RO_VALUE(const char *, tier_topo.tier[i].nodes_str);
}
static int h_nodemask(const struct req *r, long i, const struct tier_knob *k)
{
	(void)k;
	RO_VALUE(uint64_t, tier_topo.tier[i].nodes);
}
static int h_reason(const struct req *r, long i, const struct tier_knob *k)
{
	(void)k;
	RO_VALUE(const char *, tier_topo.tier[i].reason);
}
static int h_arena(const struct req *r, long i, const struct tier_knob *k)
{
	(void)k;
	RO_VALUE(unsigned, tier_arena_of_tier((int)i));
}
static int h_resident(const struct req *r, long i, const struct tier_knob *k)
{
	(void)k;
	int e = readonly(r);
	if (e)
		return e;
	struct tier_resident res;
	if (tier_resident_scan(&res))
		return EFAULT;
	return out(r, &res.tier[i], sizeof(size_t));
}
static int h_placed(const struct req *r, long i, const struct tier_knob *k)
{
	(void)k;
	RO_VALUE(size_t, atomic_load(&tier_place_stats.used[i]));
}
static int h_committed_tier(const struct req *r, long i, const struct tier_knob *k)
{
	(void)k;
	RO_VALUE(size_t, atomic_load(&tier_place_stats.committed[i]));
}
static int h_extents(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	RO_VALUE(size_t, atomic_load(&tier_reg_stats.extents));
}
static int h_mapped(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	RO_VALUE(size_t, atomic_load(&tier_reg_stats.mapped));
}
static int h_mappings(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	RO_VALUE(size_t, atomic_load(&tier_reg_stats.mappings));
}
static int h_committed(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	RO_VALUE(size_t, atomic_load(&tier_reg_stats.committed));
}
static int h_metadata(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	RO_VALUE(size_t, tier_pool_mapped());
}
static int h_check(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	RO_VALUE(size_t, tier_registry_check() + tier_place_check());
}

/* Apply a knob written at run time to the modules that cache it. */
static void knob_applied(const struct tier_knob *k)
{
	if (!strcmp(k->name, "fast_limit"))
		atomic_store(&tier_place.fast_limit, tier_settings.fast_limit);
	else if (!strcmp(k->name, "enabled"))
		atomic_store(&tier_place.active, tier_settings.enabled && tier_topo.ntiers > 1);
}

/* opt.<knob>: any knob, read-only.  tier.<knob>: run-time knobs, rw. */
static int h_knob(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i;
	size_t size = tier_knob_size(k);
	char *field = (char *)&tier_settings + k->offset;
	if ((r->newp || r->newlen) && !k->runtime)
		return EPERM;
	if (r->newp && r->newlen != size)
		return EINVAL;
	if (r->newp && tier_knob_check(k, r->newp))
		return EINVAL;
	tier_ctl_lock();
	int e = out(r, field, size);
	if (!e && r->newp) {
		struct tier_settings next = tier_settings;
		memcpy((char *)&next + k->offset, r->newp, size);
		if (tier_settings_check(&next)) {
			e = EINVAL;
		} else {
			memcpy(field, r->newp, size);
			knob_applied(k);
		}
	}
	tier_ctl_unlock();
	return e;
}

struct node {
	const char *pattern; /* '#' stands for a tier index */
	handler fn;
};

static const struct node nodes[] = {
	{"version", h_version},
	{"tier.count", h_count},
	{"tier.active", h_active},
	{"tier.method", h_method},
	{"tier.off_reason", h_off_reason},
	{"tier.#.nodes", h_nodes},
	{"tier.#.nodemask", h_nodemask},
	{"tier.#.reason", h_reason},
	{"tier.#.arena", h_arena},
	{"tier.#.resident", h_resident},
	{"tier.#.placed", h_placed},
	{"tier.#.committed", h_committed_tier},
	{"stats.extents", h_extents},
	{"stats.mapped", h_mapped},
	{"stats.mappings", h_mappings},
	{"stats.committed", h_committed},
	{"stats.metadata", h_metadata},
	{"debug.check", h_check},
};

/* Match name against pattern; '#' takes a decimal index. */
static bool match(const char *pattern, const char *name, long *idx)
{
	while (*pattern) {
		if (*pattern == '#') {
			if (*name < '0' || *name > '9')
				return false;
			long v = 0;
			for (; *name >= '0' && *name <= '9'; name++) {
				v = v * 10 + (*name - '0');
				if (v > 1000000)
					return false;
			}
			*idx = v;
			pattern++;
			continue;
		}
		if (*pattern++ != *name++)
			return false;
	}
	return *name == '\0';
}

int tier_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
{
	tier_boot();
	if (!name)
		return ENOENT;
	struct req r = {oldp, oldlenp, newp, newlen};
	long idx = -1;
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		if (!match(nodes[i].pattern, name, &idx))
			continue;
		if (idx >= 0 && idx >= tier_topo.ntiers)
			return ENOENT;
		return nodes[i].fn(&r, idx, NULL);
	}
	const char *dot = strchr(name, '.');
	if (!dot)
		return ENOENT;
	const struct tier_knob *k = tier_knob_find(dot + 1, strlen(dot + 1));
	if (!k)
		return ENOENT;
	if (!strncmp(name, "opt.", 4)) {
		if (newp || newlen)
			return EPERM;
		return h_knob(&r, -1, k);
	}
	if (!strncmp(name, "tier.", 5) && k->runtime)
		return h_knob(&r, -1, k);
	return ENOENT;
}
