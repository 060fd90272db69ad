#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bg.h"
#include "budget.h"
#include "burst.h"
#include "heat.h"
#include "knobs.h"
#include "migrate.h"
#include "monitor.h"
#include "place.h"
#include "sysfs.h"
#include "thread.h"
#include "tiering.h"

/* Periods in a row with nothing that could move before the cheap watch. */
#define IDLE_ENTER 10
/* Failed budget steps (every push source at its coarsest, the rest alone
 * over the whole budget) before the costliest push source is paused. */
#define SHED_AFTER 3

struct tier_bg_stats tier_bg_stats;
static pthread_t thread;
static int evfd = -1;
static _Atomic bool stop_req;
TIER_BOOT_DATA static bool started; /* read by every start */

#define MAX_STEPS 16
TIER_BOOT_DATA static struct tier_bg_step steps[MAX_STEPS];
TIER_BOOT_DATA static size_t nsteps;

TIER_STARTUP void tier_bg_add_steps(const struct tier_bg_step *add, size_t n)
{
	for (size_t i = 0; i < n && nsteps < MAX_STEPS; i++)
		steps[nsteps++] = add[i];
}

/* Run the pipeline once; untracked: only the steps flagged always. */
static void run_steps(struct tier_bg_round *r, bool tracked)
{
	bool locked = false;
	for (size_t i = 0; i < nsteps; i++) {
		if (!tracked && !(steps[i].flags & TIER_BG_ALWAYS))
			continue;
		bool want = steps[i].flags & TIER_BG_LOCKED;
		if (want != locked) {
			if (want)
				tier_balance_lock();
			else
				tier_balance_unlock();
			locked = want;
		}
		steps[i].run(r);
	}
	if (locked)
		tier_balance_unlock();
}

static int hist_bucket(uint64_t ns)
{
	if (ns < 1000)
		return 0;
	int k = (int)(4.0 * log2((double)ns / 1000.0));
	return k >= TIER_BG_HIST ? TIER_BG_HIST - 1 : k;
}

uint64_t tier_bg_quantile(_Atomic uint64_t *hist, double q)
{
	uint64_t total = 0, acc = 0;
	for (int k = 0; k < TIER_BG_HIST; k++)
		total += atomic_load(&hist[k]);
	if (!total)
		return 0;
	for (int k = 0; k < TIER_BG_HIST; k++) {
		acc += atomic_load(&hist[k]);
		if ((double)acc >= q * (double)total)
			return (uint64_t)(1000.0 * exp2((k + 1) / 4.0));
	}
	return 0;
}

/* Nothing could move and nobody asked for advice: the cheap watch. */
static bool nothing_to_do(void)
{
	if (tier_settings.advise)
		return false;
	if (!atomic_load(&tier_place.active) || !tier_settings.migrate)
		return true;
	for (int t = 1; t < tier_place.ntiers; t++)
		if (atomic_load(&tier_place_stats.committed[t]))
			return false;
	double high = (double)atomic_load(&tier_place.fast_limit) * tier_settings.watermark_high;
	return (double)atomic_load(&tier_place_stats.committed[0]) <= high;
}

/* Whether descriptor fd is still our eventfd: a program may close every
 * descriptor (daemons do) and reuse the number for a file, pipe or socket
 * of its own, which we must neither read nor close.  Asked only when the
 * descriptor wakes us (rare: kicks). */
static bool evfd_ours(int fd)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	return tier_read_file(path, buf, sizeof(buf)) > 0 && strstr(buf, "eventfd-count:");
}

/* Something to track: tiering on, or the advisor asked for. */
static bool tiering_wanted(void)
{
	return atomic_load(&tier_place.active) || tier_settings.advise;
}

/* Costs outside this thread, summed by kind over the sources. */
struct costs {
	uint64_t out[TIER_COST_KINDS];
};

static void costs_read(struct costs *c)
{
	*c = (struct costs){{0}};
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		for (int k = 0; k < TIER_COST_KINDS; k++)
			c->out[k] += tier_heat_cost_ns(i, k);
}

static void *bg_main(void *arg)
{
	(void)arg;
	/* bind to the spare arena now, while it is there: the sources'
	 * start (DAMON's setup) can take seconds, and the program may reach
	 * a memory limit meanwhile (tier_arena_spare_ready) */
	tier_thread_enter(0);
	pthread_setname_np(pthread_self(), "tiermalloc-bg");
	atomic_store(&tier_bg_stats.tid, (long)syscall(SYS_gettid));
	/* with only the control channel wanted (ctl:true, nothing to tier),
	 * no heat source runs until tiering is switched on */
	bool tracking = tiering_wanted();
	if (tracking)
		tier_heat_start(tier_settings.heat_sources);
	struct tier_budget bud;
	tier_budget_init(&bud, tier_settings.bg_cpu, tier_settings.period_ms * 1e6);
	/* tracking starts knowing nothing: that is a gain to look for */
	struct tier_burst burst;
	tier_burst_init(&burst, tier_clock_ns(CLOCK_MONOTONIC));
	bool gain = tracking;
	struct costs c0;
	costs_read(&c0);
	uint64_t mig0 = atomic_load(&tier_migrate_stats.ns);
	uint32_t period = 0;
	uint64_t next = tier_clock_ns(CLOCK_MONOTONIC), last_start = next;
	unsigned quiet = 0, floor_hits = 0;
	/* the sources that share machine-wide state (DAMON's kdamond) start
	 * paused and are woken the first period something could move */
	bool woke = false;
	double shed_at = 0; /* bg_cpu when a source was shed */
	uint64_t between_ns = 0; /* CPU spent between two periods (short windows) */
	while (!atomic_load(&stop_req)) {
		unsigned period_ms = tier_settings.period_ms;
		uint64_t now = tier_clock_ns(CLOCK_MONOTONIC);
		if (now < next) {
			struct pollfd fds[64];
			fds[0] = (struct pollfd){.fd = evfd, .events = POLLIN};
			int n = 1 + tier_heat_pollfds(fds + 1, 63);
			/* dense blocks' short windows end within the period */
			uint64_t short_at = tracking ? tier_monitor_short_at() : 0;
			uint64_t wake = short_at && short_at < next ? short_at : next;
			int r = poll(fds, (nfds_t)n, wake > now ? (int)((wake - now) / 1000000) + 1 : 0);
			/* the program closed it (daemons close every descriptor):
			 * kicks are lost, knob changes wait for the period */
			if (r > 0 && fds[0].revents && (fds[0].revents & POLLNVAL || !evfd_ours(evfd))) {
				evfd = -1;
				fds[0].revents = 0;
			}
			if (r > 0 && (fds[0].revents & POLLIN)) {
				uint64_t v;
				if (read(evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
					break;
			}
			bool burst = false;
			for (int i = 1; r > 0 && i < n; i++)
				burst |= fds[i].revents & POLLIN;
			if (atomic_load(&stop_req))
				break;
			now = tier_clock_ns(CLOCK_MONOTONIC);
			if (short_at && now >= short_at) {
				uint64_t c = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID);
				tier_balance_lock();
				tier_monitor_short_measure();
				tier_balance_unlock();
				between_ns += tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c;
				continue;
			}
			if (!burst && now < next) {
				/* woken by error states only (a closed descriptor):
				 * wait out the period instead of spinning */
				if (r > 0 && !(fds[0].revents & POLLIN))
					poll(NULL, 0, (int)((next - now) / 1000000) + 1);
				continue;
			}
			if (burst)
				atomic_fetch_add(&tier_bg_stats.early_wakeups, 1);
		}
		uint64_t start = tier_clock_ns(CLOCK_MONOTONIC);
		if (!tracking) {
			tracking = tiering_wanted();
			if (tracking)
				tier_heat_start(tier_settings.heat_sources);
			gain = tracking;
		}
		if (!tracking) {
			struct tier_bg_round idle = {.period = period};
			run_steps(&idle, false);
			atomic_store(&tier_bg_stats.periods, ++period);
			next = start + (uint64_t)period_ms * 1000000ull;
			continue;
		}
		uint64_t cpu0 = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID);
		bool burst_began, was_burst = burst.active;
		double target = tier_burst_step(&burst, start, gain, tier_settings.bg_cpu, tier_settings.bg_cpu_burst,
						&burst_began);
		/* a burst is there to look, not to pay back; and what it overspent
		 * was paid from its bank: carried into the steady budget, 3-4 ms
		 * of it stopped the monitor for 15 periods after each burst */
		if (burst_began || (was_burst && !burst.active))
			bud.debt_ns = 0;
		if (target != bud.target || burst_began)
			tier_budget_retarget(&bud, target);
		atomic_store(&tier_bg_stats.burst, burst.active);
		atomic_store(&tier_bg_stats.bursts, burst.bursts);
		atomic_store(&tier_bg_stats.burst_ms, (uint64_t)burst.burst_ms);
		quiet = nothing_to_do() ? quiet + 1 : 0;
		if (!quiet && !woke) {
			woke = true;
			tier_heat_pause(false);
		}
		double decay = exp2(-(double)period_ms / (double)tier_settings.heat_half_life_ms);

		struct tier_bg_round round = {.period = ++period, .decay = decay,
					      .allowance_ns = tier_budget_allowance(&bud),
					      .idle = quiet >= IDLE_ENTER};
		run_steps(&round, true);
		uint64_t faults = round.fault_ns, sched = round.sched_ns;
		gain = atomic_load(&tier_balance_stats.gain);

		/* what this period cost, everywhere */
		uint64_t self = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0 + between_ns;
		between_ns = 0;
		struct costs c1;
		costs_read(&c1);
		uint64_t d[TIER_COST_KINDS];
		for (int k = 0; k < TIER_COST_KINDS; k++)
			d[k] = c1.out[k] - c0.out[k];
		/* the scheduled part (what the allowance buys: the visits and the
		 * write faults they charge) and the rest: this thread's other
		 * work, the sources' threads and kernel threads */
		uint64_t total = self + d[TIER_COST_THREAD] + d[TIER_COST_KERNEL] + faults;
		c0 = c1;
		/* moving is not tracking: the rate limits, significance and
		 * back-off bound it (stats.migrate_ns says what it cost); left in,
		 * a round of moves took the monitor's allowance for seconds */
		uint64_t mig1 = atomic_load(&tier_migrate_stats.ns), mig = mig1 - mig0;
		mig0 = mig1;
		total = total > mig ? total - mig : 0;
		if (sched > total)
			sched = total;
		tier_budget_update(&bud, (double)sched, (double)(total - sched), (double)(start - last_start));
		last_start = start;
		if (bud.push_dir) {
			bool stepped = tier_heat_adjust(bud.push_dir);
			/* far over with every push source at its coarsest: after
			 * a few tries, pause the costliest (the pull source goes
			 * on); it stays paused until bg_cpu grows */
			if (bud.push_dir < 0 && !stepped && quiet < IDLE_ENTER &&
			    bud.other_ns > bud.target * bud.wall_ns) {
				if (++floor_hits >= SHED_AFTER &&
				    tier_heat_shed(bud.target) >= 0)
					shed_at = tier_settings.bg_cpu;
			} else {
				floor_hits = 0;
			}
		}
		/* bg_cpu raised, not a burst: resuming at each burst and pausing
		 * after it reconfigured the shared kdamond every few seconds */
		if (shed_at > 0 && tier_settings.bg_cpu > shed_at) {
			tier_heat_unshed();
			shed_at = 0;
			floor_hits = 0;
		}

		atomic_fetch_add(&tier_bg_stats.cpu_ns, self + d[TIER_COST_THREAD]);
		atomic_fetch_add(&tier_bg_stats.kernel_ns, d[TIER_COST_KERNEL]);
		atomic_fetch_add(&tier_bg_stats.fault_ns, d[TIER_COST_FAULTS]);
		atomic_store(&tier_bg_stats.share, bud.share);
		atomic_fetch_add(&tier_bg_stats.period_cost[hist_bucket(total)], 1);
		if (!burst.active && !was_burst)
			atomic_fetch_add(&tier_bg_stats.steady_cost[hist_bucket(total)], 1);
		atomic_fetch_add(&tier_bg_stats.period_wall[hist_bucket(tier_clock_ns(CLOCK_MONOTONIC) - start)], 1);
		atomic_store(&tier_bg_stats.periods, period);
		/* fixed rate: a slow round shortens the wait rather than
		 * stretching the period */
		next = start + (uint64_t)period_ms * 1000000ull;
	}
	if (tracking) {
		tier_heat_stop();
		for (size_t i = 0; i < nsteps; i++)
			if (steps[i].stop)
				steps[i].stop();
	}
	return NULL;
}

TIER_STARTUP void tier_bg_start(void)
{
	if (started || (!tiering_wanted() && !tier_settings.ctl))
		return;
	if (!tier_arena_spare_ready())
		return; /* retried at the next start request */
	evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (evfd < 0)
		return;
	atomic_store(&stop_req, false);
	/* the program's signals are not ours to take: the thread (and the
	 * source threads it starts) inherit a mask that blocks them all */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, TIER_THREAD_STACK);
	int e = pthread_create(&thread, &attr, bg_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		close(evfd);
		evfd = -1;
		return;
	}
	started = true;
	atomic_store(&tier_bg_stats.running, true);
	atomic_store(&tier_bg_stats.started_ns, tier_clock_ns(CLOCK_MONOTONIC));
}

void tier_bg_kick(void)
{
	int fd = evfd;
	/* never 8 bytes into a file of the program's that took the number */
	if (started && fd >= 0 && evfd_ours(fd)) {
		uint64_t one = 1;
		if (write(fd, &one, sizeof(one)) < 0) {
			/* the counter is saturated: the thread is awake anyway */
		}
	}
}

TIER_STARTUP void tier_bg_stop(void)
{
	if (!started)
		return;
	atomic_store(&stop_req, true);
	tier_bg_kick();
	pthread_join(thread, NULL);
	if (evfd >= 0 && evfd_ours(evfd))
		close(evfd);
	evfd = -1;
	started = false;
	atomic_store(&tier_bg_stats.running, false);
}

void tier_bg_after_fork_child(void)
{
	if (!started)
		return;
	/* the parent's thread, descriptors and source registrations are its own */
	started = false;
	if (evfd >= 0 && evfd_ours(evfd))
		close(evfd);
	evfd = -1;
	tier_heat_forget();
	tier_monitor_forget();
	atomic_store(&tier_bg_stats.running, false);
	atomic_store(&tier_bg_stats.cpu_ns, 0);
	atomic_store(&tier_bg_stats.kernel_ns, 0);
	atomic_store(&tier_bg_stats.fault_ns, 0);
	atomic_store(&tier_bg_stats.periods, 0);
	atomic_store(&tier_bg_stats.tid, 0);
	for (int k = 0; k < TIER_BG_HIST; k++) {
		atomic_store(&tier_bg_stats.period_cost[k], 0);
		atomic_store(&tier_bg_stats.steady_cost[k], 0);
		atomic_store(&tier_bg_stats.period_wall[k], 0);
	}
	tier_bg_start();
}
