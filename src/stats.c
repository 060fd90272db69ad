/* tier_stats_print: the state of every module, as text or JSON.  Numbers
 * are gathered first (the resident scan holds rcu_read_lock); write_cb is
 * called afterwards with no lock held, so it may allocate. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "advise.h"
#include "arena.h"
#include "bg.h"
#include "emitter.h"
#include "heat.h"
#include "heat_cxl.h"
#include "large.h"
#include "migrate.h"
#include "monitor.h"
#include "pageheat.h"
#include "pin.h"
#include "tiering.h"
#include "knobs.h"
#include "topology.h"
#include "job.h"
#include "place.h"
#include "pool.h"
#include "registry.h"
#include "resident.h"
#include "stats.h"
#include "reentry.h"
#include "sigpool.h"

/* Where stats go without a callback: a duplicate of stderr made at start-up
 * when stats_print is on, because programs like coreutils close fd 2 in
 * their own exit handlers, which run before ours. */
int tier_stats_fd = 2;

struct out {
	void (*cb)(void *, const char *);
	void *opaque;
	char buf[2048];
	size_t n;
};

static void flush(struct out *o)
{
	if (!o->n)
		return;
	o->buf[o->n] = '\0';
	if (o->cb) {
		o->cb(o->opaque, o->buf);
	} else {
		for (size_t off = 0; off < o->n;) {
			ssize_t w = write(tier_stats_fd, o->buf + off, o->n - off);
			if (w <= 0)
				break;
			off += (size_t)w;
		}
	}
	o->n = 0;
}

static void out_write(void *ctx, const char *str)
{
	struct out *o = ctx;
	size_t len = strlen(str);
	while (len) {
		if (o->n + 1 >= sizeof(o->buf))
			flush(o);
		size_t room = sizeof(o->buf) - 1 - o->n, k = len < room ? len : room;
		memcpy(o->buf + o->n, str, k);
		o->n += k;
		str += k;
		len -= k;
	}
}

struct snap {
	struct tier_resident res;
	int res_err;
	bool active;
	size_t fast_limit, extents, mappings, mapped, committed, unknown, pool, meta;
	size_t used[TIER_MAX_TIERS], tcommitted[TIER_MAX_TIERS];
	uint64_t placed[TIER_MAX_TIERS], spilled, bind_calls, bind_fail;
	int bind_errno;
	char sources[768];
	uint64_t samples[TIER_SRC_COUNT], collects[TIER_SRC_COUNT], collect_ns[TIER_SRC_COUNT];
	uint64_t adjusts[TIER_SRC_COUNT];
	int level[TIER_SRC_COUNT];
	struct {
		uint64_t promoted_bytes, promoted_blocks, demoted_bytes, demoted_blocks, moved_pages,
			failed_pages, ns, audited, misplaced, refused, abandoned;
	} mig;
	bool bg_running;
	uint64_t bg_periods, bg_cpu_ns, bg_kernel_ns, bg_fault_ns;
	double bg_share, bg_recent;
	uint64_t cost_p50, cost_p99, steady_p99, wall_p50, wall_p99;
	uint64_t faults[TIER_SRC_COUNT], src_fault_ns[TIER_SRC_COUNT], bg_tid;
	struct {
		uint32_t watched, cold;
		uint64_t allowance_ns, spent_ns;
		uint64_t pass_periods, pass_blocks, passes, sweep_blocks, idle_periods, surprises, surprises_cold, short_windows;
		bool idle;
		double floor[TIER_SRC_COUNT]; /* double: the emitter reads TIER_EV_DOUBLE */
		float cut, regret;
		uint64_t regrets, retests, skipped;
	} mon;
	/* device awareness (issue 10) */
	struct tier_device_scan dev;
	char held_reason[96];
	uint64_t retries, held_marked, reg[7];
};

static void gather(struct snap *s)
{
	memset(s, 0, sizeof(*s));
	s->res_err = tier_resident_scan(&s->res);
	s->active = atomic_load(&tier_place.active);
	s->fast_limit = atomic_load(&tier_place.fast_limit);
	s->extents = atomic_load(&tier_reg_stats.extents);
	s->mappings = atomic_load(&tier_reg_stats.mappings);
	s->mapped = atomic_load(&tier_reg_stats.mapped);
	s->committed = atomic_load(&tier_reg_stats.committed);
	s->unknown = atomic_load(&tier_reg_stats.unknown_calls);
	s->pool = tier_pool_mapped();
	s->meta = atomic_load(&tier_place_stats.meta_committed);
	for (int t = 0; t < TIER_MAX_TIERS; t++) {
		s->used[t] = atomic_load(&tier_place_stats.used[t]);
		s->tcommitted[t] = atomic_load(&tier_place_stats.committed[t]);
		s->placed[t] = atomic_load(&tier_place_stats.placed[t]);
	}
	s->spilled = atomic_load(&tier_place_stats.spilled);
	s->bind_calls = atomic_load(&tier_place_stats.bind_calls);
	s->bind_fail = atomic_load(&tier_place_stats.bind_failures);
	s->bind_errno = atomic_load(&tier_place_stats.last_bind_errno);
	tier_heat_describe(s->sources, sizeof(s->sources));
	for (int i = 0; i < TIER_SRC_COUNT; i++) {
		s->samples[i] = atomic_load(&tier_heat_stats.samples[i]);
		s->collects[i] = atomic_load(&tier_heat_stats.collects[i]);
		s->collect_ns[i] = atomic_load(&tier_heat_stats.collect_ns[i]);
		s->adjusts[i] = atomic_load(&tier_heat_stats.adjusts[i]);
		s->level[i] = atomic_load(&tier_heat_stats.level[i]);
	}
	s->mig.promoted_bytes = atomic_load(&tier_migrate_stats.promoted_bytes);
	s->mig.promoted_blocks = atomic_load(&tier_migrate_stats.promoted_blocks);
	s->mig.demoted_bytes = atomic_load(&tier_migrate_stats.demoted_bytes);
	s->mig.demoted_blocks = atomic_load(&tier_migrate_stats.demoted_blocks);
	s->mig.moved_pages = atomic_load(&tier_migrate_stats.moved_pages);
	s->mig.failed_pages = atomic_load(&tier_migrate_stats.failed_pages);
	s->mig.ns = atomic_load(&tier_migrate_stats.ns);
	s->mig.audited = atomic_load(&tier_migrate_stats.audited);
	s->mig.misplaced = atomic_load(&tier_migrate_stats.misplaced);
	s->mig.refused = atomic_load(&tier_migrate_stats.refused);
	s->mig.abandoned = atomic_load(&tier_migrate_stats.abandoned);
	s->bg_running = atomic_load(&tier_bg_stats.running);
	s->bg_periods = atomic_load(&tier_bg_stats.periods);
	s->bg_cpu_ns = atomic_load(&tier_bg_stats.cpu_ns);
	s->bg_kernel_ns = atomic_load(&tier_bg_stats.kernel_ns);
	s->bg_fault_ns = atomic_load(&tier_bg_stats.fault_ns);
	uint64_t t = tier_clock_ns(CLOCK_MONOTONIC), t0 = atomic_load(&tier_bg_stats.started_ns);
	s->bg_share = t0 && t > t0 ? (double)(s->bg_cpu_ns + s->bg_kernel_ns + s->bg_fault_ns) / (double)(t - t0)
				   : 0.0;
	s->bg_recent = atomic_load(&tier_bg_stats.share);
	s->cost_p50 = tier_bg_quantile(tier_bg_stats.period_cost, 0.5);
	s->cost_p99 = tier_bg_quantile(tier_bg_stats.period_cost, 0.99);
	s->steady_p99 = tier_bg_quantile(tier_bg_stats.steady_cost, 0.99);
	s->wall_p50 = tier_bg_quantile(tier_bg_stats.period_wall, 0.5);
	s->wall_p99 = tier_bg_quantile(tier_bg_stats.period_wall, 0.99);
	s->bg_tid = (uint64_t)atomic_load(&tier_bg_stats.tid);
	for (int i = 0; i < TIER_SRC_COUNT; i++) {
		s->faults[i] = atomic_load(&tier_heat_stats.faults[i]);
		s->src_fault_ns[i] = atomic_load(&tier_heat_stats.fault_ns[i]);
	}
	s->mon.watched = atomic_load(&tier_monitor_stats.watched);
	s->mon.cold = atomic_load(&tier_monitor_stats.cold);
	s->mon.allowance_ns = atomic_load(&tier_monitor_stats.allowance_ns);
	s->mon.spent_ns = atomic_load(&tier_monitor_stats.spent_ns);
	s->mon.pass_periods = atomic_load(&tier_monitor_stats.last_pass_periods);
	s->mon.pass_blocks = atomic_load(&tier_monitor_stats.pass_blocks);
	s->mon.passes = atomic_load(&tier_monitor_stats.passes);
	s->mon.sweep_blocks = atomic_load(&tier_monitor_stats.sweep_blocks);
	s->mon.idle_periods = atomic_load(&tier_monitor_stats.idle_periods);
	s->mon.surprises = atomic_load(&tier_monitor_stats.surprises);
	s->mon.surprises_cold = atomic_load(&tier_monitor_stats.surprises_cold);
	s->mon.short_windows = atomic_load(&tier_monitor_stats.short_windows);
	s->mon.idle = atomic_load(&tier_monitor_stats.idle);
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		s->mon.floor[i] = tier_monitor_stats.floor[i];
	s->mon.cut = tier_balance_stats.cut;
	s->mon.regret = tier_balance_stats.regret;
	s->mon.regrets = atomic_load(&tier_balance_stats.regrets);
	s->mon.retests = atomic_load(&tier_balance_stats.retests);
	s->mon.skipped = atomic_load(&tier_balance_stats.skipped);
	/* device awareness (issue 10) */
	tier_migrate_scan(&s->dev);
	tier_migrate_held_reason(s->held_reason, sizeof(s->held_reason));
	s->retries = atomic_load(&tier_migrate_stats.retries);
	s->held_marked = atomic_load(&tier_migrate_stats.held_marked);
	s->reg[0] = atomic_load(&tier_devreg_stats.calls);
	s->reg[1] = atomic_load(&tier_devreg_stats.pinned);
	s->reg[2] = atomic_load(&tier_devreg_stats.foreign);
	s->reg[3] = atomic_load(&tier_devreg_stats.untracked);
	s->reg[4] = atomic_load(&tier_devreg_stats.unpinned);
	s->reg[5] = atomic_load(&tier_devreg_stats.missing);
	s->reg[6] = atomic_load(&tier_devreg_stats.live);
}

static const char *off_reason(const struct snap *s)
{
	if (s->active)
		return "";
	return tier_topo.ntiers < 2 ? tier_topo.why_single : "disabled (tier.enabled is false)";
}

/* The CXL hot-list counters, named once for the stats and tier_mallctl
 * (stats.heat.cxl.<name>). */
#define CXL_COUNTER(field, text) {#field, text, offsetof(struct tier_cxl_stats, field)}
static const struct {
	const char *json, *text;
	size_t off;
} cxl_counters[] = {
	CXL_COUNTER(bytes, "bytes read"),
	CXL_COUNTER(accepted, "records accepted"),
	CXL_COUNTER(rejected_malformed, "rejected malformed"),
	CXL_COUNTER(rejected_version, "rejected version"),
	CXL_COUNTER(rejected_range, "rejected out of range"),
	CXL_COUNTER(rejected_foreign, "rejected foreign"),
	CXL_COUNTER(rejected_duplicate, "rejected duplicate"),
	CXL_COUNTER(rejected_dpa, "rejected dpa (no region maps it)"),
	CXL_COUNTER(rejected_interleave, "rejected dpa (refused interleave)"),
	CXL_COUNTER(capped_pages, "pages given no heat by the rule"),
	CXL_COUNTER(dropped_bytes, "bytes dropped"),
	CXL_COUNTER(map_reads, "map block reads"),
	CXL_COUNTER(map_checks, "map checks"),
	CXL_COUNTER(map_stale, "map stale pages"),
	CXL_COUNTER(map_full, "map blocks left out"),
	CXL_COUNTER(map_pages, "map pages"),
	CXL_COUNTER(hits_dropped, "hits dropped"),
	CXL_COUNTER(resolves, "resolves"),
	CXL_COUNTER(resolve_ns, "resolve ns"),
	CXL_COUNTER(region_reads, "region reads"),
	CXL_COUNTER(region_changes, "region changes"),
	CXL_COUNTER(regions_refused, "regions refused"),
};

const size_t tier_stats_cxl_count = sizeof(cxl_counters) / sizeof(*cxl_counters);

const char *tier_stats_cxl_name(size_t i)
{
	return cxl_counters[i].json;
}

uint64_t tier_stats_cxl_counter(size_t i)
{
	return atomic_load((_Atomic uint64_t *)((char *)&tier_cxl_stats + cxl_counters[i].off));
}

/* The job and cgroup (job.c). */
/* Blocks looked at page by page (pageheat.h). */
static void walk_pages(struct tier_emitter *e)
{
	tier_emit_dict_begin(e, "pages", "pages");
	tier_emit_u64(e, "split", "blocks split", atomic_load(&tier_ph_stats.split));
	tier_emit_u64(e, "probing", "probing", atomic_load(&tier_ph_stats.probing));
	tier_emit_u64(e, "probes", "probes", atomic_load(&tier_ph_stats.probes));
	tier_emit_u64(e, "uniform", "found even", atomic_load(&tier_ph_stats.uniform));
	tier_emit_u64(e, "pauses", "probing paused", atomic_load(&tier_ph_stats.pauses));
	tier_emit_u64(e, "splits", "splits", atomic_load(&tier_ph_stats.splits));
	tier_emit_u64(e, "costly", "let go (too costly)", atomic_load(&tier_ph_stats.costly));
	tier_emit_u64(e, "joins", "joins", atomic_load(&tier_ph_stats.joins));
	tier_emit_u64(e, "thp_splits", "huge pages split", atomic_load(&tier_ph_stats.thp_splits));
	tier_emit_u64(e, "promoted", "pages promoted", atomic_load(&tier_ph_stats.pages_promoted));
	tier_emit_u64(e, "demoted", "pages demoted", atomic_load(&tier_ph_stats.pages_demoted));
	tier_emit_dict_end(e);
}

static void walk_job(struct tier_emitter *e)
{
	struct tier_job_view v;
	tier_job_view(&v);
	tier_emit_dict_begin(e, "job", NULL);
	tier_emit_str(e, "state", NULL, v.state);
	tier_emit_str(e, "name", NULL, v.name);
	tier_emit_str(e, "ledger", NULL, v.ledger);
	tier_emit_u64(e, "members", NULL, v.members);
	tier_emit_u64(e, "fast_limit", "budget", v.budget);
	tier_emit_u64(e, "share", "this process's share", v.share);
	tier_emit_u64(e, "limit", "fast_limit applied", v.limit);
	tier_emit_u64(e, "fast_bytes", "members' fast bytes", v.fast_bytes);
	tier_emit_u64(e, "requests", NULL, v.requests);
	tier_emit_str(e, "cgroup", NULL, v.cg.found ? v.cg.path : "");
	tier_emit_u64(e, "memory_max", "memory.max", v.cg.memory_max);
	tier_emit_u64(e, "memory_current", "memory.current", v.cg.memory_current);
	tier_emit_str(e, "mems", "cpuset.mems.effective", v.cg.mems);
	tier_emit_dict_end(e);
}

/* One value per source: {"perf":n,"damon":n,...} */
static void per_source(struct tier_emitter *e, const char *key, const char *text, enum tier_emit_type type,
		       const void *vals, size_t stride)
{
	tier_emit_dict_begin(e, key, text);
	for (unsigned i = 0; i < TIER_SRC_COUNT; i++)
		tier_emit_kv(e, tier_source_name(i), NULL, type, (const char *)vals + i * stride);
	tier_emit_dict_end(e);
}

/* Every value, once: the text stats, the JSON stats and the names with
 * their JSON paths all come from this walk. */
static void walk(struct tier_emitter *e, const struct snap *s)
{
	const struct tier_topology *t = &tier_topo;
	tier_emit_begin(e);
	tier_emit_str(e, "version", NULL, TIERMALLOC_VERSION);
	tier_emit_dict_begin(e, "tiering", NULL);
	tier_emit_bool(e, "active", NULL, s->active);
	tier_emit_str(e, "method", NULL, t->method);
	tier_emit_str(e, "off_reason", NULL, off_reason(s));
	tier_emit_dict_end(e);
	tier_emit_u64(e, "fast_limit", NULL, s->fast_limit);
	tier_emit_array_begin(e, "tiers", NULL);
	for (int i = 0; i < t->ntiers; i++) {
		tier_emit_dict_begin(e, NULL, NULL);
		tier_emit_int(e, "index", "tier", i);
		tier_emit_str(e, "nodes", NULL, t->tier[i].nodes_str);
		tier_emit_u64(e, "arena", NULL, tier_arena_of_tier(i));
		tier_emit_u64(e, "resident", "resident (kernel)", s->res.tier[i]);
		tier_emit_u64(e, "placed", "placed blocks", s->used[i]);
		tier_emit_u64(e, "committed", NULL, s->tcommitted[i]);
		tier_emit_u64(e, "blocks_placed", "blocks placed", s->placed[i]);
		tier_emit_str(e, "kind", NULL, t->tier[i].kind);
		tier_emit_str(e, "devices", NULL, t->tier[i].devices);
		tier_emit_str(e, "reason", "why", t->tier[i].reason);
		tier_emit_dict_end(e);
	}
	tier_emit_array_end(e);
	tier_emit_str(e, "resident_error", "resident query error", s->res_err ? strerror(s->res_err) : "");
	tier_emit_u64(e, "resident_other", "resident outside the tiers", s->res.other);
	tier_emit_u64(e, "extents", NULL, s->extents);
	tier_emit_u64(e, "mappings", NULL, s->mappings);
	tier_emit_u64(e, "mapped", NULL, s->mapped);
	tier_emit_u64(e, "committed", NULL, s->committed);
	tier_emit_dict_begin(e, "hooks", NULL);
	tier_emit_u64(e, "automatic_arenas", "automatic arenas", tier_arenas_hooked());
	tier_emit_u64(e, "late_arenas", "hooked late", tier_arenas_late());
	tier_emit_bool(e, "huge_arena", "huge arena hooked", tier_arena_huge_hooked());
	tier_emit_u64(e, "unknown_extent_calls", "calls on extents mapped before the hooks", s->unknown);
	tier_emit_u64(e, "absorbed", "pre-hook memory set aside", tier_arena_absorbed());
	tier_emit_dict_end(e);
	tier_emit_dict_begin(e, "large_cache", "large cache");
	tier_emit_bool(e, "on", NULL, tier_large_on());
	tier_emit_u64(e, "checks", "huge allocations checked", atomic_load(&tier_large_stats.checks));
	tier_emit_u64(e, "purges", "emptied", atomic_load(&tier_large_stats.purges));
	tier_emit_u64(e, "purged", "bytes emptied", atomic_load(&tier_large_stats.purged));
	tier_emit_u64(e, "held", "held at the last check", atomic_load(&tier_large_stats.cached));
	tier_emit_u64(e, "moved", "bytes moved into new buffers", atomic_load(&tier_large_stats.moved));
	tier_emit_u64(e, "others", "other arenas purged", atomic_load(&tier_large_stats.others));
	tier_emit_dict_end(e);
	tier_emit_dict_begin(e, "placement", NULL);
	tier_emit_u64(e, "spilled_blocks", "spilled to a slower tier", s->spilled);
	tier_emit_u64(e, "mbind_calls", "mbind calls", s->bind_calls);
	tier_emit_u64(e, "mbind_failures", "failed", s->bind_fail);
	tier_emit_int(e, "last_mbind_errno", "last errno", s->bind_errno);
	tier_emit_dict_end(e);
	tier_emit_dict_begin(e, "heat", NULL);
	tier_emit_str(e, "sources", NULL, s->sources);
	per_source(e, "samples", NULL, TIER_EV_U64, s->samples, sizeof(s->samples[0]));
	per_source(e, "collects", "reads", TIER_EV_U64, s->collects, sizeof(s->collects[0]));
	per_source(e, "collect_ns", "wall ns", TIER_EV_U64, s->collect_ns, sizeof(s->collect_ns[0]));
	per_source(e, "levels", "sampling level", TIER_EV_INT, s->level, sizeof(s->level[0]));
	per_source(e, "faults", "faults caused", TIER_EV_U64, s->faults, sizeof(s->faults[0]));
	per_source(e, "fault_ns", "ns per fault", TIER_EV_U64, s->src_fault_ns, sizeof(s->src_fault_ns[0]));
	tier_emit_dict_begin(e, "cxl", "cxl hot lists");
	for (size_t i = 0; i < tier_stats_cxl_count; i++)
		tier_emit_u64(e, cxl_counters[i].json, cxl_counters[i].text, tier_stats_cxl_counter(i));
	tier_emit_dict_end(e);
	tier_emit_dict_end(e);
	tier_emit_dict_begin(e, "migration", NULL);
	tier_emit_u64(e, "promoted_bytes", "promoted bytes", s->mig.promoted_bytes);
	tier_emit_u64(e, "promoted_blocks", "in blocks", s->mig.promoted_blocks);
	tier_emit_u64(e, "demoted_bytes", "demoted bytes", s->mig.demoted_bytes);
	tier_emit_u64(e, "demoted_blocks", "in blocks", s->mig.demoted_blocks);
	tier_emit_u64(e, "pages_on_target", "pages on target", s->mig.moved_pages);
	tier_emit_u64(e, "failed_pages", "failed", s->mig.failed_pages);
	tier_emit_u64(e, "ns", "CPU ns", s->mig.ns);
	tier_emit_u64(e, "retries", NULL, s->retries);
	tier_emit_u64(e, "refused", "refused by a full node", s->mig.refused);
	tier_emit_u64(e, "abandoned", "given up", s->mig.abandoned);
	tier_emit_u64(e, "audited", "blocks audited", s->mig.audited);
	tier_emit_u64(e, "misplaced", "found with pages on another tier", s->mig.misplaced);
	tier_emit_dict_end(e);
	tier_emit_dict_begin(e, "background", "background thread");
	tier_emit_bool(e, "running", NULL, s->bg_running);
	tier_emit_u64(e, "periods", NULL, s->bg_periods);
	tier_emit_u64(e, "tid", NULL, s->bg_tid);
	tier_emit_u64(e, "cpu_ns", "CPU ns (this thread and the sources' threads)", s->bg_cpu_ns);
	tier_emit_u64(e, "kernel_ns", "kdamond share ns", s->bg_kernel_ns);
	tier_emit_u64(e, "fault_ns", "ns in the program's threads for write faults", s->bg_fault_ns);
	tier_emit_u64(e, "faults", "write faults caused", s->faults[TIER_SRC_PAGEMAP]);
	tier_emit_u64(e, "one_fault_ns", "ns each", s->src_fault_ns[TIER_SRC_PAGEMAP]);
	tier_emit_double(e, "core_share", "share of a core since start", s->bg_share);
	tier_emit_double(e, "recent_share", "lately", s->bg_recent);
	tier_emit_double(e, "budget", "budget (bg_cpu)", tier_settings.bg_cpu);
	tier_emit_double(e, "burst_budget", "in bursts (bg_cpu_burst)", tier_settings.bg_cpu_burst);
	tier_emit_bool(e, "burst", "in a burst now", atomic_load(&tier_bg_stats.burst));
	tier_emit_u64(e, "bursts", "bursts", atomic_load(&tier_bg_stats.bursts));
	tier_emit_u64(e, "burst_ms", "ms in bursts", atomic_load(&tier_bg_stats.burst_ms));
	tier_emit_u64(e, "period_cost_p50_ns", "per period: cost p50 ns", s->cost_p50);
	tier_emit_u64(e, "period_cost_p99_ns", "p99", s->cost_p99);
	tier_emit_u64(e, "steady_cost_p99_ns", "p99 outside bursts", s->steady_p99);
	tier_emit_u64(e, "period_work_p50_ns", "work p50 ns", s->wall_p50);
	tier_emit_u64(e, "period_work_p99_ns", "p99", s->wall_p99);
	tier_emit_dict_end(e);
	tier_emit_dict_begin(e, "monitor", NULL);
	tier_emit_bool(e, "idle", "cheap watch (nothing could move)", s->mon.idle);
	tier_emit_u64(e, "idle_periods", "periods in it", s->mon.idle_periods);
	tier_emit_u64(e, "surprises", "surprises (change cues)", s->mon.surprises);
	tier_emit_u64(e, "surprises_cold", "of them fast blocks gone cold", s->mon.surprises_cold);
	tier_emit_u64(e, "short_windows", "short windows", s->mon.short_windows);
	tier_emit_u64(e, "watched", "watched blocks", s->mon.watched);
	tier_emit_u64(e, "cold", "cold reservoir", s->mon.cold);
	tier_emit_u64(e, "allowance_ns", "allowance ns per period", s->mon.allowance_ns);
	tier_emit_u64(e, "spent_ns", "ns spent in all", s->mon.spent_ns);
	tier_emit_u64(e, "passes", "sweep passes", s->mon.passes);
	tier_emit_u64(e, "sweep_blocks", "blocks swept", s->mon.sweep_blocks);
	tier_emit_u64(e, "pass_blocks", "the last over blocks", s->mon.pass_blocks);
	tier_emit_u64(e, "pass_periods", "in periods", s->mon.pass_periods);
	tier_emit_double(e, "cut", NULL, (double)s->mon.cut);
	tier_emit_u64(e, "regrets", "moves that undid one of the last 5 s", s->mon.regrets);
	tier_emit_double(e, "regret", "recent share", (double)s->mon.regret);
	tier_emit_u64(e, "retests", "swaps that looked again first", s->mon.retests);
	tier_emit_u64(e, "rounds_skipped", "rounds with nothing new", s->mon.skipped);
	tier_emit_double(e, "hit_share", "fast-tier heat share", (double)tier_balance_stats.hit_share);
	tier_emit_u64(e, "room_short", "promotions the fast nodes' free room held back",
		      atomic_load(&tier_balance_stats.room_short));
	tier_emit_u64(e, "room_waits", "retries put off for room", atomic_load(&tier_balance_stats.room_waits));
	tier_emit_u64(e, "room_closed", "refusals that closed them a while", atomic_load(&tier_balance_stats.room_closed));
	int64_t room = atomic_load(&tier_balance_stats.fast_room);
	tier_emit_int(e, "fast_room_mib", "their free room at the last look (MiB, -1 unread)",
		      room < 0 ? -1 : (int)(room >> 20));
	per_source(e, "floors", NULL, TIER_EV_DOUBLE, s->mon.floor, sizeof(s->mon.floor[0]));
	tier_emit_dict_end(e);
	walk_pages(e);
	tier_emit_dict_begin(e, "advise", "hot set (advisor)");
	for (int i = 0; i < TIER_ADVISE_VALUES; i++)
		tier_emit_u64(e, tier_advise_names[i], NULL, tier_advise_value(i));
	tier_emit_dict_end(e);
	tier_emit_dict_begin(e, "metadata", NULL);
	tier_emit_u64(e, "jemalloc", "jemalloc committed (fast tier, outside fast_limit)", s->meta);
	tier_emit_u64(e, "tiermalloc", NULL, s->pool);
	tier_emit_dict_end(e);
	walk_job(e);
	tier_emit_dict_begin(e, "device", NULL);
	tier_emit_u64(e, "held_blocks", "held blocks", s->dev.held_blocks);
	tier_emit_u64(e, "held_bytes", "held bytes", s->dev.held_bytes);
	tier_emit_u64(e, "held_not_migrated", "by last status: not-migrated", s->dev.held_kept);
	tier_emit_u64(e, "held_ebusy", "-EBUSY", s->dev.held_busy);
	tier_emit_u64(e, "held_other", "other", s->dev.held_other);
	tier_emit_u64(e, "held_marked", "marked ever", s->held_marked);
	tier_emit_str(e, "held_reason", "last", s->held_reason);
	tier_emit_u64(e, "pinned_blocks", "pinned blocks", s->dev.pinned_blocks);
	tier_emit_u64(e, "pinned_bytes", "pinned bytes", s->dev.pinned_bytes);
	static const char *const reg[] = {"reg_calls", "reg_pinned", "reg_foreign", "reg_untracked",
					  "reg_unpinned", "reg_missing", "reg_live"};
	for (int i = 0; i < 7; i++)
		tier_emit_u64(e, reg[i], NULL, s->reg[i]);
	tier_emit_u64(e, "migrate_retries", "migration retries", s->retries);
	tier_emit_dict_end(e);
	tier_emit_dict_begin(e, "reentrant", "re-entrant calls (signal handlers inside the allocator)");
	tier_emit_u64(e, "served", "served by the pool", atomic_load(&tier_sigpool.served));
	tier_emit_u64(e, "failed", "refused (ENOMEM)", atomic_load(&tier_sigpool.failed));
	tier_emit_u64(e, "pool_bytes", "bytes in use", atomic_load(&tier_sigpool.in_use));
	tier_emit_u64(e, "deferred_frees", "frees deferred", atomic_load(&tier_reentry_stats.deferred_frees));
	tier_emit_u64(e, "refused", "realloc/usable-size refused", atomic_load(&tier_reentry_stats.refused));
	tier_emit_dict_end(e);
	/* every knob of the table, as in effect */
	tier_emit_dict_begin(e, "settings", NULL);
	for (size_t k = 0; k < tier_nknobs; k++) {
		const struct tier_knob *kn = &tier_knobs[k];
		const char *field = (const char *)&tier_settings + kn->offset;
		char v[300];
		switch (kn->type) {
		case TK_SIZE: tier_emit_u64(e, kn->name, NULL, *(const size_t *)field); break;
		case TK_UINT: tier_emit_u64(e, kn->name, NULL, *(const unsigned *)field); break;
		case TK_BOOL: tier_emit_bool(e, kn->name, NULL, *(const bool *)field); break;
		case TK_DOUBLE: tier_emit_double(e, kn->name, NULL, *(const double *)field); break;
		default: tier_emit_str(e, kn->name, NULL, tier_knob_format(kn, &tier_settings, v, sizeof(v)));
		}
	}
	tier_emit_dict_end(e);
	tier_emit_end(e);
}

/* opts: "J" JSON, "N" the names with their JSON paths (one a line), else
 * text. */
void tier_stats_print(void (*write_cb)(void *, const char *), void *cbopaque, const char *opts)
{
	tier_boot();
	tier_topology_complete(&tier_topo); /* the reasons' words */
	struct snap s;
	struct out o = {.cb = write_cb, .opaque = cbopaque};
	gather(&s);
	struct tier_emitter e;
	enum tier_emit_mode mode = opts && strchr(opts, 'J') ? TIER_EMIT_JSON
				   : opts && strchr(opts, 'N') ? TIER_EMIT_NAMES
							       : TIER_EMIT_TEXT;
	tier_emit_init(&e, mode, out_write, &o);
	walk(&e, &s);
	flush(&o);
}
