#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "advise.h"
#include "bg.h"
#include "knobs.h"
#include "monitor.h"

#define TICK_NS 1000000000ull

struct tier_advise_stats tier_advise_stats;
static uint64_t last_tick, first_tick;
static int csv_fd = -1;

static const double fractions[3] = {0.90, 0.95, 0.99};
static const uint64_t windows_ms[3] = {1000, 10000, 60000};

static void csv_row(uint64_t t_ms)
{
	if (!tier_settings.advise_csv[0] || atomic_load(&tier_advise_stats.csv_errno))
		return;
	if (csv_fd < 0) {
		/* 0644: the user's own file, readable by the bench that plots it */
		csv_fd = open(tier_settings.advise_csv, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
			      0644);
		if (csv_fd < 0) {
			atomic_store(&tier_advise_stats.csv_errno, errno);
			tier_log("advise_csv %s: %m; no hot-set rows written", tier_settings.advise_csv);
			return;
		}
		struct stat st;
		if (fstat(csv_fd, &st) == 0 && st.st_size == 0) {
			static const char head[] = "t_ms,pid,tracked_bytes,seen_1s,seen_10s,seen_60s,"
						   "size_90,size_95,size_99,bg_share_ppm\n";
			if (write(csv_fd, head, sizeof(head) - 1) < 0)
				atomic_store(&tier_advise_stats.csv_errno, errno);
		}
	}
	char line[256];
	int n = snprintf(line, sizeof(line), "%llu,%d,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n",
			 (unsigned long long)t_ms, (int)getpid(),
			 (unsigned long long)atomic_load(&tier_advise_stats.tracked),
			 (unsigned long long)atomic_load(&tier_advise_stats.seen[0]),
			 (unsigned long long)atomic_load(&tier_advise_stats.seen[1]),
			 (unsigned long long)atomic_load(&tier_advise_stats.seen[2]),
			 (unsigned long long)atomic_load(&tier_advise_stats.size[0]),
			 (unsigned long long)atomic_load(&tier_advise_stats.size[1]),
			 (unsigned long long)atomic_load(&tier_advise_stats.size[2]),
			 (unsigned long long)(atomic_load(&tier_bg_stats.share) * 1e6));
	if (n > 0 && write(csv_fd, line, (size_t)n) == n)
		atomic_fetch_add(&tier_advise_stats.rows, 1);
	else
		atomic_store(&tier_advise_stats.csv_errno, errno ? errno : EIO);
}

void tier_advise_tick(bool final)
{
	uint64_t now = tier_clock_ns(CLOCK_MONOTONIC);
	if (!first_tick)
		first_tick = now;
	if (!final && now - last_tick < TICK_NS)
		return;
	last_tick = now;
	const struct tier_hist *h[TIER_MAX_TIERS];
	int n = 0;
	uint64_t tracked = 0;
	for (; n < TIER_MAX_TIERS; n++) {
		h[n] = tier_monitor_hist(n);
		tracked += h[n]->total;
	}
	uint64_t pages[3];
	tier_hist_curve(h, n, fractions, 3, pages);
	for (int i = 0; i < 3; i++) {
		atomic_store(&tier_advise_stats.size[i], pages[i] << TIER_PAGE_SHIFT);
		atomic_store(&tier_advise_stats.seen[i], tier_monitor_seen_pages(windows_ms[i]) << TIER_PAGE_SHIFT);
	}
	atomic_store(&tier_advise_stats.tracked, tracked << TIER_PAGE_SHIFT);
	atomic_fetch_add(&tier_advise_stats.updates, 1);
	csv_row((now - first_tick) / 1000000);
	if (final && csv_fd >= 0) {
		close(csv_fd);
		csv_fd = -1;
	}
}

const char *const tier_advise_names[TIER_ADVISE_VALUES] = {"seen_1s", "seen_10s", "seen_60s", "size_90",
							   "size_95", "size_99", "tracked"};

uint64_t tier_advise_value(int i)
{
	return i < 3 ? atomic_load(&tier_advise_stats.seen[i])
	       : i < 6 ? atomic_load(&tier_advise_stats.size[i - 3])
		       : atomic_load(&tier_advise_stats.tracked);
}
