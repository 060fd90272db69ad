/* The perf source's pure parts, unit-tested on constructed sample buffers
 * (no PMU here: neither the build machines nor the TCG guest have one). */
#ifndef TIER_HEAT_PERF_H
#define TIER_HEAT_PERF_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

enum tier_pmu_kind { TIER_PMU_NONE, TIER_PMU_INTEL_PEBS, TIER_PMU_AMD_IBS };

/* Build the sampling event: Intel PEBS load-latency loads
 * (MEM_TRANS_RETIRED.LOAD_LATENCY, event 0xcd umask 0x01, precise) or AMD
 * IBS op samples, with PERF_SAMPLE_TID | PERF_SAMPLE_ADDR.  pmu_type is the
 * PMU's dynamic type from sysfs (IBS) or PERF_TYPE_RAW (Intel). */
void tier_perf_attr(struct perf_event_attr *attr, enum tier_pmu_kind kind, uint32_t pmu_type,
                    uint64_t period, uint32_t ldlat, uint32_t wakeup_bytes);

struct tier_perf_parse_stats {
	uint64_t samples, lost, other;
};

/* Walk the records of a perf ring buffer (data area of `size` bytes, a
 * power of two) between the byte counters tail and head, calling fn for the
 * data address of every sample of process pid (0: any).  Records may wrap
 * around the end of the area.  Returns the new tail (== head, or where a
 * truncated record starts). */
uint64_t tier_perf_parse(const unsigned char *data, uint64_t size, uint64_t tail, uint64_t head,
                         uint32_t pid, void (*fn)(void *arg, uint64_t addr), void *arg,
                         struct tier_perf_parse_stats *st);

#endif
