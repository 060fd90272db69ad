/* cxl: heat from CXL hot lists (a device's Hotness Monitoring Unit names
 * the device memory it saw accessed most).  Records come as versioned text
 * (cxl_report.h) from the file or FIFO named by cxl_reports, read by the
 * background thread each period, or in batches written to
 * tier.cxl.report.  A record names host physical memory; the reverse map
 * (cxl_map.h) takes page frames back to our slow-tier blocks, and the
 * frames named get heat by the combination rule (tier_cxl_weight).  Hot
 * lists are lossy, so every record that is not clearly ours is counted
 * and dropped, never acted on.
 *
 * The reverse map is kept between periods and brought up to date only in
 * periods that have records: a walk over the blocks' state words (memory
 * only) finds the slow blocks that were placed afresh, committed or
 * decommitted, or moved by the migrator since their frames were read, and
 * only those are read again from /proc/self/pagemap; blocks whose pages
 * were not all present yet are read again after 1, 2, 4 .. 64 periods,
 * and CXL_ROLL others a period, in turn, for moves nobody tells us of
 * (compaction, reclaim).  The pages the map names are read once more
 * before they get heat (one read per block, over their span), so a stale
 * entry costs a read, never heat on the wrong page.
 *
 * No malloc: the queue, the records and the pagemap buffer are static and
 * bounded, the map is mmap'd and bounded (CXL_MAP_SLOTS, CXL_MAP_PAGES), so
 * a flood of records costs at most CXL_LINES lines a period and lookups of
 * at most the frames the map holds.  The stream is read once a period,
 * never polled: a full FIFO must not wake the thread early again and again.
 *
 * The kernel's CHMU perf PMU (cxl_hmu_mem<X>.<Y>, an RFC driver, not
 * merged) is only detected: its AUX-buffer records have no merged format
 * and no emulator to test against, so none are read from it. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cxl_map.h"
#include "cxl_report.h"
#include "heat.h"
#include "heat_cxl.h"
#include "knobs.h"
#include "sysfs.h"
#include "topology.h"

struct tier_cxl_stats tier_cxl_stats;

#define CXL_QUEUE (64u << 10) /* bytes of batches waiting */
#define CXL_LINES 8192u       /* lines read per period, records or not */
#define CXL_RECS 4096u        /* hpa records resolved per period */
#define PM_PRESENT (1ull << 63)
#define PM_PFN ((1ull << 55) - 1)
#define CXL_MAP_SLOTS (1u << 15)   /* blocks in the reverse map: 64 GiB of slow blocks */
#define CXL_MAP_PAGES (1u << 22)   /* frames in it: 16 GiB (at most 128 MiB of table) */
#define CXL_ROLL 8u                /* mapped blocks read again each period with records */
#define CXL_BACKOFF_MAX 64u        /* periods between reads of a partly present block */
#define CXL_REGION_RECHECK 64u     /* periods between re-reads of the region layout */
#define CXL_REGION_RETRY 4u        /* ... or after a dpa record no region maps */

/* Batches from tier.cxl.report, each starting with a NUL (the header state
 * resets there: a batch carries its own header). */
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static char queue[CXL_QUEUE];
static size_t queue_len;
static int queue_ver;
static _Atomic bool on;

/* The cxl_reports stream: what was read and not yet parsed. */
static int stream_fd = -1;
static bool stream_fifo;
static char stream[16u << 10];
static size_t stream_len;
static int stream_ver;

static int pagemap_fd = -1;
static char note[160];

struct rec {
	uint64_t lo, hi; /* page frames [lo, hi) */
	uint64_t addr, unit, count;
	bool matched;
};
static struct rec recs[CXL_RECS];
static uint32_t nrecs;
static uint64_t pm[TIER_BLOCK / TIER_PAGE];

/* Device ranges of the CXL regions (topology_cxl.c reads them): a dpa
 * record is translated through its memdev's endpoint decoder and region. */
static struct tier_cxl_devmap devmap[TIER_CXL_DEVMAP_MAX];
static int ndevmap;
static uint32_t period, regions_read_at;
static bool regions_read;

static struct tier_cxl_map map;
static bool map_ready;
static uint32_t roll_at;

static void count(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* Read the region layout again (regions come and go: cxl create-region,
 * destroy-region), and count when it changed. */
static void regions_refresh(void)
{
	struct tier_cxl_devmap old[TIER_CXL_DEVMAP_MAX];
	int nold = ndevmap;
	memcpy(old, devmap, sizeof(old));
	memset(devmap, 0, sizeof(devmap));
	unsigned refused = 0;
	/* say a refused region once, not at each re-read */
	ndevmap = tier_topology_cxl_devmap(devmap, TIER_CXL_DEVMAP_MAX, &refused,
					   tier_settings.verbose && !regions_read);
	atomic_store(&tier_cxl_stats.regions_refused, refused);
	count(&tier_cxl_stats.region_reads, 1);
	if (regions_read && (nold != ndevmap || memcmp(old, devmap, sizeof(old))))
		count(&tier_cxl_stats.region_changes, 1);
	regions_read = true;
	regions_read_at = period;
}

enum { DPA_OK, DPA_NONE, DPA_SPANS, DPA_REFUSED };

/* Host physical address of a dpa record. */
static int dpa_lookup(const struct tier_cxl_rec *r, uint64_t *hpa)
{
	for (int i = 0; i < ndevmap; i++) {
		const struct tier_cxl_devmap *d = &devmap[i];
		if (strcmp(d->memdev, r->memdev) || r->addr < d->dpa_base || r->addr - d->dpa_base >= d->dpa_size ||
		    r->addr - d->dpa_base + r->unit > d->dpa_size)
			continue;
		if (d->refused)
			return DPA_REFUSED;
		if (d->ways > 1 && r->unit > d->gran)
			return DPA_SPANS; /* not contiguous in host addresses */
		*hpa = d->hpa_base + tier_cxl_dpa_to_hpa_offset(r->addr - d->dpa_base, d->ways, d->gran, d->pos);
		return DPA_OK;
	}
	return DPA_NONE;
}

/* The same, reading the layout first when it is old, and once more (at
 * most every CXL_REGION_RETRY periods) when no region maps the record. */
static int dpa_to_hpa(const struct tier_cxl_rec *r, uint64_t *hpa)
{
	if (!regions_read || period - regions_read_at >= CXL_REGION_RECHECK)
		regions_refresh();
	int e = dpa_lookup(r, hpa);
	if (e == DPA_NONE && period - regions_read_at >= CXL_REGION_RETRY) {
		regions_refresh();
		e = dpa_lookup(r, hpa);
	}
	return e;
}

/* One line into recs, or counted as rejected. */
static void line(const char *s, size_t len, int *ver)
{
	struct tier_cxl_rec r;
	switch (tier_cxl_parse_line(s, len, ver, &r)) {
	case TIER_CXL_SKIP: case TIER_CXL_HDR: return;
	case TIER_CXL_MALFORMED: count(&tier_cxl_stats.rejected_malformed, 1); return;
	case TIER_CXL_BADVER: count(&tier_cxl_stats.rejected_version, 1); return;
	case TIER_CXL_RANGE: count(&tier_cxl_stats.rejected_range, 1); return;
	case TIER_CXL_REC: break;
	}
	if (r.kind == TIER_CXL_DPA) {
		uint64_t hpa = 0;
		int e = dpa_to_hpa(&r, &hpa);
		if (e == DPA_REFUSED) {
			/* XOR (or unknown) host-bridge interleave: never mistranslated */
			count(&tier_cxl_stats.rejected_interleave, 1);
			return;
		}
		if (e != DPA_OK) {
			/* no region maps it (or the unit spans interleave granules) */
			count(&tier_cxl_stats.rejected_dpa, 1);
			return;
		}
		r.addr = hpa;
	}
	if (nrecs == CXL_RECS) {
		count(&tier_cxl_stats.deferred, 1); /* cannot happen: lines() stops at CXL_RECS */
		return;
	}
	recs[nrecs++] = (struct rec){r.addr >> TIER_PAGE_SHIFT,
				     (r.addr + r.unit + TIER_PAGE - 1) >> TIER_PAGE_SHIFT, r.addr, r.unit,
				     r.count, false};
}

/* Parse whole lines of buf[0, *len), at most *budget of them; the rest
 * (a partial line, or lines over the budget) moves to the front.  A NUL
 * starts a new batch (resets the header state). */
static void lines(char *buf, size_t *len, int *ver, uint32_t *budget)
{
	size_t i = 0;
	while (i < *len && *budget && nrecs < CXL_RECS) { /* the rest waits for the next period */
		if (buf[i] == '\0') {
			*ver = 0;
			i++;
			continue;
		}
		char *nl = memchr(buf + i, '\n', *len - i);
		if (!nl)
			break;
		line(buf + i, (size_t)(nl - (buf + i)), ver);
		(*budget)--;
		i = (size_t)(nl - buf) + 1;
	}
	memmove(buf, buf + i, *len - i);
	*len -= i;
}

static bool before(const struct rec *x, const struct rec *y)
{
	return x->addr < y->addr || (x->addr == y->addr && x->unit < y->unit);
}

/* Shell sort: glibc's qsort may malloc. */
static void sort_recs(void)
{
	static const uint32_t gaps[] = {1750, 701, 301, 132, 57, 23, 10, 4, 1};
	for (size_t g = 0; g < sizeof(gaps) / sizeof(*gaps); g++)
		for (uint32_t i = gaps[g]; i < nrecs; i++) {
			struct rec x = recs[i];
			uint32_t j = i;
			for (; j >= gaps[g] && before(&x, &recs[j - gaps[g]]); j -= gaps[g])
				recs[j] = recs[j - gaps[g]];
			recs[j] = x;
		}
}

/* The record whose frames hold pfn, or NULL (records are sorted and, after
 * dropping duplicates, may still overlap: the first found wins). */
static struct rec *find(uint64_t pfn)
{
	uint32_t lo = 0, hi = nrecs;
	while (lo < hi) { /* first record starting above pfn */
		uint32_t mid = (lo + hi) / 2;
		if (recs[mid].lo <= pfn)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* units are at most 1 GiB: look back over the few that may still cover it */
	for (uint32_t k = lo; k > 0 && lo - k < 64; k--)
		if (pfn < recs[k - 1].hi)
			return &recs[k - 1];
	return NULL;
}

/* Read block b's frames into the map (slot s), and what it looked like. */
static void map_read(struct tier_mapping *m, uint32_t b, uint32_t s, bool changed)
{
	struct tier_block *blk = &m->blocks[b];
	struct tier_cxl_slot *sl = &map.slots[s];
	uint32_t st = atomic_load_explicit(&blk->state, memory_order_relaxed);
	uint32_t n = m->npages - b * (uint32_t)TIER_PAGES_PER_BLOCK, present = 0;
	if (n > TIER_PAGES_PER_BLOCK)
		n = TIER_PAGES_PER_BLOCK;
	ssize_t got = pread(pagemap_fd, pm, n * sizeof(*pm), (off_t)(tier_block_addr(m, b) >> TIER_PAGE_SHIFT) * 8);
	for (uint32_t p = 0; p < n; p++) {
		pm[p] = (ssize_t)(p * sizeof(*pm)) < got && (pm[p] & PM_PRESENT) ? pm[p] & PM_PFN : 0;
		present += pm[p] != 0;
	}
	if (!tier_cxl_map_set(&map, s, pm, n))
		count(&tier_cxl_stats.map_full, 1); /* over CXL_MAP_PAGES: not mapped this time */
	count(&tier_cxl_stats.map_reads, 1);
	sl->placements = atomic_load_explicit(&blk->placements, memory_order_relaxed);
	sl->moves = atomic_load_explicit(&blk->moves, memory_order_relaxed);
	sl->state = st;
	sl->present = present;
	/* pages committed but not touched yet: look again, less and less often */
	if (changed || !sl->backoff)
		sl->backoff = 1;
	else if (sl->backoff < CXL_BACKOFF_MAX)
		sl->backoff *= 2;
	sl->next_read = period + sl->backoff;
}

/* Bring the reverse map up to date: a walk over the blocks' state words,
 * reading the frames of the slow blocks that changed since. */
static void map_update(void)
{
	uint32_t nslow = 0;
	struct tier_mapping *m;
	if (!map.cap) { /* the first build: one table for all we have */
		uint64_t pages = 0;
		tier_registry_for_each(m) {
			if (m->gone || m->meta)
				continue;
			for (uint32_t b = 0; b < m->nblocks; b++) {
				uint32_t st = atomic_load_explicit(&m->blocks[b].state, memory_order_relaxed);
				if (TIER_BS_TIER(st) > 0)
					pages += st & TIER_BS_PAGES;
			}
		}
		tier_cxl_map_reserve(&map, pages);
	}
	tier_registry_for_each(m) {
		if (m->gone || m->meta)
			continue;
		for (uint32_t b = 0; b < m->nblocks; b++) {
			struct tier_block *blk = &m->blocks[b];
			uint32_t st = atomic_load_explicit(&blk->state, memory_order_relaxed);
			uint32_t s = blk->cxl_slot;
			bool have = tier_cxl_map_slot_is(&map, s, m, b);
			if (!(st & TIER_BS_PAGES) || TIER_BS_TIER(st) <= 0) {
				if (have) /* emptied, or promoted: its frames are not ours to name */
					tier_cxl_map_slot_drop(&map, s);
				continue;
			}
			bool roll = nslow - roll_at < CXL_ROLL;
			nslow++;
			if (!have) {
				if ((s = tier_cxl_map_slot_new(&map, m, b)) == TIER_CXL_MAP_NONE) {
					count(&tier_cxl_stats.map_full, 1);
					continue;
				}
				blk->cxl_slot = s;
				map_read(m, b, s, true);
				continue;
			}
			const struct tier_cxl_slot *sl = &map.slots[s];
			bool changed = sl->state != st ||
				       sl->placements != atomic_load_explicit(&blk->placements, memory_order_relaxed) ||
				       sl->moves != atomic_load_explicit(&blk->moves, memory_order_relaxed);
			bool filling = sl->present < (st & TIER_BS_PAGES) && (int32_t)(period - sl->next_read) >= 0;
			if (changed || filling || roll)
				map_read(m, b, s, changed);
		}
	}
	roll_at = roll_at + CXL_ROLL < nslow ? roll_at + CXL_ROLL : 0;
	atomic_store(&tier_cxl_stats.map_pages, map.live);
}

/* Our pages the records name, as the map says: checked against a fresh
 * read of those pages before they get heat. */
struct hitrec {
	uint32_t slot, page;
	uint64_t pfn;
	struct rec *r;
};
#define CXL_HITS 65536u /* pages a period; more are counted and given nothing */
static struct hitrec hitv[CXL_HITS];
static uint32_t nhits;

static void hit(uint32_t s, uint32_t p, uint64_t pfn, struct rec *r)
{
	if (nhits == CXL_HITS) {
		count(&tier_cxl_stats.hits_dropped, 1);
		return;
	}
	hitv[nhits++] = (struct hitrec){s, p, pfn, r};
}

static void sweep_fn(uint64_t pfn, uint32_t slot, uint32_t page, void *ctx)
{
	(void)ctx;
	struct rec *r = find(pfn);
	if (r)
		hit(slot, page, pfn, r);
}

static bool hit_before(const struct hitrec *x, const struct hitrec *y)
{
	return x->slot < y->slot || (x->slot == y->slot && x->page < y->page);
}

/* Shell sort by (slot, page), as sort_recs. */
static void sort_hits(void)
{
	static const uint32_t gaps[] = {8929, 3905, 1750, 701, 301, 132, 57, 23, 10, 4, 1};
	for (size_t g = 0; g < sizeof(gaps) / sizeof(*gaps); g++)
		for (uint32_t i = gaps[g]; i < nhits; i++) {
			struct hitrec x = hitv[i];
			uint32_t j = i;
			for (; j >= gaps[g] && hit_before(&x, &hitv[j - gaps[g]]); j -= gaps[g])
				hitv[j] = hitv[j - gaps[g]];
			hitv[j] = x;
		}
}

/* Give heat to the pages hitv[i, j) of one slot's block names, after one
 * read of their frames (the span from the first to the last): a page the
 * map placed wrongly gets nothing, and its block is read again. */
static void give(uint32_t i, uint32_t j, bool others)
{
	uint32_t s = hitv[i].slot, first = hitv[i].page, n = hitv[j - 1].page - first + 1, stale = 0;
	struct tier_cxl_slot *sl = &map.slots[s];
	struct tier_mapping *m = (struct tier_mapping *)sl->owner;
	uint32_t b = sl->block;
	if (!m || m->gone)
		return;
	struct tier_block *blk = &m->blocks[b];
	uint32_t st = atomic_load_explicit(&blk->state, memory_order_relaxed);
	if (!(st & TIER_BS_PAGES))
		return;
	uintptr_t a = tier_block_addr(m, b);
	ssize_t got = pread(pagemap_fd, pm, n * sizeof(*pm), (off_t)((a >> TIER_PAGE_SHIFT) + first) * 8);
	count(&tier_cxl_stats.map_checks, 1);
	float other = 0;
	for (int k = 0; k < TIER_SRC_COUNT; k++)
		if (k != TIER_SRC_CXL && blk->rate[k] > other)
			other = blk->rate[k];
	bool slow = TIER_BS_TIER(st) > 0;
	for (uint32_t k = i; k < j; k++) {
		if (k > i && hitv[k].page == hitv[k - 1].page)
			continue; /* one record a page: the first */
		uint32_t p = hitv[k].page - first;
		uint64_t e = (ssize_t)(p * sizeof(*pm)) < got ? pm[p] : 0;
		if (!(e & PM_PRESENT) || (e & PM_PFN) != hitv[k].pfn) {
			stale++; /* moved without a signal (compaction, reclaim) */
			continue;
		}
		hitv[k].r->matched = true;
		uint32_t w = tier_cxl_weight(hitv[k].r->count, others, slow, other, TIER_HEAT_UNIT);
		if (w)
			tier_heat_report(TIER_SRC_CXL, a + (size_t)hitv[k].page * TIER_PAGE, TIER_PAGE, w);
		else
			count(&tier_cxl_stats.capped_pages, 1);
	}
	if (stale) {
		count(&tier_cxl_stats.map_stale, stale);
		if (TIER_BS_TIER(st) > 0)
			map_read(m, b, s, true);
	}
}

/* Give heat to the pages of our slow blocks that the records name. */
static void resolve(void)
{
	uint64_t t0 = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	sort_recs();
	uint32_t n = 0;
	for (uint32_t i = 0; i < nrecs; i++) {
		if (n && recs[n - 1].addr == recs[i].addr && recs[n - 1].unit == recs[i].unit) {
			count(&tier_cxl_stats.rejected_duplicate, 1);
			continue;
		}
		recs[n++] = recs[i];
	}
	nrecs = n;
	if (!map_ready && tier_cxl_map_init(&map, CXL_MAP_SLOTS, CXL_MAP_PAGES) == 0)
		map_ready = true;
	bool others = tier_heat_running() & ~(1u << TIER_SRC_CXL);
	rcu_read_lock();
	if (map_ready) {
		map_update();
		/* look each named frame up, or, when the records name more
		 * frames than the map holds, sweep the map instead */
		uint64_t named = 0;
		for (uint32_t i = 0; i < nrecs && named <= map.live; i++)
			named += recs[i].hi - recs[i].lo;
		nhits = 0;
		if (named > map.live) {
			tier_cxl_map_each(&map, sweep_fn, NULL);
		} else {
			for (uint32_t i = 0; i < nrecs; i++)
				for (uint64_t f = recs[i].lo; f < recs[i].hi; f++) {
					uint32_t s, p;
					if (tier_cxl_map_lookup(&map, f, &s, &p))
						hit(s, p, f, &recs[i]);
				}
		}
		sort_hits();
		for (uint32_t i = 0, j; i < nhits; i = j) {
			for (j = i + 1; j < nhits && hitv[j].slot == hitv[i].slot;)
				j++;
			give(i, j, others);
		}
	}
	rcu_read_unlock();
	for (uint32_t i = 0; i < nrecs; i++)
		count(recs[i].matched ? &tier_cxl_stats.accepted : &tier_cxl_stats.rejected_foreign, 1);
	nrecs = 0;
	count(&tier_cxl_stats.resolves, 1);
	count(&tier_cxl_stats.resolve_ns, tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0);
}

/* A mapping is being freed: forget its blocks. */
static void cxl_gone(struct tier_mapping *m)
{
	if (!map_ready)
		return;
	for (uint32_t b = 0; b < m->nblocks; b++)
		if (tier_cxl_map_slot_is(&map, m->blocks[b].cxl_slot, m, b))
			tier_cxl_map_slot_drop(&map, m->blocks[b].cxl_slot);
	atomic_store(&tier_cxl_stats.map_pages, map.live);
}

static void cxl_collect(void)
{
	uint32_t budget = CXL_LINES;
	period++;
	if (stream_fd >= 0 && stream_len < sizeof(stream)) {
		ssize_t got = read(stream_fd, stream + stream_len, sizeof(stream) - stream_len);
		if (got > 0) {
			stream_len += (size_t)got;
			count(&tier_cxl_stats.bytes, (uint64_t)got);
		} else if (got == 0 && stream_fifo) {
			/* the writer left: a FIFO would now poll as hung up
			 * forever (the thread would spin); a fresh open waits
			 * quietly for the next writer */
			close(stream_fd);
			stream_fd = open(tier_settings.cxl_reports, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
		}
	}
	if (stream_len) {
		lines(stream, &stream_len, &stream_ver, &budget);
		if (stream_len == sizeof(stream)) { /* one line longer than the buffer */
			count(&tier_cxl_stats.rejected_malformed, 1);
			stream_len = 0;
		}
	}
	pthread_mutex_lock(&queue_lock);
	if (queue_len)
		lines(queue, &queue_len, &queue_ver, &budget);
	pthread_mutex_unlock(&queue_lock);
	if (nrecs)
		resolve();
}

int tier_cxl_submit(const char *text, size_t len)
{
	if (!atomic_load(&on))
		return EOPNOTSUPP;
	if (!text || !len || memchr(text, '\0', len))
		return EINVAL;
	bool nl = text[len - 1] != '\n'; /* the batch ends its last line */
	int e = 0;
	pthread_mutex_lock(&queue_lock);
	if (queue_len + 1 + len + nl > sizeof(queue)) {
		e = EAGAIN;
	} else {
		queue[queue_len++] = '\0';
		memcpy(queue + queue_len, text, len);
		queue_len += len;
		if (nl)
			queue[queue_len++] = '\n';
	}
	pthread_mutex_unlock(&queue_lock);
	if (e)
		count(&tier_cxl_stats.dropped_bytes, len);
	else
		count(&tier_cxl_stats.bytes, len);
	return e;
}

/* Whether the kernel offers a CHMU PMU (cxl_hmu_mem<X>.<Y>). */
static bool pmu_present(char *name, size_t len)
{
	DIR *d = opendir("/sys/bus/event_source/devices");
	struct dirent *e;
	bool found = false;
	if (!d)
		return false;
	while (!found && (e = readdir(d)))
		if (!strncmp(e->d_name, "cxl_hmu_mem", 11)) {
			snprintf(name, len, "%s", e->d_name);
			found = true;
		}
	closedir(d);
	return found;
}

static int cxl_probe(char *why, size_t len)
{
	static volatile uint64_t probe_page = 1;
	uint64_t ent = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "/proc/self/pagemap: %s", strerror(errno));
		return -1;
	}
	probe_page++; /* present, so its frame shows if we may see frames */
	ssize_t got = pread(fd, &ent, sizeof(ent), (off_t)((uintptr_t)&probe_page >> TIER_PAGE_SHIFT) * 8);
	if (got != sizeof(ent) || !(ent & PM_PRESENT) || !(ent & PM_PFN)) {
		close(fd);
		snprintf(why, len, "page frames hidden (needs CAP_SYS_ADMIN)");
		return -1;
	}
	pagemap_fd = fd;
	return 0;
}

static int cxl_start(char *why, size_t len)
{
	char pmu[64];
	if (pmu_present(pmu, sizeof(pmu)))
		/* the RFC driver's AUX records have no merged format and no
		 * emulator to test against: say that nothing is read from it */
		snprintf(note, sizeof(note), "%s found, not read (no merged record format); "
			 "reports from cxl_reports or tier.cxl.report", pmu);
	else
		snprintf(note, sizeof(note), "no cxl_hmu PMU; reports from cxl_reports or tier.cxl.report");
	snprintf(why, len, "%s", note);
	stream_len = 0;
	stream_ver = queue_ver = 0;
	/* the region layout is read when dpa records come */
	ndevmap = 0;
	regions_read = false;
	period = roll_at = 0;
	if (tier_settings.cxl_reports[0]) {
		stream_fd = open(tier_settings.cxl_reports, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
		struct stat st;
		stream_fifo = stream_fd >= 0 && !fstat(stream_fd, &st) && S_ISFIFO(st.st_mode);
		if (stream_fd < 0 && tier_settings.verbose)
			tier_log("cxl_reports %s: %m; only tier.cxl.report batches are read", tier_settings.cxl_reports);
	}
	atomic_store(&on, true);
	return 0;
}

static void cxl_stop(void)
{
	atomic_store(&on, false);
	if (stream_fd >= 0)
		close(stream_fd);
	if (pagemap_fd >= 0)
		close(pagemap_fd);
	stream_fd = pagemap_fd = -1;
	pthread_mutex_lock(&queue_lock);
	queue_len = 0;
	pthread_mutex_unlock(&queue_lock);
	nrecs = 0;
	if (map_ready)
		tier_cxl_map_free(&map);
	map_ready = false;
	nhits = 0;
	atomic_store(&tier_cxl_stats.map_pages, 0);
}

const struct tier_heat_ops tier_heat_cxl = {
	.name = "cxl",
	.probe = cxl_probe,
	.start = cxl_start,
	.collect = cxl_collect,
	.stop = cxl_stop,
	.forget = cxl_stop,
	.gone = cxl_gone,
};
