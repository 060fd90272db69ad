/* perf: hardware load sampling with data addresses (Intel PEBS load
 * latency, AMD IBS op).  Sees loads, so read-only hot data too.  Events
 * are per thread (user space only, inherited by the threads each one
 * creates later, whose samples land in the creator's ring): what the
 * kernel allows an unprivileged process at perf_event_paranoid <= 2, one
 * event and ring per thread alive at start except ours.  Where that fails
 * and the kernel allows it (paranoid <= 1 or CAP_PERFMON), one ring per
 * CPU for the process instead. */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <stdlib.h>
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
	bool per_cpu;
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
			 errno == EACCES || errno == EPERM ? " (perf_event_paranoid > 2 and no CAP_PERFMON)"
							    : "");
		return -1;
	}
	close((int)fd);
	return 0;
}

static void perf_forget_rings(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (int i = 0; i < perf.n; i++) {
		munmap(perf.ring[i], (RING_PAGES + 1) * page);
		close(perf.fd[i]);
	}
	perf.n = 0;
}

static bool add_ring(const struct perf_event_attr *a, pid_t pid, int cpu, size_t page)
{
	if (perf.n == MAX_CPUS)
		return false;
	long fd = pe_open((struct perf_event_attr *)a, pid, cpu);
	if (fd < 0)
		return false;
	void *r = mmap(NULL, (RING_PAGES + 1) * page, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
	if (r == MAP_FAILED) {
		close((int)fd);
		return false;
	}
	perf.fd[perf.n] = (int)fd;
	perf.ring[perf.n++] = r;
	return true;
}

/* One event per thread of the program alive now (not ours: their names
 * start with "tiermalloc-"). */
struct threads_ctx {
	const struct perf_event_attr *a;
	size_t page;
	int failed;
};

static int thread_entry(const char *name, void *arg)
{
	struct threads_ctx *c = arg;
	char path[64], comm[32];
	snprintf(path, sizeof(path), "/proc/self/task/%s/comm", name);
	if (tier_read_file(path, comm, sizeof(comm)) > 0 && !strncmp(comm, "tiermalloc-", 11))
		return 0;
	if (!add_ring(c->a, (pid_t)atoi(name), -1, c->page))
		c->failed++;
	return 0;
}

static int perf_start(char *why, size_t len)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct perf_event_attr a;
	tier_perf_attr(&a, perf.kind, perf.type, perf.period, 30, RING_PAGES * (uint32_t)page / 2);
	perf.n = 0;
	perf.per_cpu = false;
	struct threads_ctx c = {&a, page, 0};
	tier_dir_each("/proc/self/task", thread_entry, &c);
	if (perf.n && !c.failed)
		return 0;
	/* per-thread events refused: one ring per CPU for the whole process */
	perf_forget_rings();
	perf.per_cpu = true;
	for (long cpu = 0; cpu < ncpu && cpu < MAX_CPUS; cpu++)
		add_ring(&a, getpid(), (int)cpu, page); /* an offline CPU refuses */
	if (!perf.n) {
		snprintf(why, len, "no thread or CPU accepted the sampling event");
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
	perf_forget_rings();
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
