/* tier_stats_print: the state of every module, as text or JSON.  Numbers
 * are gathered first (the resident scan holds rcu_read_lock); write_cb is
 * called afterwards with no lock held, so it may allocate. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "advise.h"
#include "arena.h"
#include "bg.h"
#include "heat.h"
#include "heat_cxl.h"
#include "large.h"
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

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int r = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (r < 0)
		return;
	size_t len = (size_t)r < sizeof(line) ? (size_t)r : sizeof(line) - 1;
	if (o->n + len >= sizeof(o->buf))
		flush(o);
	memcpy(o->buf + o->n, line, len);
	o->n += len;
}

/* JSON string body: quotes, backslashes and control characters escaped. */
static const char *jstr(const char *s, char *buf, size_t len)
{
	size_t n = 0;
	for (; *s && n + 7 < len; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			buf[n++] = '\\';
			buf[n++] = (char)c;
		} else if (c < 0x20) {
			n += (size_t)snprintf(buf + n, len - n, "\\u%04x", c);
		} else {
			buf[n++] = (char)c;
		}
	}
	buf[n] = '\0';
	return buf;
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
			failed_pages, ns;
	} mig;
	bool bg_running;
	uint64_t bg_periods, bg_cpu_ns, bg_kernel_ns, bg_fault_ns;
	double bg_share, bg_recent;
	uint64_t cost_p50, cost_p99, wall_p50, wall_p99;
	uint64_t faults[TIER_SRC_COUNT], fault_ns;
	struct {
		uint32_t watched, cold;
		uint64_t allowance_ns, spent_ns;
		uint64_t pass_periods, pass_blocks, passes;
		bool idle;
		float floor[TIER_SRC_COUNT];
		float cut, regret;
		uint64_t regrets;
	} mon;
	struct {
		uint64_t seen[3], size[3], tracked;
	} adv;
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
	s->wall_p50 = tier_bg_quantile(tier_bg_stats.period_wall, 0.5);
	s->wall_p99 = tier_bg_quantile(tier_bg_stats.period_wall, 0.99);
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		s->faults[i] = atomic_load(&tier_heat_stats.faults[i]);
	s->fault_ns = atomic_load(&tier_heat_stats.fault_ns[TIER_SRC_PAGEMAP]);
	s->mon.watched = atomic_load(&tier_monitor_stats.watched);
	s->mon.cold = atomic_load(&tier_monitor_stats.cold);
	s->mon.allowance_ns = atomic_load(&tier_monitor_stats.allowance_ns);
	s->mon.spent_ns = atomic_load(&tier_monitor_stats.spent_ns);
	s->mon.pass_periods = atomic_load(&tier_monitor_stats.last_pass_periods);
	s->mon.pass_blocks = atomic_load(&tier_monitor_stats.pass_blocks);
	s->mon.passes = atomic_load(&tier_monitor_stats.passes);
	s->mon.idle = atomic_load(&tier_monitor_stats.idle);
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		s->mon.floor[i] = tier_monitor_stats.floor[i];
	s->mon.cut = tier_balance_stats.cut;
	s->mon.regret = tier_balance_stats.regret;
	s->mon.regrets = atomic_load(&tier_balance_stats.regrets);
	for (int i = 0; i < 3; i++) {
		s->adv.seen[i] = atomic_load(&tier_advise_stats.seen[i]);
		s->adv.size[i] = atomic_load(&tier_advise_stats.size[i]);
	}
	s->adv.tracked = atomic_load(&tier_advise_stats.tracked);
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

/* The CXL hot-list counters, named once for both outputs. */
#define CXL_COUNTER(field, text) {#field, text, offsetof(struct tier_cxl_stats, field)}
static const struct {
	const char *json, *text;
	size_t off;
} cxl_counters[] = {
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

static uint64_t cxl_counter(size_t i)
{
	return atomic_load((_Atomic uint64_t *)((char *)&tier_cxl_stats + cxl_counters[i].off));
}

/* The job and cgroup lines (job.c). */
static void print_job_text(struct out *o)
{
	struct tier_job_view v;
	tier_job_view(&v);
	put(o, "job: %s", v.state);
	if (v.name[0])
		put(o, " (%s)", v.name);
	if (v.ledger[0])
		put(o, "; ledger %s, %u members, budget %llu MiB, this process's share %llu MiB, "
		       "fast_limit applied %llu MiB, members' fast bytes %llu MiB, requests %llu",
		    v.ledger, v.members, (unsigned long long)(v.budget >> 20),
		    (unsigned long long)(v.share >> 20), (unsigned long long)(v.limit >> 20),
		    (unsigned long long)(v.fast_bytes >> 20), (unsigned long long)v.requests);
	put(o, "\n");
	if (v.cg.found) {
		char mx[32];
		if (v.cg.memory_max == UINT64_MAX)
			snprintf(mx, sizeof(mx), "max");
		else
			snprintf(mx, sizeof(mx), "%llu MiB", (unsigned long long)(v.cg.memory_max >> 20));
		put(o, "cgroup: %s, memory.max %s, memory.current %llu MiB, cpuset.mems.effective %s\n",
		    v.cg.path, mx, (unsigned long long)(v.cg.memory_current >> 20), v.cg.mems[0] ? v.cg.mems : "?");
	} else {
		put(o, "cgroup: no cgroup v2 found\n");
	}
}

static void print_job_json(struct out *o)
{
	struct tier_job_view v;
	tier_job_view(&v);
	char b1[700], b2[600], b3[600], b4[600];
	put(o, "\"job\":{\"state\":\"%s\",\"name\":\"%s\",\"ledger\":\"%s\",\"members\":%u,"
	       "\"fast_limit\":%llu,\"share\":%llu,\"limit\":%llu,\"fast_bytes\":%llu,\"requests\":%llu,"
	       "\"cgroup\":\"%s\",\"memory_max\":%llu,\"memory_current\":%llu,\"mems\":\"%s\"},",
	    jstr(v.state, b1, sizeof(b1)), jstr(v.name, b2, sizeof(b2)), jstr(v.ledger, b3, sizeof(b3)),
	    v.members, (unsigned long long)v.budget, (unsigned long long)v.share,
	    (unsigned long long)v.limit, (unsigned long long)v.fast_bytes, (unsigned long long)v.requests,
	    jstr(v.cg.found ? v.cg.path : "", b4, sizeof(b4)), (unsigned long long)v.cg.memory_max,
	    (unsigned long long)v.cg.memory_current, v.cg.mems);
}

static void print_text(struct out *o, const struct snap *s)
{
	const struct tier_topology *t = &tier_topo;
	put(o, "___ Begin tiermalloc statistics ___\n");
	put(o, "version: %s\n", TIERMALLOC_VERSION);
	if (s->active)
		put(o, "tiering: on (%d tiers, from %s)\n", t->ntiers, t->method);
	else
		put(o, "tiering: off: %s\n", off_reason(s));
	put(o, "fast_limit: %zu bytes (%zu MiB)\n", s->fast_limit, s->fast_limit >> 20);
	for (int i = 0; i < t->ntiers; i++) {
		put(o, "tier %d: nodes %s, arena %u%s%s%s%s\n", i, t->tier[i].nodes_str, tier_arena_of_tier(i),
		    strcmp(t->tier[i].kind, "cxl") ? "" : ", kind cxl",
		    t->tier[i].devices[0] ? " (" : "", t->tier[i].devices, t->tier[i].devices[0] ? ")" : "");
		put(o, "  why: %s\n", t->tier[i].reason);
		put(o, "  resident (kernel): %zu bytes, placed blocks: %zu bytes, committed: %zu bytes, "
		       "blocks placed: %llu\n",
		    s->res.tier[i], s->used[i], s->tcommitted[i], (unsigned long long)s->placed[i]);
	}
	if (s->res_err)
		put(o, "resident: kernel query failed (%s)\n", strerror(s->res_err));
	if (s->res.other)
		put(o, "resident outside the tiers: %zu bytes\n", s->res.other);
	put(o, "extents: %zu in %zu mappings; mapped: %zu bytes; committed: %zu bytes\n", s->extents,
	    s->mappings, s->mapped, s->committed);
	put(o, "hooks: %u automatic arenas (%u hooked late), huge arena %s; calls on extents mapped "
	       "before the hooks: %zu; pre-hook memory set aside: %zu bytes\n",
	    tier_arenas_hooked(), tier_arenas_late(), tier_arena_huge_hooked() ? "hooked" : "not hooked",
	    s->unknown, tier_arena_absorbed());
	put(o, "large cache: %s; huge allocations checked: %llu; emptied: %llu times, %llu bytes; "
	       "held at the last check: %llu bytes\n",
	    tier_large_on() ? "on" : "off",
	    (unsigned long long)atomic_load(&tier_large_stats.checks),
	    (unsigned long long)atomic_load(&tier_large_stats.purges),
	    (unsigned long long)atomic_load(&tier_large_stats.purged),
	    (unsigned long long)atomic_load(&tier_large_stats.cached));
	put(o, "placement: spilled to a slower tier: %llu blocks; mbind calls: %llu, failed: %llu%s%s\n",
	    (unsigned long long)s->spilled, (unsigned long long)s->bind_calls,
	    (unsigned long long)s->bind_fail, s->bind_fail ? ", last error: " : "",
	    s->bind_fail ? strerror(s->bind_errno) : "");
	put(o, "heat sources: %s\n", s->sources);
	put(o, "samples:");
	for (unsigned i = 0; i < TIER_SRC_COUNT; i++)
		put(o, " %s %llu%s", tier_source_name(i), (unsigned long long)s->samples[i],
		    i + 1 < TIER_SRC_COUNT ? "," : "\n");
	put(o, "collection (reads, wall ms, budget steps, sampling level):");
	for (unsigned i = 0; i < TIER_SRC_COUNT; i++)
		put(o, " %s %llu, %.1f, %llu, %d%s", tier_source_name(i), (unsigned long long)s->collects[i],
		    (double)s->collect_ns[i] / 1e6, (unsigned long long)s->adjusts[i], s->level[i],
		    i + 1 < TIER_SRC_COUNT ? ";" : "\n");
	if (atomic_load(&tier_cxl_stats.bytes) || atomic_load(&tier_cxl_stats.dropped_bytes)) {
		put(o, "cxl hot lists:");
		for (size_t i = 0; i < sizeof(cxl_counters) / sizeof(*cxl_counters); i++)
			put(o, "%s %s %llu", i ? "," : "", cxl_counters[i].text, (unsigned long long)cxl_counter(i));
		put(o, "\n");
	}
	put(o, "migration: promoted %llu bytes in %llu blocks, demoted %llu bytes in %llu blocks; "
	       "pages on target %llu, failed %llu; %.1f ms\n",
	    (unsigned long long)s->mig.promoted_bytes, (unsigned long long)s->mig.promoted_blocks,
	    (unsigned long long)s->mig.demoted_bytes, (unsigned long long)s->mig.demoted_blocks,
	    (unsigned long long)s->mig.moved_pages, (unsigned long long)s->mig.failed_pages,
	    (double)s->mig.ns / 1e6);
	put(o, "background thread: %s, %llu periods, CPU %.1f ms (this thread and the sources' threads); "
	       "kdamond share %.1f ms; write faults caused %llu (%.1f us each here: about %.1f ms in the "
	       "program's threads); "
	       "all together %.2f%% of a core since start, %.2f%% lately (budget bg_cpu %.2f%%); "
	       "per period: cost p50 %.0f us, p99 %.0f us; work p50 %.0f us, p99 %.0f us\n",
	    s->bg_running ? "running" : "not running", (unsigned long long)s->bg_periods,
	    (double)s->bg_cpu_ns / 1e6, (double)s->bg_kernel_ns / 1e6,
	    (unsigned long long)(s->faults[TIER_SRC_PAGEMAP]), (double)s->fault_ns / 1e3, (double)s->bg_fault_ns / 1e6,
	    s->bg_share * 100.0, s->bg_recent * 100.0, tier_settings.bg_cpu * 100.0, (double)s->cost_p50 / 1e3,
	    (double)s->cost_p99 / 1e3, (double)s->wall_p50 / 1e3, (double)s->wall_p99 / 1e3);
	put(o, "monitor: %s; watched %u blocks, cold reservoir %u; allowance %.0f us per period, "
	       "%.1f ms spent in all; "
	       "sweep: %llu passes, the last over %llu blocks in %llu periods (%.1f s); floors:",
	    s->mon.idle ? "cheap watch (nothing could move)" : "tracking", s->mon.watched, s->mon.cold,
	    (double)s->mon.allowance_ns / 1e3, (double)s->mon.spent_ns / 1e6, (unsigned long long)s->mon.passes,
	    (unsigned long long)s->mon.pass_blocks,
	    (unsigned long long)s->mon.pass_periods,
	    (double)s->mon.pass_periods * tier_settings.period_ms / 1000.0);
	for (unsigned i = 0; i < TIER_SRC_COUNT; i++)
		put(o, " %s %.3f%s", tier_source_name(i), (double)s->mon.floor[i], i + 1 < TIER_SRC_COUNT ? "," : "");
	put(o, "; cut %.3f; moves that undid one of the last 5 s: %llu, recent share %.2f\n", (double)s->mon.cut,
	    (unsigned long long)s->mon.regrets, (double)s->mon.regret);
	put(o, "hot set (advisor): tracked %zu MiB; seen accessed in the last 1 s %.1f MiB, 10 s %.1f MiB, "
	       "60 s %.1f MiB; fast tier for 90%% of accesses %.1f MiB, 95%% %.1f MiB, 99%% %.1f MiB\n",
	    (size_t)(s->adv.tracked >> 20), (double)s->adv.seen[0] / 1048576.0, (double)s->adv.seen[1] / 1048576.0,
	    (double)s->adv.seen[2] / 1048576.0, (double)s->adv.size[0] / 1048576.0,
	    (double)s->adv.size[1] / 1048576.0, (double)s->adv.size[2] / 1048576.0);
	put(o, "device: held %zu blocks, %zu bytes (by last status: not-migrated %zu, -EBUSY %zu, "
	       "other %zu), %llu marked ever, last %s; pinned %zu blocks, %zu bytes; "
	       "registrations seen %llu: pinned %llu, foreign %llu, untracked %llu, unpinned %llu, "
	       "no library %llu, live %llu; migration retries %llu\n",
	    s->dev.held_blocks, s->dev.held_bytes, s->dev.held_kept, s->dev.held_busy, s->dev.held_other,
	    (unsigned long long)s->held_marked, s->held_reason, s->dev.pinned_blocks, s->dev.pinned_bytes,
	    (unsigned long long)s->reg[0], (unsigned long long)s->reg[1], (unsigned long long)s->reg[2],
	    (unsigned long long)s->reg[3], (unsigned long long)s->reg[4], (unsigned long long)s->reg[5],
	    (unsigned long long)s->reg[6], (unsigned long long)s->retries);
	put(o, "metadata: jemalloc %zu bytes committed (fast tier, outside fast_limit), tiermalloc "
	       "%zu bytes\n",
	    s->meta, s->pool);
	print_job_text(o);
	put(o, "re-entrant calls (signal handlers inside the allocator): %llu served by the pool, %llu "
	       "refused (ENOMEM), %zu bytes in use; %llu frees deferred, %llu realloc/usable-size "
	       "refused\n",
	    (unsigned long long)atomic_load(&tier_sigpool.served),
	    (unsigned long long)atomic_load(&tier_sigpool.failed), atomic_load(&tier_sigpool.in_use),
	    (unsigned long long)atomic_load(&tier_reentry_stats.deferred_frees),
	    (unsigned long long)atomic_load(&tier_reentry_stats.refused));
	put(o, "___ End tiermalloc statistics ___\n");
}

static void print_json(struct out *o, const struct snap *s)
{
	const struct tier_topology *t = &tier_topo;
	char b1[800], b2[256];
	put(o, "{\"tiermalloc\":{\"version\":\"%s\",\"tiering\":{\"active\":%s,\"method\":\"%s\","
	       "\"off_reason\":\"%s\"},\"fast_limit\":%zu,\"tiers\":[",
	    TIERMALLOC_VERSION, s->active ? "true" : "false", jstr(t->method, b2, sizeof(b2)),
	    jstr(off_reason(s), b1, sizeof(b1)), s->fast_limit);
	for (int i = 0; i < t->ntiers; i++)
		put(o, "%s{\"index\":%d,\"nodes\":\"%s\",\"arena\":%u,\"resident\":%zu,\"placed\":%zu,"
		       "\"committed\":%zu,\"blocks_placed\":%llu,\"kind\":\"%s\",\"devices\":\"%s\","
		       "\"reason\":\"%s\"}",
		    i ? "," : "", i, t->tier[i].nodes_str, tier_arena_of_tier(i), s->res.tier[i],
		    s->used[i], s->tcommitted[i], (unsigned long long)s->placed[i],
		    jstr(t->tier[i].kind, b2, sizeof(b2)), t->tier[i].devices,
		    jstr(t->tier[i].reason, b1, sizeof(b1)));
	put(o, "],\"resident_other\":%zu,\"extents\":%zu,\"mappings\":%zu,\"mapped\":%zu,"
	       "\"committed\":%zu,",
	    s->res.other, s->extents, s->mappings, s->mapped, s->committed);
	put(o, "\"hooks\":{\"automatic_arenas\":%u,\"late_arenas\":%u,\"huge_arena\":%s,"
	       "\"unknown_extent_calls\":%zu},",
	    tier_arenas_hooked(), tier_arenas_late(), tier_arena_huge_hooked() ? "true" : "false",
	    s->unknown);
	put(o, "\"large_cache\":{\"on\":%s,\"checks\":%llu,\"purges\":%llu,\"purged\":%llu,"
	       "\"held\":%llu},",
	    tier_large_on() ? "true" : "false",
	    (unsigned long long)atomic_load(&tier_large_stats.checks),
	    (unsigned long long)atomic_load(&tier_large_stats.purges),
	    (unsigned long long)atomic_load(&tier_large_stats.purged),
	    (unsigned long long)atomic_load(&tier_large_stats.cached));
	put(o, "\"placement\":{\"spilled_blocks\":%llu,\"mbind_calls\":%llu,\"mbind_failures\":%llu},",
	    (unsigned long long)s->spilled, (unsigned long long)s->bind_calls,
	    (unsigned long long)s->bind_fail);
	put(o, "\"heat\":{\"sources\":\"%s\",\"samples\":{", jstr(s->sources, b1, sizeof(b1)));
	for (unsigned i = 0; i < TIER_SRC_COUNT; i++)
		put(o, "%s\"%s\":%llu", i ? "," : "", tier_source_name(i), (unsigned long long)s->samples[i]);
	put(o, "},\"collects\":{");
	for (unsigned i = 0; i < TIER_SRC_COUNT; i++)
		put(o, "%s\"%s\":%llu", i ? "," : "", tier_source_name(i), (unsigned long long)s->collects[i]);
	put(o, "},\"collect_ns\":{");
	for (unsigned i = 0; i < TIER_SRC_COUNT; i++)
		put(o, "%s\"%s\":%llu", i ? "," : "", tier_source_name(i),
		    (unsigned long long)s->collect_ns[i]);
	put(o, "},\"levels\":{");
	for (unsigned i = 0; i < TIER_SRC_COUNT; i++)
		put(o, "%s\"%s\":%d", i ? "," : "", tier_source_name(i), s->level[i]);
	put(o, "},\"cxl\":{");
	for (size_t i = 0; i < sizeof(cxl_counters) / sizeof(*cxl_counters); i++)
		put(o, "%s\"%s\":%llu", i ? "," : "", cxl_counters[i].json, (unsigned long long)cxl_counter(i));
	put(o, "}},\"migration\":{\"promoted_bytes\":%llu,\"promoted_blocks\":%llu,"
	       "\"demoted_bytes\":%llu,\"demoted_blocks\":%llu,\"pages_on_target\":%llu,"
	       "\"failed_pages\":%llu,\"ns\":%llu},",
	    (unsigned long long)s->mig.promoted_bytes, (unsigned long long)s->mig.promoted_blocks,
	    (unsigned long long)s->mig.demoted_bytes, (unsigned long long)s->mig.demoted_blocks,
	    (unsigned long long)s->mig.moved_pages, (unsigned long long)s->mig.failed_pages,
	    (unsigned long long)s->mig.ns);
	put(o, "\"background\":{\"running\":%s,\"periods\":%llu,\"cpu_ns\":%llu,\"kernel_ns\":%llu,"
	       "\"fault_ns\":%llu,\"faults\":%llu,\"one_fault_ns\":%llu,\"core_share\":%.5f,\"recent_share\":%.5f,\"budget\":%.5f,"
	       "\"period_cost_p50_ns\":%llu,\"period_cost_p99_ns\":%llu,\"period_work_p50_ns\":%llu,"
	       "\"period_work_p99_ns\":%llu},",
	    s->bg_running ? "true" : "false", (unsigned long long)s->bg_periods,
	    (unsigned long long)s->bg_cpu_ns, (unsigned long long)s->bg_kernel_ns,
	    (unsigned long long)s->bg_fault_ns, (unsigned long long)s->faults[TIER_SRC_PAGEMAP],
	    (unsigned long long)s->fault_ns, s->bg_share,
	    s->bg_recent, tier_settings.bg_cpu, (unsigned long long)s->cost_p50,
	    (unsigned long long)s->cost_p99, (unsigned long long)s->wall_p50, (unsigned long long)s->wall_p99);
	put(o, "\"monitor\":{\"idle\":%s,\"watched\":%u,\"cold\":%u,\"allowance_ns\":%llu,\"spent_ns\":%llu,"
	       "\"passes\":%llu,"
	       "\"pass_blocks\":%llu,\"pass_periods\":%llu,\"cut\":%.5f,\"regrets\":%llu,\"regret\":%.4f,"
	       "\"floors\":{",
	    s->mon.idle ? "true" : "false", s->mon.watched, s->mon.cold,
	    (unsigned long long)s->mon.allowance_ns, (unsigned long long)s->mon.spent_ns,
	    (unsigned long long)s->mon.passes, (unsigned long long)s->mon.pass_blocks,
	    (unsigned long long)s->mon.pass_periods, (double)s->mon.cut, (unsigned long long)s->mon.regrets,
	    (double)s->mon.regret);
	for (unsigned i = 0; i < TIER_SRC_COUNT; i++)
		put(o, "%s\"%s\":%.5f", i ? "," : "", tier_source_name(i), (double)s->mon.floor[i]);
	put(o, "}},\"advise\":{\"tracked\":%llu,\"seen_1s\":%llu,\"seen_10s\":%llu,\"seen_60s\":%llu,"
	       "\"size_90\":%llu,\"size_95\":%llu,\"size_99\":%llu},",
	    (unsigned long long)s->adv.tracked, (unsigned long long)s->adv.seen[0],
	    (unsigned long long)s->adv.seen[1], (unsigned long long)s->adv.seen[2],
	    (unsigned long long)s->adv.size[0], (unsigned long long)s->adv.size[1],
	    (unsigned long long)s->adv.size[2]);
	put(o, "\"metadata\":{\"jemalloc\":%zu,\"tiermalloc\":%zu},", s->meta, s->pool);
	print_job_json(o);
	put(o, "\"device\":{\"held_blocks\":%zu,\"held_bytes\":%zu,\"held_not_migrated\":%zu,"
	       "\"held_ebusy\":%zu,\"held_other\":%zu,\"held_marked\":%llu,\"held_reason\":\"%s\","
	       "\"pinned_blocks\":%zu,\"pinned_bytes\":%zu,\"reg_calls\":%llu,\"reg_pinned\":%llu,"
	       "\"reg_foreign\":%llu,\"reg_untracked\":%llu,\"reg_unpinned\":%llu,\"reg_missing\":%llu,"
	       "\"reg_live\":%llu,\"migrate_retries\":%llu},",
	    s->dev.held_blocks, s->dev.held_bytes, s->dev.held_kept, s->dev.held_busy, s->dev.held_other,
	    (unsigned long long)s->held_marked, jstr(s->held_reason, b2, sizeof(b2)), s->dev.pinned_blocks,
	    s->dev.pinned_bytes, (unsigned long long)s->reg[0], (unsigned long long)s->reg[1],
	    (unsigned long long)s->reg[2], (unsigned long long)s->reg[3], (unsigned long long)s->reg[4],
	    (unsigned long long)s->reg[5], (unsigned long long)s->reg[6], (unsigned long long)s->retries);
	put(o, "\"reentrant\":{\"served\":%llu,\"failed\":%llu,\"pool_bytes\":%zu,\"deferred_frees\":%llu,"
	       "\"refused\":%llu},",
	    (unsigned long long)atomic_load(&tier_sigpool.served),
	    (unsigned long long)atomic_load(&tier_sigpool.failed), atomic_load(&tier_sigpool.in_use),
	    (unsigned long long)atomic_load(&tier_reentry_stats.deferred_frees),
	    (unsigned long long)atomic_load(&tier_reentry_stats.refused));
	/* every knob of the table, as in effect */
	put(o, "\"settings\":{");
	for (size_t k = 0; k < tier_nknobs; k++) {
		char v[300];
		const struct tier_knob *kn = &tier_knobs[k];
		tier_knob_format(kn, &tier_settings, v, sizeof(v));
		bool num = kn->type == TK_SIZE || kn->type == TK_UINT || kn->type == TK_DOUBLE || kn->type == TK_BOOL;
		put(o, "%s\"%s\":%s%s%s", k ? "," : "", kn->name, num ? "" : "\"", num ? v : jstr(v, b1, sizeof(b1)),
		    num ? "" : "\"");
	}
	put(o, "}}}\n");
}

void tier_stats_print(void (*write_cb)(void *, const char *), void *cbopaque, const char *opts)
{
	tier_boot();
	struct snap s;
	struct out o = {.cb = write_cb, .opaque = cbopaque};
	gather(&s);
	if (opts && strchr(opts, 'J'))
		print_json(&o, &s);
	else
		print_text(&o, &s);
	flush(&o);
}
