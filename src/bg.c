#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bg.h"
#include "heat.h"
#include "init.h"
#include "place.h"
#include "registry.h"
#include "tiering.h"

#define IDLE_ROUNDS 10 /* periods without a move before backing off */
#define IDLE_STRIDE 4  /* then collect every 4th period */

struct tier_bg_stats tier_bg_stats;
static pthread_t thread;
static int evfd = -1;
static _Atomic bool stop_req;
static bool started;

static void *bg_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "tiermalloc-bg");
	atomic_store(&tier_bg_stats.tid, (long)syscall(SYS_gettid));
	tier_heat_start(tier_settings.heat_sources);
	uint64_t period = 0, next = tier_clock_ns(CLOCK_MONOTONIC);
	unsigned idle = 0, since = 0;
	while (!atomic_load(&stop_req)) {
		unsigned period_ms = tier_settings.period_ms;
		uint64_t now = tier_clock_ns(CLOCK_MONOTONIC);
		if (now < next) {
			struct pollfd fds[64];
			fds[0] = (struct pollfd){.fd = evfd, .events = POLLIN};
			int n = 1 + tier_heat_pollfds(fds + 1, 63);
			int r = poll(fds, (nfds_t)n, (int)((next - now) / 1000000) + 1);
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
			if (!burst && tier_clock_ns(CLOCK_MONOTONIC) < next)
				continue;
			if (burst) {
				atomic_fetch_add(&tier_bg_stats.early_wakeups, 1);
				idle = 0;
			}
		}
		uint64_t start = tier_clock_ns(CLOCK_MONOTONIC);
		uint64_t cpu0 = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID);
		/* Steady state (nothing moved for a while): read the sources every
		 * IDLE_STRIDE periods only; they cost most of this thread's time.
		 * Any move, or a burst, goes back to every period. */
		unsigned stride = idle >= IDLE_ROUNDS ? IDLE_STRIDE : 1;
		bool full = ++since >= stride;
		tier_heat_collect(since, full);
		if (full)
			since = 0;
		if (tier_balance(++period, period_ms))
			idle = 0;
		else
			idle++;
		tier_registry_reclaim();
		atomic_fetch_add(&tier_bg_stats.cpu_ns, tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0);
		atomic_store(&tier_bg_stats.periods, period);
		/* fixed rate: a slow round (DAMON answers at its next aggregation)
		 * shortens the wait rather than stretching the period */
		next = start + (uint64_t)period_ms * 1000000ull;
	}
	tier_heat_stop();
	return NULL;
}

void tier_bg_start(void)
{
	if (started || !atomic_load(&tier_place.active))
		return;
	evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (evfd < 0)
		return;
	atomic_store(&stop_req, false);
	/* the program's signals are not ours to take: the thread (and the
	 * source threads it starts) inherit a mask that blocks them all */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(&thread, NULL, bg_main, NULL);
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
	if (started) {
		uint64_t one = 1;
		if (write(evfd, &one, sizeof(one)) < 0) {
			/* the counter is saturated: the thread is awake anyway */
		}
	}
}

void tier_bg_stop(void)
{
	if (!started)
		return;
	atomic_store(&stop_req, true);
	tier_bg_kick();
	pthread_join(thread, NULL);
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
	close(evfd);
	evfd = -1;
	tier_heat_forget();
	atomic_store(&tier_bg_stats.running, false);
	atomic_store(&tier_bg_stats.cpu_ns, 0);
	atomic_store(&tier_bg_stats.periods, 0);
	atomic_store(&tier_bg_stats.tid, 0);
	tier_bg_start();
}
