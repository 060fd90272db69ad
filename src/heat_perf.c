/* perf: hardware load sampling with data addresses (Intel PEBS load
 * latency, AMD IBS op), one ring buffer per CPU, inherited by the threads
 * the main thread creates after the source starts.  Needs a hardware PMU
 * and perf_event_paranoid <= 1 (or CAP_PERFMON). */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "heat.h"
#include "heat_perf.h"
#include "sysfs.h"

#define RING_PAGES 8 /* data pages per CPU, a power of two */
#define MAX_CPUS 256

/* Sample period bounds: the budget doubles the period (fewer samples)
 * when this source costs too much, and halves it back when there is room. */
#define PERIOD_MIN 4001
#define PERIOD_MAX (4001 << 8)

static struct {
	int fd[MAX_CPUS];
	void *ring[MAX_CPUS];
	int n;
	enum tier_pmu_kind kind;
	uint32_t type;
	uint64_t lost;
	uint64_t period;
} perf = {.period = PERIOD_MIN};

static long pe_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, -1, 0UL);
}

static enum tier_pmu_kind detect(uint32_t *type, char *why, size_t len)
{
	unsigned a, b, c, d;
	char vendor[13] = {0};
	long long t;
	if (!__get_cpuid(0, &a, &b, &c, &d)) {
		snprintf(why, len, "no CPUID");
		return TIER_PMU_NONE;
	}
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	if (!strcmp(vendor, "AuthenticAMD")) {
		if (tier_read_long("/sys/bus/event_source/devices/ibs_op/type", &t) == 0) {
			*type = (uint32_t)t;
			return TIER_PMU_AMD_IBS;
		}
		snprintf(why, len, "no hardware PMU (no IBS op PMU in sysfs)");
		return TIER_PMU_NONE;
	}
	if (!strcmp(vendor, "GenuineIntel")) {
		char buf[64];
		if (tier_read_file("/sys/bus/event_source/devices/cpu/caps/pmu_name", buf, sizeof(buf)) > 0 ||
		    tier_read_file("/sys/bus/event_source/devices/cpu_core/caps/pmu_name", buf,
				   sizeof(buf)) > 0) {
			*type = PERF_TYPE_RAW;
			return TIER_PMU_INTEL_PEBS;
		}
		snprintf(why, len, "no hardware PMU (no cpu PMU in sysfs: a VM without vPMU?)");
		return TIER_PMU_NONE;
	}
	snprintf(why, len, "no hardware PMU with data-address sampling for CPU vendor %s", vendor);
	return TIER_PMU_NONE;
}

static int perf_probe(char *why, size_t len)
{
	perf.kind = detect(&perf.type, why, len);
	if (perf.kind == TIER_PMU_NONE)
		return -1;
	struct perf_event_attr a;
	tier_perf_attr(&a, perf.kind, perf.type, 4001, 30, RING_PAGES * 2048);
	long fd = pe_open(&a, getpid(), -1);
	if (fd < 0) {
		snprintf(why, len, "perf_event_open: %s%s", strerror(errno),
			 errno == EACCES || errno == EPERM ? " (perf_event_paranoid > 1 and no CAP_PERFMON)"
							    : "");
		return -1;
	}
	close((int)fd);
	return 0;
}

static int perf_start(char *why, size_t len)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct perf_event_attr a;
	tier_perf_attr(&a, perf.kind, perf.type, perf.period, 30, RING_PAGES * (uint32_t)page / 2);
	perf.n = 0;
	for (long c = 0; c < ncpu && c < MAX_CPUS; c++) {
		long fd = pe_open(&a, getpid(), (int)c);
		if (fd < 0)
			continue; /* offline CPU */
		void *r = mmap(NULL, (RING_PAGES + 1) * page, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
		if (r == MAP_FAILED) {
			close((int)fd);
			continue;
		}
		perf.fd[perf.n] = (int)fd;
		perf.ring[perf.n++] = r;
	}
	if (!perf.n) {
		snprintf(why, len, "no CPU accepted the sampling event");
		return -1;
	}
	return 0;
}

static void on_sample(void *arg, uint64_t addr)
{
	(void)arg;
	/* one sample stands for `period` events: weigh it so, so that the
	 * rate does not change when the budget changes the period */
	tier_heat_report(TIER_SRC_PERF, (uintptr_t)addr, 1,
			 (uint32_t)(TIER_HEAT_UNIT * (perf.period / PERIOD_MIN)));
}

static void perf_collect(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (int i = 0; i < perf.n; i++) {
		struct perf_event_mmap_page *mp = perf.ring[i];
		uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
		uint64_t tail = mp->data_tail;
		struct tier_perf_parse_stats st = {0};
		tail = tier_perf_parse((unsigned char *)mp + page, (uint64_t)RING_PAGES * page, tail, head,
				       (uint32_t)getpid(), on_sample, NULL, &st);
		__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
		perf.lost += st.lost;
	}
}

static void perf_forget(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (int i = 0; i < perf.n; i++) {
		munmap(perf.ring[i], (RING_PAGES + 1) * page);
		close(perf.fd[i]);
	}
	perf.n = 0;
}

static bool perf_adjust(int dir)
{
	uint64_t p = dir < 0 ? perf.period * 2 : perf.period / 2;
	if (p < PERIOD_MIN || p > PERIOD_MAX || !perf.n)
		return false;
	perf.period = p;
	for (int i = 0; i < perf.n; i++)
		ioctl(perf.fd[i], PERF_EVENT_IOC_PERIOD, &p);
	return true;
}

static int perf_pollfds(struct pollfd *fds, int max)
{
	int n = 0;
	for (int i = 0; i < perf.n && n < max; i++)
		fds[n++] = (struct pollfd){.fd = perf.fd[i], .events = POLLIN};
	return n;
}

const struct tier_heat_ops tier_heat_perf = {
	.name = "perf",
	.probe = perf_probe,
	.start = perf_start,
	.collect = perf_collect,
	.stop = perf_forget,
	.forget = perf_forget,
	.pollfds = perf_pollfds,
	.adjust = perf_adjust,
	.sees_reads = true,
};
