/* tier_mallctl: a small name tree with jemalloc's mallctl conventions:
 * ENOENT for an unknown name or index, EINVAL for a wrong size or value,
 * EPERM for writing a read-only name. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "advise.h"
#include "arena.h"
#include "bg.h"
#include "heat.h"
#include "heat_cxl.h"
#include "migrate.h"
#include "monitor.h"
#include "pin.h"
#include "tiering.h"
#include "knobs.h"
#include "topology.h"
#include "job.h"
#include "place.h"
#include "pool.h"
#include "registry.h"
#include "resident.h"
#include "ctl.h"
#include "tiermalloc.h"
#include "reentry.h"
#include "sigpool.h"
#include "large.h"
#include "pageheat.h"
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
	tier_topology_complete(&tier_topo);
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
	tier_topology_complete(&tier_topo);
	RO_VALUE(const char *, tier_topo.tier[i].reason);
}
static int h_kind(const struct req *r, long i, const struct tier_knob *k)
{
	(void)k;
	tier_topology_complete(&tier_topo);
	RO_VALUE(const char *, tier_topo.tier[i].kind);
}
static int h_devices(const struct req *r, long i, const struct tier_knob *k)
{
	(void)k;
	tier_topology_complete(&tier_topo);
	RO_VALUE(const char *, tier_topo.tier[i].devices);
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

/* tier.promote / tier.demote: move N bytes now; reads back what moved. */
static int h_move(const struct req *r, bool promote)
{
	if (!r->newp || r->newlen != sizeof(size_t))
		return EINVAL;
	if (r->oldp && (!r->oldlenp || *r->oldlenp != sizeof(size_t)))
		return EINVAL;
	if (!atomic_load(&tier_place.active))
		return EFAULT;
	size_t moved = tier_move_now(*(const size_t *)r->newp, promote);
	return out(r, &moved, sizeof(moved));
}
static int h_promote(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	return h_move(r, true);
}
static int h_demote(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	return h_move(r, false);
}

static char sources_line[768];
static int h_sources(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	int e = readonly(r);
	if (e)
		return e;
	tier_ctl_lock();
	tier_heat_describe(sources_line, sizeof(sources_line));
	tier_ctl_unlock();
	const char *v = sources_line;
	return out(r, &v, sizeof(v));
}

#define U64_STAT(fn, expr)                                                     \
	static int fn(const struct req *r, long i, const struct tier_knob *k) \
	{                                                                      \
		(void)i, (void)k;                                              \
		RO_VALUE(uint64_t, (uint64_t)(expr));                         \
	}
U64_STAT(h_promoted_bytes, atomic_load(&tier_migrate_stats.promoted_bytes))
U64_STAT(h_promoted_blocks, atomic_load(&tier_migrate_stats.promoted_blocks))
U64_STAT(h_demoted_bytes, atomic_load(&tier_migrate_stats.demoted_bytes))
U64_STAT(h_demoted_blocks, atomic_load(&tier_migrate_stats.demoted_blocks))
U64_STAT(h_moved_pages, atomic_load(&tier_migrate_stats.moved_pages))
U64_STAT(h_failed_pages, atomic_load(&tier_migrate_stats.failed_pages))
U64_STAT(h_migrate_ns, atomic_load(&tier_migrate_stats.ns))
U64_STAT(h_bg_cpu_ns, atomic_load(&tier_bg_stats.cpu_ns))
U64_STAT(h_bg_periods, atomic_load(&tier_bg_stats.periods))
U64_STAT(h_bg_tid, atomic_load(&tier_bg_stats.tid))
U64_STAT(h_bg_kernel_ns, atomic_load(&tier_bg_stats.kernel_ns))
U64_STAT(h_bg_fault_ns, atomic_load(&tier_bg_stats.fault_ns))
U64_STAT(h_bg_cost_p50, tier_bg_quantile(tier_bg_stats.period_cost, 0.5))
U64_STAT(h_bg_cost_p99, tier_bg_quantile(tier_bg_stats.period_cost, 0.99))
U64_STAT(h_bg_steady_p99, tier_bg_quantile(tier_bg_stats.steady_cost, 0.99))
U64_STAT(h_bg_work_p50, tier_bg_quantile(tier_bg_stats.period_wall, 0.5))
U64_STAT(h_bg_work_p99, tier_bg_quantile(tier_bg_stats.period_wall, 0.99))
U64_STAT(h_mon_passes, atomic_load(&tier_monitor_stats.passes))
U64_STAT(h_mon_sweep_blocks, atomic_load(&tier_monitor_stats.sweep_blocks))
U64_STAT(h_mon_pass_periods, atomic_load(&tier_monitor_stats.last_pass_periods))
U64_STAT(h_mon_pass_blocks, atomic_load(&tier_monitor_stats.pass_blocks))
U64_STAT(h_mon_watched, atomic_load(&tier_monitor_stats.watched))
U64_STAT(h_mon_cold, atomic_load(&tier_monitor_stats.cold))
U64_STAT(h_mon_allowance, atomic_load(&tier_monitor_stats.allowance_ns))
U64_STAT(h_mon_spent, atomic_load(&tier_monitor_stats.spent_ns))
U64_STAT(h_mon_idle_periods, atomic_load(&tier_monitor_stats.idle_periods))
U64_STAT(h_re_served, atomic_load(&tier_sigpool.served))
U64_STAT(h_re_failed, atomic_load(&tier_sigpool.failed))
U64_STAT(h_re_pool_bytes, atomic_load(&tier_sigpool.in_use))
U64_STAT(h_re_deferred, atomic_load(&tier_reentry_stats.deferred_frees))
U64_STAT(h_re_refused, atomic_load(&tier_reentry_stats.refused))
U64_STAT(h_large_checks, atomic_load(&tier_large_stats.checks))
U64_STAT(h_large_purges, atomic_load(&tier_large_stats.purges))
U64_STAT(h_large_purged, atomic_load(&tier_large_stats.purged))
U64_STAT(h_large_held, atomic_load(&tier_large_stats.cached))
U64_STAT(h_large_moved, atomic_load(&tier_large_stats.moved))
U64_STAT(h_large_others, atomic_load(&tier_large_stats.others))

static int h_large_on(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	RO_VALUE(bool, tier_large_on());
}

static int h_bg_share(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	RO_VALUE(double, atomic_load(&tier_bg_stats.share));
}

static int h_bg_burst(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	RO_VALUE(bool, atomic_load(&tier_bg_stats.burst));
}

static int h_hit_share(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	RO_VALUE(double, (double)tier_balance_stats.hit_share);
}

U64_STAT(h_bg_bursts, atomic_load(&tier_bg_stats.bursts))
U64_STAT(h_bg_burst_ms, atomic_load(&tier_bg_stats.burst_ms))
U64_STAT(h_ph_split, atomic_load(&tier_ph_stats.split))
U64_STAT(h_ph_probing, atomic_load(&tier_ph_stats.probing))
U64_STAT(h_ph_probes, atomic_load(&tier_ph_stats.probes))
U64_STAT(h_ph_uniform, atomic_load(&tier_ph_stats.uniform))
U64_STAT(h_ph_pauses, atomic_load(&tier_ph_stats.pauses))
U64_STAT(h_ph_splits, atomic_load(&tier_ph_stats.splits))
U64_STAT(h_ph_costly, atomic_load(&tier_ph_stats.costly))
U64_STAT(h_mon_surprises, atomic_load(&tier_monitor_stats.surprises))
U64_STAT(h_mon_surprises_cold, atomic_load(&tier_monitor_stats.surprises_cold))
U64_STAT(h_mon_short_windows, atomic_load(&tier_monitor_stats.short_windows))
U64_STAT(h_ph_joins, atomic_load(&tier_ph_stats.joins))
U64_STAT(h_ph_thp, atomic_load(&tier_ph_stats.thp_splits))
U64_STAT(h_ph_promoted, atomic_load(&tier_ph_stats.pages_promoted))
U64_STAT(h_ph_demoted, atomic_load(&tier_ph_stats.pages_demoted))

static int h_mon_idle(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	RO_VALUE(bool, atomic_load(&tier_monitor_stats.idle));
}

/* stats.advise.*: bytes */
static int h_advise(const struct req *r, long i, const struct tier_knob *k)
{
	(void)k;
	RO_VALUE(size_t, (size_t)tier_advise_value((int)i));
}

/* tier.heat.of: write an address (uintptr_t), read the heat of its block
 * (float; accesses per page per period, as the policy ranks it). */
static int h_heat_of(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	if (!r->newp || r->newlen != sizeof(uintptr_t))
		return EINVAL;
	uintptr_t a = *(const uintptr_t *)r->newp;
	float heat;
	rcu_read_lock();
	struct tier_mapping *m = tier_registry_lookup(a);
	if (m)
		heat = m->blocks[(a - m->base) >> TIER_BLOCK_SHIFT].heat;
	rcu_read_unlock();
	if (!m)
		return ENOENT;
	return out(r, &heat, sizeof(heat));
}

/* tier.cxl.report: write a batch of hot-list records (text, newlen bytes). */
static int h_cxl_report(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	if (r->oldp || r->oldlenp)
		return EPERM; /* write-only */
	if (!r->newp || !r->newlen)
		return EINVAL;
	return tier_cxl_submit(r->newp, r->newlen);
}

/* stats.heat.cxl.<counter>: the table the stats print (stats.c) */
static int h_cxl_stat(const struct req *r, long i, const struct tier_knob *k)
{
	(void)k;
	RO_VALUE(uint64_t, tier_stats_cxl_counter((size_t)i));
}

static int h_bg_running(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	RO_VALUE(bool, atomic_load(&tier_bg_stats.running));
}

/* stats.heat.<source>.samples */
static int h_samples(const struct req *r, long i, const struct tier_knob *k)
{
	(void)k;
	RO_VALUE(uint64_t, atomic_load(&tier_heat_stats.samples[i]));
}

/* stats.heat.<source>.faults: faults the source made the program take */
static int h_faults(const struct req *r, long i, const struct tier_knob *k)
{
	(void)k;
	RO_VALUE(uint64_t, atomic_load(&tier_heat_stats.faults[i]));
}

/* stats.heat.<source>.fault_ns: what one such fault costs here */
static int h_fault_ns(const struct req *r, long i, const struct tier_knob *k)
{
	(void)k;
	RO_VALUE(uint64_t, atomic_load(&tier_heat_stats.fault_ns[i]));
}

/* ---- device awareness (issue 10): pinned and device-held memory, and
 * the interposed registration calls.  The block counts walk the registry:
 * read them when asked, not in a loop. */
static int h_device(const struct req *r, long i, const struct tier_knob *k)
{
	(void)k;
	int e = readonly(r);
	if (e)
		return e;
	struct tier_device_scan s;
	tier_migrate_scan(&s);
	size_t v[] = {s.held_blocks, s.held_bytes, s.pinned_blocks, s.pinned_bytes};
	return out(r, &v[i], sizeof(size_t));
}
static char held_reason[96];
static int h_device_reason(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i, (void)k;
	int e = readonly(r);
	if (e)
		return e;
	tier_ctl_lock();
	tier_migrate_held_reason(held_reason, sizeof(held_reason));
	tier_ctl_unlock();
	const char *v = held_reason;
	return out(r, &v, sizeof(v));
}
U64_STAT(h_migrate_retries, atomic_load(&tier_migrate_stats.retries))
U64_STAT(h_migrate_refused, atomic_load(&tier_migrate_stats.refused))
U64_STAT(h_migrate_abandoned, atomic_load(&tier_migrate_stats.abandoned))
U64_STAT(h_room_short, atomic_load(&tier_balance_stats.room_short))
U64_STAT(h_room_waits, atomic_load(&tier_balance_stats.room_waits))
U64_STAT(h_room_closed, atomic_load(&tier_balance_stats.room_closed))
U64_STAT(h_migrate_misplaced, atomic_load(&tier_migrate_stats.misplaced))
U64_STAT(h_device_marked, atomic_load(&tier_migrate_stats.held_marked))
U64_STAT(h_devreg_calls, atomic_load(&tier_devreg_stats.calls))
U64_STAT(h_devreg_pinned, atomic_load(&tier_devreg_stats.pinned))
U64_STAT(h_devreg_foreign, atomic_load(&tier_devreg_stats.foreign))
U64_STAT(h_devreg_untracked, atomic_load(&tier_devreg_stats.untracked))
U64_STAT(h_devreg_unpinned, atomic_load(&tier_devreg_stats.unpinned))
U64_STAT(h_devreg_missing, atomic_load(&tier_devreg_stats.missing))
U64_STAT(h_devreg_live, atomic_load(&tier_devreg_stats.live))

/* opt.<knob>: any knob, read-only.  tier.<knob>: run-time knobs, rw. */
static int h_knob(const struct req *r, long i, const struct tier_knob *k)
{
	(void)i;
	size_t size = tier_knob_size(k);
	char *field = (char *)&tier_settings + k->offset;
	if (k->type == TK_PATH || k->type == TK_NAME) { /* read as a string, like the other names */
		if (r->newp || r->newlen)
			return EPERM;
		const char *v = field;
		return out(r, &v, sizeof(v));
	}
	if (k->type == TK_SHARE) { /* read as text: "4294967296" or "50%" */
		static char text[64];
		if (r->newp || r->newlen)
			return EPERM;
		tier_ctl_lock();
		tier_knob_format(k, &tier_settings, text, sizeof(text));
		tier_ctl_unlock();
		const char *v = text;
		return out(r, &v, sizeof(v));
	}
	if ((r->newp || r->newlen) && !k->runtime)
		return EPERM;
	if (r->newp && r->newlen != size)
		return EINVAL;
	if (r->newp && tier_knob_check(k, r->newp))
		return EINVAL;
	/* a bool is one byte holding 0 or 1: any other byte stored would be
	 * undefined behaviour at every read (found by tests/fuzz, UBSan) */
	if (r->newp && k->type == TK_BOOL && *(const unsigned char *)r->newp > 1)
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
			tier_knob_written(k);
		}
	}
	tier_ctl_unlock();
	return e;
}

/* job.* and cgroup.*: the job this process shares its budget with */
static int h_job(const struct req *r, long i, const struct tier_knob *k)
{
	(void)k;
	int e = readonly(r);
	if (e)
		return e;
	struct tier_job_view v;
	tier_job_view(&v);
	static char cg[TIER_CGROUP_PATH], mems[64];
	switch (i) {
	case 0: { const char *s = v.state; return out(r, &s, sizeof(s)); }
	case 1: { const char *s = v.name; return out(r, &s, sizeof(s)); }
	case 2: { const char *s = v.ledger; return out(r, &s, sizeof(s)); }
	case 3: return out(r, &v.members, sizeof(v.members));
	case 4: { size_t z = (size_t)v.budget; return out(r, &z, sizeof(z)); }
	case 5: { size_t z = (size_t)v.share; return out(r, &z, sizeof(z)); }
	case 6: { size_t z = (size_t)v.limit; return out(r, &z, sizeof(z)); }
	case 7: { size_t z = (size_t)v.fast_bytes; return out(r, &z, sizeof(z)); }
	case 8: return out(r, &v.requests, sizeof(v.requests));
	case 9: {
		snprintf(cg, sizeof(cg), "%s", v.cg.found ? v.cg.path : "");
		const char *s = cg;
		return out(r, &s, sizeof(s));
	}
	case 10: return out(r, &v.cg.memory_max, sizeof(v.cg.memory_max));
	case 11: return out(r, &v.cg.memory_current, sizeof(v.cg.memory_current));
	case 12: {
		snprintf(mems, sizeof(mems), "%s", v.cg.mems);
		const char *s = mems;
		return out(r, &s, sizeof(s));
	}
	}
	return ENOENT;
}

struct node {
	const char *pattern; /* '#' stands for a tier index */
	handler fn;
	enum tier_ctl_type type;
	bool writable;
	const char *json;    /* stats.*: the JSON stats' path of the same value */
};

static const struct node nodes[] = {
	{"version", h_version, TC_STR, false, NULL},
	{"tier.count", h_count, TC_UNSIGNED, false, NULL},
	{"tier.active", h_active, TC_BOOL, false, NULL},
	{"tier.method", h_method, TC_STR, false, NULL},
	{"tier.off_reason", h_off_reason, TC_STR, false, NULL},
	{"tier.#.nodes", h_nodes, TC_STR, false, NULL},
	{"tier.#.nodemask", h_nodemask, TC_U64, false, NULL},
	{"tier.#.reason", h_reason, TC_STR, false, NULL},
	{"tier.#.kind", h_kind, TC_STR, false, NULL},
	{"tier.#.devices", h_devices, TC_STR, false, NULL},
	{"tier.#.arena", h_arena, TC_UNSIGNED, false, NULL},
	{"tier.#.resident", h_resident, TC_SIZE, false, NULL},
	{"tier.#.placed", h_placed, TC_SIZE, false, NULL},
	{"tier.#.committed", h_committed_tier, TC_SIZE, false, NULL},
	{"stats.extents", h_extents, TC_SIZE, false, "extents"},
	{"stats.mapped", h_mapped, TC_SIZE, false, "mapped"},
	{"stats.mappings", h_mappings, TC_SIZE, false, "mappings"},
	{"stats.committed", h_committed, TC_SIZE, false, "committed"},
	{"stats.metadata", h_metadata, TC_SIZE, false, "metadata.tiermalloc"},
	{"debug.check", h_check, TC_SIZE, false, NULL},
	{"tier.promote", h_promote, TC_MOVE, true, NULL},
	{"tier.demote", h_demote, TC_MOVE, true, NULL},
	{"tier.heat.sources", h_sources, TC_STR, false, NULL},
	{"stats.promoted_bytes", h_promoted_bytes, TC_U64, false, "migration.promoted_bytes"},
	{"stats.promoted_blocks", h_promoted_blocks, TC_U64, false, "migration.promoted_blocks"},
	{"stats.demoted_bytes", h_demoted_bytes, TC_U64, false, "migration.demoted_bytes"},
	{"stats.demoted_blocks", h_demoted_blocks, TC_U64, false, "migration.demoted_blocks"},
	{"stats.moved_pages", h_moved_pages, TC_U64, false, "migration.pages_on_target"},
	{"stats.failed_pages", h_failed_pages, TC_U64, false, "migration.failed_pages"},
	{"stats.migrate_ns", h_migrate_ns, TC_U64, false, "migration.ns"},
	{"stats.bg.cpu_ns", h_bg_cpu_ns, TC_U64, false, "background.cpu_ns"},
	{"stats.bg.periods", h_bg_periods, TC_U64, false, "background.periods"},
	{"stats.bg.tid", h_bg_tid, TC_U64, false, "background.tid"},
	{"stats.bg.running", h_bg_running, TC_BOOL, false, "background.running"},
	{"stats.bg.kernel_ns", h_bg_kernel_ns, TC_U64, false, "background.kernel_ns"},
	{"stats.bg.fault_ns", h_bg_fault_ns, TC_U64, false, "background.fault_ns"},
	{"stats.bg.share", h_bg_share, TC_DOUBLE, false, "background.recent_share"},
	{"stats.bg.period_cost_p50_ns", h_bg_cost_p50, TC_U64, false, "background.period_cost_p50_ns"},
	{"stats.bg.period_cost_p99_ns", h_bg_cost_p99, TC_U64, false, "background.period_cost_p99_ns"},
	{"stats.bg.steady_cost_p99_ns", h_bg_steady_p99, TC_U64, false, "background.steady_cost_p99_ns"},
	{"stats.bg.period_work_p50_ns", h_bg_work_p50, TC_U64, false, "background.period_work_p50_ns"},
	{"stats.bg.period_work_p99_ns", h_bg_work_p99, TC_U64, false, "background.period_work_p99_ns"},
	{"stats.bg.burst", h_bg_burst, TC_BOOL, false, "background.burst"},
	{"stats.bg.bursts", h_bg_bursts, TC_U64, false, "background.bursts"},
	{"stats.bg.burst_ms", h_bg_burst_ms, TC_U64, false, "background.burst_ms"},
	{"stats.monitor.hit_share", h_hit_share, TC_DOUBLE, false, "monitor.hit_share"},
	/* blocks looked at page by page (pageheat.h) */
	{"stats.pages.split", h_ph_split, TC_U64, false, "pages.split"},
	{"stats.pages.probing", h_ph_probing, TC_U64, false, "pages.probing"},
	{"stats.pages.probes", h_ph_probes, TC_U64, false, "pages.probes"},
	{"stats.pages.uniform", h_ph_uniform, TC_U64, false, "pages.uniform"},
	{"stats.pages.pauses", h_ph_pauses, TC_U64, false, "pages.pauses"},
	{"stats.pages.splits", h_ph_splits, TC_U64, false, "pages.splits"},
	{"stats.pages.costly", h_ph_costly, TC_U64, false, "pages.costly"},
	{"stats.pages.joins", h_ph_joins, TC_U64, false, "pages.joins"},
	{"stats.pages.thp_splits", h_ph_thp, TC_U64, false, "pages.thp_splits"},
	{"stats.pages.promoted", h_ph_promoted, TC_U64, false, "pages.promoted"},
	{"stats.pages.demoted", h_ph_demoted, TC_U64, false, "pages.demoted"},
	{"stats.monitor.passes", h_mon_passes, TC_U64, false, "monitor.passes"},
	{"stats.monitor.sweep_blocks", h_mon_sweep_blocks, TC_U64, false, "monitor.sweep_blocks"},
	{"stats.monitor.pass_periods", h_mon_pass_periods, TC_U64, false, "monitor.pass_periods"},
	{"stats.monitor.pass_blocks", h_mon_pass_blocks, TC_U64, false, "monitor.pass_blocks"},
	{"stats.monitor.watched", h_mon_watched, TC_U64, false, "monitor.watched"},
	{"stats.monitor.cold", h_mon_cold, TC_U64, false, "monitor.cold"},
	{"stats.monitor.allowance_ns", h_mon_allowance, TC_U64, false, "monitor.allowance_ns"},
	{"stats.monitor.spent_ns", h_mon_spent, TC_U64, false, "monitor.spent_ns"},
	{"stats.monitor.idle", h_mon_idle, TC_BOOL, false, "monitor.idle"},
	{"stats.monitor.idle_periods", h_mon_idle_periods, TC_U64, false, "monitor.idle_periods"},
	{"stats.monitor.surprises", h_mon_surprises, TC_U64, false, "monitor.surprises"},
	{"stats.monitor.surprises_cold", h_mon_surprises_cold, TC_U64, false, "monitor.surprises_cold"},
	{"stats.monitor.short_windows", h_mon_short_windows, TC_U64, false, "monitor.short_windows"},
	{"tier.heat.of", h_heat_of, TC_HEAT_OF, true, NULL},
	{"tier.cxl.report", h_cxl_report, TC_REPORT, true, NULL},
	/* device awareness (issue 10) */
	{"stats.migrate_retries", h_migrate_retries, TC_U64, false, "migration.retries"},
	/* the fast nodes' free room (room.h) */
	{"stats.migrate_refused", h_migrate_refused, TC_U64, false, "migration.refused"},
	{"stats.migrate_abandoned", h_migrate_abandoned, TC_U64, false, "migration.abandoned"},
	{"stats.monitor.room_short", h_room_short, TC_U64, false, "monitor.room_short"},
	{"stats.monitor.room_waits", h_room_waits, TC_U64, false, "monitor.room_waits"},
	{"stats.monitor.room_closed", h_room_closed, TC_U64, false, "monitor.room_closed"},
	{"stats.migrate_misplaced", h_migrate_misplaced, TC_U64, false, "migration.misplaced"},
	{"stats.device.held_marked", h_device_marked, TC_U64, false, "device.held_marked"},
	{"stats.device.held_reason", h_device_reason, TC_STR, false, "device.held_reason"},
	{"stats.device.reg_calls", h_devreg_calls, TC_U64, false, "device.reg_calls"},
	{"stats.device.reg_pinned", h_devreg_pinned, TC_U64, false, "device.reg_pinned"},
	{"stats.device.reg_foreign", h_devreg_foreign, TC_U64, false, "device.reg_foreign"},
	{"stats.device.reg_untracked", h_devreg_untracked, TC_U64, false, "device.reg_untracked"},
	{"stats.device.reg_unpinned", h_devreg_unpinned, TC_U64, false, "device.reg_unpinned"},
	{"stats.device.reg_missing", h_devreg_missing, TC_U64, false, "device.reg_missing"},
	{"stats.device.reg_live", h_devreg_live, TC_U64, false, "device.reg_live"},
	/* re-entrant calls (signal handlers inside the allocator) */
	{"stats.reentrant.served", h_re_served, TC_U64, false, "reentrant.served"},
	{"stats.reentrant.failed", h_re_failed, TC_U64, false, "reentrant.failed"},
	{"stats.reentrant.pool_bytes", h_re_pool_bytes, TC_U64, false, "reentrant.pool_bytes"},
	{"stats.reentrant.deferred_frees", h_re_deferred, TC_U64, false, "reentrant.deferred_frees"},
	{"stats.reentrant.refused", h_re_refused, TC_U64, false, "reentrant.refused"},
	/* the large-buffer cache (large.c) */
	{"stats.large.on", h_large_on, TC_BOOL, false, "large_cache.on"},
	{"stats.large.checks", h_large_checks, TC_U64, false, "large_cache.checks"},
	{"stats.large.purges", h_large_purges, TC_U64, false, "large_cache.purges"},
	{"stats.large.purged", h_large_purged, TC_U64, false, "large_cache.purged"},
	{"stats.large.held", h_large_held, TC_U64, false, "large_cache.held"},
	{"stats.large.moved", h_large_moved, TC_U64, false, "large_cache.moved"},
	{"stats.large.others", h_large_others, TC_U64, false, "large_cache.others"},
};


static enum tier_ctl_type knob_ctl_type(const struct tier_knob *k)
{
	switch (k->type) {
	case TK_SIZE: return TC_SIZE;
	case TK_BOOL: return TC_BOOL;
	case TK_UINT: case TK_STATS: case TK_SOURCES: return TC_UNSIGNED;
	case TK_DOUBLE: return TC_DOUBLE;
	case TK_NODES: return TC_U64;
	case TK_PATH: case TK_NAME: case TK_SHARE: return TC_STR;
	}
	return TC_U64;
}

/* Names whose handler serves several values, by index. */
static const struct {
	struct node n;
	long arg;
} nodes_at[] = {
	{{"job.state", h_job, TC_STR, false, NULL}, 0},
	{{"job.name", h_job, TC_STR, false, NULL}, 1},
	{{"job.ledger", h_job, TC_STR, false, NULL}, 2},
	{{"job.members", h_job, TC_UNSIGNED, false, NULL}, 3},
	{{"job.fast_limit", h_job, TC_SIZE, false, NULL}, 4},
	{{"job.share", h_job, TC_SIZE, false, NULL}, 5},
	{{"job.limit", h_job, TC_SIZE, false, NULL}, 6},
	{{"job.fast_bytes", h_job, TC_SIZE, false, NULL}, 7},
	{{"job.requests", h_job, TC_U64, false, NULL}, 8},
	{{"job.cgroup", h_job, TC_STR, false, NULL}, 9},
	{{"cgroup.memory_max", h_job, TC_U64, false, NULL}, 10},
	{{"cgroup.memory_current", h_job, TC_U64, false, NULL}, 11},
	{{"cgroup.mems", h_job, TC_STR, false, NULL}, 12},
	{{"stats.device.held_blocks", h_device, TC_SIZE, false, "device.held_blocks"}, 0},
	{{"stats.device.held_bytes", h_device, TC_SIZE, false, "device.held_bytes"}, 1},
	{{"stats.device.pinned_blocks", h_device, TC_SIZE, false, "device.pinned_blocks"}, 2},
	{{"stats.device.pinned_bytes", h_device, TC_SIZE, false, "device.pinned_bytes"}, 3},
};

/* One name as the walk hands it out. */
struct ref {
	handler fn;
	long idx;                      /* a tier, source, counter or -1 */
	enum tier_ctl_type type;
	bool writable;
	const struct tier_knob *knob;  /* opt.<knob>, tier.<knob> */
	const char *json;              /* the stats' JSON path, or NULL */
};

/* stats.heat.<source>.<leaf> */
static const struct {
	const char *leaf;
	handler fn;
} per_source[] = {{"samples", h_samples}, {"faults", h_faults}, {"fault_ns", h_fault_ns}};

/* Every name tier_mallctl answers, once: tier_mallctl, tier_ctl_type and
 * tier_ctl_names (ctl --list) all walk this, so they cannot disagree.
 * Stops at the first visit that returns nonzero, and returns that. */
static int walk(int (*visit)(void *ctx, const char *name, const struct ref *ref), void *ctx)
{
	char name[96], json[96];
	int e;
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		const struct node *n = &nodes[i];
		struct ref ref = {n->fn, -1, n->type, n->writable, NULL, n->json};
		const char *hash = strchr(n->pattern, '#');
		if (!hash) {
			if ((e = visit(ctx, n->pattern, &ref)))
				return e;
			continue;
		}
		for (int t = 0; t < tier_topo.ntiers; t++) {
			snprintf(name, sizeof(name), "%.*s%d%s", (int)(hash - n->pattern), n->pattern, t, hash + 1);
			ref.idx = t;
			if ((e = visit(ctx, name, &ref)))
				return e;
		}
	}
	for (size_t i = 0; i < sizeof(nodes_at) / sizeof(nodes_at[0]); i++) {
		const struct node *n = &nodes_at[i].n;
		struct ref ref = {n->fn, nodes_at[i].arg, n->type, n->writable, NULL, n->json};
		if ((e = visit(ctx, n->pattern, &ref)))
			return e;
	}
	for (unsigned src = 0; src < TIER_SRC_COUNT; src++)
		for (size_t k = 0; k < sizeof(per_source) / sizeof(*per_source); k++) {
			snprintf(name, sizeof(name), "stats.heat.%s.%s", tier_source_name(src), per_source[k].leaf);
			snprintf(json, sizeof(json), "heat.%s.%s", per_source[k].leaf, tier_source_name(src));
			struct ref ref = {per_source[k].fn, (long)src, TC_U64, false, NULL, json};
			if ((e = visit(ctx, name, &ref)))
				return e;
		}
	for (size_t c = 0; c < tier_stats_cxl_count; c++) {
		snprintf(name, sizeof(name), "stats.heat.cxl.%s", tier_stats_cxl_name(c));
		snprintf(json, sizeof(json), "heat.cxl.%s", tier_stats_cxl_name(c));
		struct ref ref = {h_cxl_stat, (long)c, TC_U64, false, NULL, json};
		if ((e = visit(ctx, name, &ref)))
			return e;
	}
	for (int a = 0; a < TIER_ADVISE_VALUES; a++) {
		snprintf(name, sizeof(name), "stats.advise.%s", tier_advise_names[a]);
		snprintf(json, sizeof(json), "advise.%s", tier_advise_names[a]);
		struct ref ref = {h_advise, a, TC_SIZE, false, NULL, json};
		if ((e = visit(ctx, name, &ref)))
			return e;
	}
	for (size_t k = 0; k < tier_nknobs; k++) {
		const struct tier_knob *kn = &tier_knobs[k];
		snprintf(json, sizeof(json), "settings.%s", kn->name);
		struct ref ref = {h_knob, -1, knob_ctl_type(kn), false, kn, json};
		snprintf(name, sizeof(name), "opt.%s", kn->name);
		if ((e = visit(ctx, name, &ref)))
			return e;
		if (kn->runtime) {
			snprintf(name, sizeof(name), "tier.%s", kn->name);
			ref.writable = true;
			if ((e = visit(ctx, name, &ref)))
				return e;
		}
	}
	return 0;
}

/* Find one name: the walk stops at it. */
struct find {
	const char *name;
	struct ref ref;
	char json[96];
};

static int find_one(void *ctx, const char *name, const struct ref *ref)
{
	struct find *f = ctx;
	if (strcmp(name, f->name))
		return 0;
	f->ref = *ref;
	if (ref->json)
		snprintf(f->json, sizeof(f->json), "%s", ref->json);
	f->ref.json = ref->json ? f->json : NULL;
	return 1;
}

static bool find(const char *name, struct find *f)
{
	f->name = name;
	return name && walk(find_one, f) == 1;
}

struct names {
	void (*cb)(void *ctx, const char *name, enum tier_ctl_type type, bool writable, const char *json);
	void *ctx;
	int n;
};

static int name_one(void *ctx, const char *name, const struct ref *ref)
{
	struct names *l = ctx;
	l->cb(l->ctx, name, ref->type, ref->writable, !strncmp(name, "stats.", 6) ? ref->json : NULL);
	l->n++;
	return 0;
}

int tier_ctl_names(void (*cb)(void *ctx, const char *name, enum tier_ctl_type type, bool writable,
			      const char *json),
		   void *ctx)
{
	tier_boot();
	struct names l = {cb, ctx, 0};
	walk(name_one, &l);
	return l.n;
}

int tier_ctl_type(const char *name, enum tier_ctl_type *type, bool *writable,
		  const struct tier_knob **knob)
{
	tier_boot();
	struct find f;
	*knob = NULL;
	if (!find(name, &f))
		return ENOENT;
	*type = f.ref.type;
	*writable = f.ref.writable;
	*knob = f.ref.knob;
	return 0;
}

int tier_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
{
	tier_boot();
	struct find f;
	if (!find(name, &f))
		return ENOENT;
	/* opt.<knob>: the same value as tier.<knob>, read-only */
	if (f.ref.knob && !f.ref.writable && (newp || newlen))
		return EPERM;
	struct req r = {oldp, oldlenp, newp, newlen};
	return f.ref.fn(&r, f.ref.idx, f.ref.knob);
}
