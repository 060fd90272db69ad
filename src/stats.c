/* tier_stats_print: the state of every module, as text or JSON.  Numbers
 * are gathered first (the resident scan holds rcu_read_lock); write_cb is
 * called afterwards with no lock held, so it may allocate. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "bg.h"
#include "heat.h"
#include "migrate.h"
#include "init.h"
#include "place.h"
#include "pool.h"
#include "registry.h"
#include "resident.h"
#include "stats.h"

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
	char sources[512];
	uint64_t samples[TIER_SRC_COUNT], collects[TIER_SRC_COUNT], collect_ns[TIER_SRC_COUNT];
	struct {
		uint64_t promoted_bytes, promoted_blocks, demoted_bytes, demoted_blocks, moved_pages,
			failed_pages, ns;
	} mig;
	bool bg_running;
	uint64_t bg_periods, bg_cpu_ns;
	double bg_share;
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
	uint64_t t = tier_clock_ns(CLOCK_MONOTONIC), t0 = atomic_load(&tier_bg_stats.started_ns);
	s->bg_share = t0 && t > t0 ? (double)s->bg_cpu_ns / (double)(t - t0) : 0.0;
}

static const char *off_reason(const struct snap *s)
{
	if (s->active)
		return "";
	return tier_topo.ntiers < 2 ? tier_topo.why_single : "disabled (tier.enabled is false)";
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
		put(o, "tier %d: nodes %s, arena %u\n", i, t->tier[i].nodes_str, tier_arena_of_tier(i));
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
	put(o, "placement: spilled to a slower tier: %llu blocks; mbind calls: %llu, failed: %llu%s%s\n",
	    (unsigned long long)s->spilled, (unsigned long long)s->bind_calls,
	    (unsigned long long)s->bind_fail, s->bind_fail ? ", last error: " : "",
	    s->bind_fail ? strerror(s->bind_errno) : "");
	put(o, "heat sources: %s\n", s->sources);
	put(o, "samples:");
	for (unsigned i = 0; i < TIER_SRC_COUNT; i++)
		put(o, " %s %llu%s", tier_source_name(i), (unsigned long long)s->samples[i],
		    i + 1 < TIER_SRC_COUNT ? "," : "\n");
	put(o, "collection (reads, wall ms):");
	for (unsigned i = 0; i < TIER_SRC_COUNT; i++)
		put(o, " %s %llu, %.1f%s", tier_source_name(i), (unsigned long long)s->collects[i],
		    (double)s->collect_ns[i] / 1e6, i + 1 < TIER_SRC_COUNT ? ";" : "\n");
	put(o, "migration: promoted %llu bytes in %llu blocks, demoted %llu bytes in %llu blocks; "
	       "pages on target %llu, failed %llu; %.1f ms\n",
	    (unsigned long long)s->mig.promoted_bytes, (unsigned long long)s->mig.promoted_blocks,
	    (unsigned long long)s->mig.demoted_bytes, (unsigned long long)s->mig.demoted_blocks,
	    (unsigned long long)s->mig.moved_pages, (unsigned long long)s->mig.failed_pages,
	    (double)s->mig.ns / 1e6);
	put(o, "background thread: %s, %llu periods, CPU %.1f ms (%.2f%% of a core)\n",
	    s->bg_running ? "running" : "not running", (unsigned long long)s->bg_periods,
	    (double)s->bg_cpu_ns / 1e6, s->bg_share * 100.0);
	put(o, "metadata: jemalloc %zu bytes committed (fast tier, outside fast_limit), tiermalloc "
	       "%zu bytes\n",
	    s->meta, s->pool);
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
		       "\"committed\":%zu,\"blocks_placed\":%llu,\"reason\":\"%s\"}",
		    i ? "," : "", i, t->tier[i].nodes_str, tier_arena_of_tier(i), s->res.tier[i],
		    s->used[i], s->tcommitted[i], (unsigned long long)s->placed[i],
		    jstr(t->tier[i].reason, b1, sizeof(b1)));
	put(o, "],\"resident_other\":%zu,\"extents\":%zu,\"mappings\":%zu,\"mapped\":%zu,"
	       "\"committed\":%zu,",
	    s->res.other, s->extents, s->mappings, s->mapped, s->committed);
	put(o, "\"hooks\":{\"automatic_arenas\":%u,\"late_arenas\":%u,\"huge_arena\":%s,"
	       "\"unknown_extent_calls\":%zu},",
	    tier_arenas_hooked(), tier_arenas_late(), tier_arena_huge_hooked() ? "true" : "false",
	    s->unknown);
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
	put(o, "}},\"migration\":{\"promoted_bytes\":%llu,\"promoted_blocks\":%llu,"
	       "\"demoted_bytes\":%llu,\"demoted_blocks\":%llu,\"pages_on_target\":%llu,"
	       "\"failed_pages\":%llu,\"ns\":%llu},",
	    (unsigned long long)s->mig.promoted_bytes, (unsigned long long)s->mig.promoted_blocks,
	    (unsigned long long)s->mig.demoted_bytes, (unsigned long long)s->mig.demoted_blocks,
	    (unsigned long long)s->mig.moved_pages, (unsigned long long)s->mig.failed_pages,
	    (unsigned long long)s->mig.ns);
	put(o, "\"background\":{\"running\":%s,\"periods\":%llu,\"cpu_ns\":%llu,\"core_share\":%.5f},",
	    s->bg_running ? "true" : "false", (unsigned long long)s->bg_periods,
	    (unsigned long long)s->bg_cpu_ns, s->bg_share);
	put(o, "\"metadata\":{\"jemalloc\":%zu,\"tiermalloc\":%zu}}}\n", s->meta, s->pool);
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
