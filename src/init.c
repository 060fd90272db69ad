#define _GNU_SOURCE
#include <jemalloc/jemalloc.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <urcu-bp.h>

#include "arena.h"
#include "bg.h"
#include "period.h"
#define TIER_CHAN_PROCESS
#include "chan.h"
#include "tiering.h"
#include "init.h"
#include "job.h"
#include "reentry.h"
#include "place.h"
#include "pool.h"
#include "registry.h"
#include "stats.h"

/* atexit and pthread_atfork are what glibc's libc_nonshared.a links in:
 * stubs at the end of the text, whose last 64 KiB window every process
 * would map for them (and _fini, see Makefile.am).  Their bodies: */
extern void *__dso_handle __attribute__((visibility("hidden")));
int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);
int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso);

TIER_STARTUP static void at_fork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
	__register_atfork(prepare, parent, child, &__dso_handle);
}

/* DT_FINI (Makefile.am): _fini is empty, destructors run from .fini_array */
TIER_STARTUP void tier_fini(void) {}

static _Atomic int boot_state; /* 0 not started, 1 booting, 2 done */
static __thread bool booting;
static void boot_once(void);
/* the lazy boot of the layers below (knobs.h) */
void (*const tier_boot_fn)(void) = boot_once;

/* fork: our locks are taken after jemalloc's (handlers registered before
 * jemalloc initialises run their prepare step after its), so no hook can
 * be holding one of them while jemalloc waits for its own. */
static void prefork(void)
{
	tier_balance_lock();
	tier_ctl_lock();
	tier_registry_prefork();
	tier_pool_prefork();
	urcu_bp_before_fork();
}

static void postfork_parent(void)
{
	urcu_bp_after_fork_parent();
	tier_pool_postfork();
	tier_registry_postfork();
	tier_ctl_unlock();
	tier_balance_unlock();
}

static void postfork_child(void)
{
	urcu_bp_after_fork_child();
	tier_pool_postfork();
	tier_registry_postfork();
	tier_place_rebuild();
	tier_ctl_unlock();
	tier_balance_unlock();
}

/* Default budget: 90% of the fast tier's free memory at start-up. */
TIER_STARTUP static size_t default_fast_limit(void)
{
	uint64_t free_b = 0;
	for (int n = 0; n < TIER_MAX_NODES; n++)
		if (tier_topo.ntiers && (tier_topo.tier[0].nodes >> n & 1))
			free_b += tier_topo.node[n].mem_free;
	return (size_t)(free_b / 10 * 9);
}

/* The hooks serve placement and heat tracking.  With one tier (no
 * fast_nodes/slow_nodes override can add one at run time) and advise off,
 * nothing is ever placed or moved: jemalloc then runs alone, without the
 * fixed cost of hooking (its control tree for every possible arena). */
TIER_STARTUP static bool hooks_needed(void)
{
	return tier_topo.ntiers >= 2 || tier_settings.advise || tier_settings.always_hook;
}

/* Knob effects (knobs.h): the budget and the switch as written through
 * tier_mallctl, then a wake-up of the background thread for any knob. */
static void fast_limit_set(void)
{
	tier_place_set_fast_limit(tier_settings.fast_limit);
}

/* placement leaves the fast tier inside the band where the policy keeps
 * it: half way between the watermarks, as a block bound fast commits the
 * rest of its pages after the decision (about 2 MiB over at 64 MiB) */
static void fill_set(void)
{
	tier_place_set_fill(tier_settings.migrate ? (tier_settings.watermark_low + tier_settings.watermark_high) / 2 : 1.0);
}

static void enabled_set(void)
{
	atomic_store(&tier_place.active, tier_settings.enabled && tier_topo.ntiers > 1);
	tier_bg_start();
}

/* The channel is the pipeline's last step, and also runs in periods that
 * track nothing (ctl:true with one tier). */
static void chan_step(struct tier_bg_round *r)
{
	(void)r;
	tier_chan_tick();
}
static const struct tier_bg_step chan_steps[] = {{"channel", chan_step, TIER_BG_ALWAYS, NULL}};

TIER_STARTUP static void boot(void)
{
	tier_settings_default(&tier_settings);
	tier_conf_load(&tier_settings);
	__atomic_store_n(&tier_reentry_armed, tier_settings.signal_safe, __ATOMIC_RELAXED);
	tier_topology_read_quick(&tier_topo);
	tier_topology_classify(&tier_topo, tier_settings.fast_nodes, tier_settings.slow_nodes);
	if (tier_topo.warning[0])
		tier_log("%s", tier_topo.warning);
	if (!tier_knob_given(&tier_settings, "fast_limit"))
		tier_settings.fast_limit = default_fast_limit();
	tier_place_setup(&tier_topo, tier_settings.enabled, tier_settings.fast_limit);

	fill_set();
	tier_knob_on_set("fast_limit", fast_limit_set);
	tier_knob_on_set("watermark_high", fill_set);
	tier_knob_on_set("watermark_low", fill_set);
	tier_knob_on_set("migrate", fill_set);
	tier_knob_on_set("enabled", enabled_set);
	tier_knob_on_any(tier_bg_kick);
	tier_bg_add_steps(tier_period_steps, tier_period_nsteps);
	tier_bg_add_steps(chan_steps, 1);

	at_fork(prefork, postfork_parent, postfork_child);
	tier_arena_large_cache(tier_settings.large_cache);
	if (tier_arenas_install(tier_topo.ntiers, hooks_needed()) < 0)
		tier_log("could not install extent hooks; allocations are served untiered");
}

TIER_STARTUP static void boot_once(void)
{
	if (TIER_LIKELY(atomic_load_explicit(&boot_state, memory_order_acquire) == 2) || booting)
		return;
	int expect = 0;
	if (atomic_compare_exchange_strong(&boot_state, &expect, 1)) {
		booting = true;
		uint8_t was = tier_reentry_enter(); /* a handler's allocation meanwhile: the pool */
		boot();
		tier_reentry_leave(was);
		booting = false;
		atomic_store_explicit(&boot_state, 2, memory_order_release);
		return;
	}
	while (atomic_load_explicit(&boot_state, memory_order_acquire) != 2)
		sched_yield();
}

/* fork, in the child after jemalloc's handler: the channel and the job
 * membership are the parent's; then a fresh background thread */
static void after_fork_child(void)
{
	tier_chan_after_fork_child();
	tier_job_after_fork_child();
	tier_bg_after_fork_child();
}

TIER_STARTUP static void at_exit(void *unused)
{
	(void)unused;
	tier_bg_stop();
	tier_job_leave();
	tier_chan_close();
	if (tier_settings.stats_print)
		tier_stats_print(NULL, NULL, tier_settings.stats_print == 2 ? "J" : "");
}

/* Says once, at start, what tiering does in this process; quiet unless
 * asked (verbose) or the user configured tiering that cannot happen. */
TIER_STARTUP static void announce(void)
{
	bool wanted = tier_knob_given(&tier_settings, "fast_nodes") ||
		      tier_knob_given(&tier_settings, "slow_nodes") ||
		      tier_knob_given(&tier_settings, "enabled");
	if (tier_topo.ntiers < 2 && (tier_settings.verbose || wanted)) {
		tier_log("tiering off: %s", tier_topo.why_single);
		if (tier_settings.verbose && !tier_arenas_hooking())
			tier_log("extent hooks off: with one tier and advise off nothing is placed or "
				 "moved, so jemalloc serves alone (always_hook:true keeps stats and pins)");
	} else if (tier_settings.verbose) {
		tier_log("tiering %s: %d tiers (%s), fast_limit %zu MiB",
			 atomic_load(&tier_place.active) ? "on" : "off (enabled:false)", tier_topo.ntiers,
			 tier_topo.method, tier_settings.fast_limit >> 20);
		for (int i = 0; i < tier_topo.ntiers; i++)
			tier_log("tier %d: nodes %s: %s", i, tier_topo.tier[i].nodes_str,
				 tier_topo.tier[i].reason);
	}
}

TIER_STARTUP void tier_start(void)
{
	tier_boot();
	/* CXL facts only refine the reasons; tiers stay as booted unless the
	 * classification is unchanged. */
	if (tier_topology_read_cxl(&tier_topo) > 0) {
		struct tier_topology t = tier_topo;
		tier_topology_classify(&t, tier_settings.fast_nodes, tier_settings.slow_nodes);
		bool same = t.ntiers == tier_topo.ntiers;
		for (int i = 0; same && i < t.ntiers; i++)
			same = t.tier[i].nodes == tier_topo.tier[i].nodes;
		if (same)
			tier_topo = t;
	}
	announce();
	if (tier_settings.stats_print) {
		int fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
		if (fd >= 0)
			tier_stats_fd = fd;
	}
	__cxa_atexit(at_exit, NULL, &__dso_handle);
	/* jemalloc registers its fork handlers when it initialises: make sure
	 * it has (no mallctl needs to have run), so that these prepare before
	 * its own (a thread holding the arena lock may be waiting for one of
	 * jemalloc's locks) and the child handlers run after its own: the
	 * child can allocate, and start its background thread */
	uint8_t was = tier_reentry_enter();
	tier_thread_enter(0);
	dallocx(mallocx(1, 0), 0);
	tier_reentry_leave(was);
	at_fork(tier_arenas_prefork, tier_arenas_postfork, tier_arenas_postfork);
	at_fork(NULL, NULL, after_fork_child);
	/* a job member places its first allocations by its share, not by
	 * its own budget: join before the program runs */
	tier_job_period();
	tier_bg_start();
}
