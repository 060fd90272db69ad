/* The perf source's event setup and ring-buffer parsing, on buffers built
 * per the perf_event ABI (no PMU on these machines). */
#include <string.h>

#include "../tap.h"
#include "heat_perf.h"

#define SIZE 256 /* a tiny ring so that records wrap */
static unsigned char ring[SIZE];
static uint64_t addrs[64];
static int naddr;

static void put(uint64_t *head, const void *rec, size_t len)
{
	for (size_t i = 0; i < len; i++)
		ring[(*head + i) % SIZE] = ((const unsigned char *)rec)[i];
	*head += len;
}

static void sample(uint64_t *head, uint32_t pid, uint64_t addr)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, tid;
		uint64_t addr;
	} r = {{PERF_RECORD_SAMPLE, 0, sizeof(r)}, pid, pid + 1, addr};
	put(head, &r, sizeof(r));
}

static void collect(void *arg, uint64_t addr)
{
	(void)arg;
	addrs[naddr++] = addr;
}

int main(void)
{
	struct perf_event_attr a;
	tier_perf_attr(&a, TIER_PMU_INTEL_PEBS, PERF_TYPE_RAW, 4001, 30, 4096);
	ok(a.type == PERF_TYPE_RAW && a.config == 0x01cd && a.config1 == 30 && a.precise_ip == 2 &&
		   a.sample_type == (PERF_SAMPLE_TID | PERF_SAMPLE_ADDR) && a.inherit && a.exclude_kernel &&
		   a.sample_period == 4001 && a.watermark && a.wakeup_watermark == 4096,
	   "Intel: PEBS load-latency event with data addresses");
	tier_perf_attr(&a, TIER_PMU_AMD_IBS, 11, 100000, 0, 4096);
	ok(a.type == 11 && a.config == 0 && a.precise_ip == 0 && (a.sample_type & PERF_SAMPLE_ADDR),
	   "AMD: IBS op PMU type from sysfs");

	uint64_t head = 0, tail = 0;
	struct tier_perf_parse_stats st = {0};
	sample(&head, 42, 0x1000);
	sample(&head, 42, 0x2000);
	sample(&head, 7, 0x3000); /* another process */
	struct {
		struct perf_event_header h;
		uint64_t id, lost;
	} lost = {{PERF_RECORD_LOST, 0, sizeof(lost)}, 1, 5};
	put(&head, &lost, sizeof(lost));
	struct perf_event_header throttle = {PERF_RECORD_THROTTLE, 0, sizeof(throttle) + 24};
	put(&head, &throttle, sizeof(throttle));
	head += 24;
	tail = tier_perf_parse(ring, SIZE, tail, head, 42, collect, NULL, &st);
	ok(tail == head && naddr == 2 && addrs[0] == 0x1000 && addrs[1] == 0x2000,
	   "samples of our pid parsed, others skipped");
	ok(st.samples == 2 && st.lost == 5 && st.other == 1, "lost and other records counted");

	/* wrap-around: records cross the end of the ring */
	naddr = 0;
	for (int i = 0; i < 9; i++) /* 216 bytes unread, starting mid-ring */
		sample(&head, 42, 0x10000 + (uint64_t)i * 64);
	tail = tier_perf_parse(ring, SIZE, tail, head, 42, collect, NULL, &st);
	int right = naddr == 9 && head / SIZE != (head - 216) / SIZE;
	for (int i = 0; i < naddr; i++)
		right &= addrs[i] == 0x10000 + (uint64_t)i * 64;
	ok(right && tail == head, "records wrapping the ring's end are read whole (%d)", naddr);

	/* a record not fully written yet stops the walk */
	naddr = 0;
	uint64_t h2 = head;
	sample(&h2, 42, 0x5000);
	uint64_t t2 = tier_perf_parse(ring, SIZE, tail, h2 - 8, 42, collect, NULL, &st);
	ok(t2 == tail && naddr == 0, "a partial record is left for the next round");
	t2 = tier_perf_parse(ring, SIZE, tail, h2, 42, collect, NULL, &st);
	ok(t2 == h2 && naddr == 1 && addrs[0] == 0x5000, "and read once complete");

	/* garbage size field: stop rather than loop */
	struct perf_event_header bad = {PERF_RECORD_SAMPLE, 0, 2};
	uint64_t h3 = h2;
	put(&h3, &bad, sizeof(bad));
	ok(tier_perf_parse(ring, SIZE, h2, h3, 42, collect, NULL, &st) == h2,
	   "a record with an impossible size stops the walk");
	return done();
}
