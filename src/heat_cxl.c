/* cxl: heat from CXL hot lists (a device's Hotness Monitoring Unit names
 * the device memory it saw accessed most).  Records come as versioned text
 * (cxl_report.h) from the file or FIFO named by cxl_reports, read by the
 * background thread each period, or in batches written to
 * tier.cxl.report.  A record names host physical memory; /proc/self/pagemap
 * maps our committed pages to page frames, and the frames named get heat
 * by the combination rule (tier_cxl_weight).  Hot lists are lossy, so every
 * record that is not clearly ours is counted and dropped, never acted on.
 *
 * No malloc: the queue, the records and the pagemap buffer are static,
 * and bounded, so a flood of records costs at most CXL_LINES lines and one
 * walk of our committed blocks per period.  The stream is read once a
 * period, never polled: a full FIFO must not wake the thread early again
 * and again. */
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

#include "cxl_report.h"
#include "heat.h"
#include "heat_cxl.h"
#include "init.h"
#include "sysfs.h"

struct tier_cxl_stats tier_cxl_stats;

#define CXL_QUEUE (64u << 10) /* bytes of batches waiting */
#define CXL_LINES 8192u       /* lines read per period, records or not */
#define CXL_RECS 4096u        /* hpa records resolved per period */
#define PM_PRESENT (1ull << 63)
#define PM_PFN ((1ull << 55) - 1)

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
static char note[96];

struct rec {
	uint64_t lo, hi; /* page frames [lo, hi) */
	uint64_t addr, unit, count;
	bool matched;
};
static struct rec recs[CXL_RECS];
static uint32_t nrecs;
static uint64_t pm[TIER_BLOCK / TIER_PAGE];

/* Device ranges of the CXL regions (sysfs, read at start): a dpa record
 * is translated through its memdev's endpoint decoder and region. */
struct devmap {
	char memdev[32];
	uint64_t dpa_base, dpa_size; /* the endpoint decoder's device range */
	uint64_t hpa_base;           /* the region's host physical base */
	uint64_t gran;
	unsigned ways, pos;
};
#define DEVMAP_MAX 16
static struct devmap devmap[DEVMAP_MAX];
static int ndevmap;

static bool read_u64(const char *dir, const char *file, int base, uint64_t *out)
{
	char path[PATH_MAX], buf[64];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (tier_read_file(path, buf, sizeof(buf)) <= 0)
		return false;
	char *end;
	*out = strtoull(buf, &end, base);
	return end != buf;
}

static int region_cb(const char *name, void *arg)
{
	(void)arg;
	char dir[PATH_MAX], path[PATH_MAX], dec[64], real[PATH_MAX];
	uint64_t base, ways, gran;
	if (strncmp(name, "region", 6))
		return 0;
	snprintf(dir, sizeof(dir), "/sys/bus/cxl/devices/%s", name);
	if (!read_u64(dir, "resource", 16, &base) || !read_u64(dir, "interleave_ways", 10, &ways) ||
	    !read_u64(dir, "interleave_granularity", 10, &gran) || !ways || !gran || ways > 16)
		return 0;
	for (unsigned k = 0; k < ways && ndevmap < DEVMAP_MAX; k++) {
		struct devmap *d = &devmap[ndevmap];
		snprintf(path, sizeof(path), "%s/target%u", dir, k);
		if (tier_read_file(path, dec, sizeof(dec)) <= 0)
			continue;
		dec[strcspn(dec, "\n")] = '\0';
		snprintf(path, sizeof(path), "/sys/bus/cxl/devices/%s", dec);
		if (!read_u64(path, "dpa_resource", 16, &d->dpa_base) || !read_u64(path, "dpa_size", 16, &d->dpa_size) ||
		    !realpath(path, real))
			continue;
		char *slash = strrchr(real, '/');
		if (!slash)
			continue;
		*slash = '\0'; /* the endpoint port: its uport is the memdev */
		snprintf(path, sizeof(path), "%.*s/uport", (int)(sizeof(path) - 7), real);
		if (!realpath(path, real) || !(slash = strrchr(real, '/')) || strlen(slash + 1) >= sizeof(d->memdev))
			continue;
		snprintf(d->memdev, sizeof(d->memdev), "%s", slash + 1);
		d->hpa_base = base;
		d->gran = gran;
		d->ways = (unsigned)ways;
		d->pos = k;
		ndevmap++;
	}
	return 0;
}

/* Host physical address of a dpa record, or false. */
static bool dpa_to_hpa(const struct tier_cxl_rec *r, uint64_t *hpa)
{
	for (int i = 0; i < ndevmap; i++) {
		const struct devmap *d = &devmap[i];
		if (strcmp(d->memdev, r->memdev) || r->addr < d->dpa_base || r->addr - d->dpa_base >= d->dpa_size ||
		    r->addr - d->dpa_base + r->unit > d->dpa_size)
			continue;
		if (d->ways > 1 && r->unit > d->gran)
			return false; /* not contiguous in host addresses */
		*hpa = d->hpa_base + tier_cxl_dpa_to_hpa_offset(r->addr - d->dpa_base, d->ways, d->gran, d->pos);
		return true;
	}
	return false;
}

static void count(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
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
		uint64_t hpa;
		if (!dpa_to_hpa(&r, &hpa)) {
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

/* Give heat to the pages of our committed blocks that the records name. */
static void resolve(void)
{
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
	bool others = tier_heat_running() & ~(1u << TIER_SRC_CXL);
	struct tier_mapping *m;
	rcu_read_lock();
	tier_registry_for_each(m) {
		if (m->gone)
			continue;
		for (uint32_t b = 0; b < m->nblocks; b++) {
			struct tier_block *blk = &m->blocks[b];
			uint32_t st = atomic_load_explicit(&blk->state, memory_order_relaxed);
			if (!(st & TIER_BS_PAGES))
				continue;
			uintptr_t a = tier_block_addr(m, b);
			ssize_t got = pread(pagemap_fd, pm, sizeof(pm), (off_t)(a >> TIER_PAGE_SHIFT) * 8);
			if (got <= 0)
				continue;
			float other = 0;
			for (int i = 0; i < TIER_SRC_COUNT; i++)
				if (i != TIER_SRC_CXL && blk->rate[i] > other)
					other = blk->rate[i];
			bool slow = TIER_BS_TIER(st) > 0;
			for (size_t p = 0; p < (size_t)got / 8; p++) {
				if (!(pm[p] & PM_PRESENT) || !(pm[p] & PM_PFN))
					continue;
				struct rec *r = find(pm[p] & PM_PFN);
				if (!r)
					continue;
				r->matched = true;
				uint32_t w = tier_cxl_weight(r->count, others, slow, other, TIER_HEAT_UNIT);
				if (w)
					tier_heat_report(TIER_SRC_CXL, a + p * TIER_PAGE, TIER_PAGE, w);
				else
					count(&tier_cxl_stats.capped_pages, 1);
			}
		}
	}
	rcu_read_unlock();
	for (uint32_t i = 0; i < nrecs; i++)
		count(recs[i].matched ? &tier_cxl_stats.accepted : &tier_cxl_stats.rejected_foreign, 1);
	nrecs = 0;
}

static void cxl_collect(void)
{
	uint32_t budget = CXL_LINES;
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
		snprintf(note, sizeof(note), "%s present but not read; reports from cxl_reports or tier.cxl.report", pmu);
	else
		snprintf(note, sizeof(note), "no cxl_hmu PMU; reports from cxl_reports or tier.cxl.report");
	snprintf(why, len, "%s", note);
	stream_len = 0;
	stream_ver = queue_ver = 0;
	ndevmap = 0;
	tier_dir_each("/sys/bus/cxl/devices", region_cb, NULL);
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
}

const struct tier_heat_ops tier_heat_cxl = {
	.name = "cxl",
	.probe = cxl_probe,
	.start = cxl_start,
	.collect = cxl_collect,
	.stop = cxl_stop,
	.forget = cxl_stop,
};
