/* The perf source's pure parts: event attributes and ring-buffer parsing
 * (unit-tested without a PMU). */
#include <string.h>

#include "heat_perf.h"

void tier_perf_attr(struct perf_event_attr *a, enum tier_pmu_kind kind, uint32_t pmu_type,
                    uint64_t period, uint32_t ldlat, uint32_t wakeup_bytes)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->sample_period = period;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_ADDR;
	a->disabled = 0;
	a->inherit = 1;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->watermark = 1;
	a->wakeup_watermark = wakeup_bytes;
	if (kind == TIER_PMU_INTEL_PEBS) {
		a->type = PERF_TYPE_RAW;
		a->config = 0x01cd;   /* MEM_TRANS_RETIRED.LOAD_LATENCY */
		a->config1 = ldlat;   /* load-latency threshold, cycles */
		a->precise_ip = 2;    /* PEBS: the sampled load's own address */
	} else {
		a->type = pmu_type;   /* ibs_op */
		a->config = 0;
	}
}

/* Copy len bytes at ring offset off, wrapping at the end. */
static void ring_copy(void *dst, const unsigned char *data, uint64_t size, uint64_t off, size_t len)
{
	uint64_t o = off & (size - 1);
	size_t first = len < size - o ? len : (size_t)(size - o);
	memcpy(dst, data + o, first);
	if (first < len)
		memcpy((char *)dst + first, data, len - first);
}

uint64_t tier_perf_parse(const unsigned char *data, uint64_t size, uint64_t tail, uint64_t head,
                         uint32_t pid, void (*fn)(void *arg, uint64_t addr), void *arg,
                         struct tier_perf_parse_stats *st)
{
	while (head - tail >= sizeof(struct perf_event_header)) {
		struct perf_event_header h;
		ring_copy(&h, data, size, tail, sizeof(h));
		if (h.size < sizeof(h) || h.size > head - tail)
			break; /* not fully written yet, or garbage: stop here */
		if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof(h) + 16) {
			struct { uint32_t pid, tid; uint64_t addr; } body;
			ring_copy(&body, data, size, tail + sizeof(h), sizeof(body));
			if (!pid || body.pid == pid) {
				st->samples++;
				if (body.addr)
					fn(arg, body.addr);
			}
		} else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
			uint64_t v[2];
			ring_copy(v, data, size, tail + sizeof(h), sizeof(v));
			st->lost += v[1];
		} else {
			st->other++;
		}
		tail += h.size;
	}
	return tail;
}

