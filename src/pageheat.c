/* Per-page heat of probed and split blocks (see pageheat.h). */
#define _GNU_SOURCE
#include <math.h>
#include <string.h>
#include <sys/mman.h>

#include "pageheat.h"
#include "sysfs.h"

struct tier_ph_stats tier_ph_stats;
static struct tier_ph *tab;  /* TIER_PH_MAX entries, mapped on first use */
static uint32_t hw;          /* entries ever used (high-water mark) */
static uint32_t next_free;   /* where the search for a free entry starts */
static int thp_always = -1;  /* THP "always": undo MADV_NOHUGEPAGE on drop */

struct tier_ph *tier_ph_at(uint32_t i) { return tab && i < hw ? &tab[i] : NULL; }
uint32_t tier_ph_used(void) { return hw; }

struct tier_ph *tier_ph_of(const struct tier_mapping *m, uint32_t b)
{
	uint32_t i = m->blocks[b].ph;
	return i && tab ? &tab[i - 1] : NULL;
}

static bool thp_is_always(void)
{
	if (thp_always < 0) {
		char buf[128];
		thp_always = tier_read_file("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof(buf)) > 0 &&
			     strstr(buf, "[always]");
	}
	return thp_always;
}

/* The block's range inside its mapping. */
static void range(const struct tier_mapping *m, uint32_t b, uintptr_t *lo, size_t *len)
{
	*lo = tier_block_addr(m, b);
	size_t off = (size_t)b << TIER_BLOCK_SHIFT;
	*len = m->size - off < TIER_BLOCK ? m->size - off : TIER_BLOCK;
}

struct tier_ph *tier_ph_take(struct tier_mapping *m, uint32_t b, uint32_t period)
{
	if (!tab) {
		void *p = mmap(NULL, TIER_PH_MAX * sizeof(*tab), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		tab = p;
	}
	struct tier_ph *e = NULL;
	for (uint32_t k = 0; k < hw && !e; k++) {
		uint32_t i = (next_free + k) % hw;
		if (tab[i].state == TIER_PH_FREE)
			e = &tab[i];
	}
	if (!e) {
		if (hw == TIER_PH_MAX)
			return NULL;
		e = &tab[hw++];
	}
	next_free = (uint32_t)(e - tab) + 1;
	memset(e, 0, sizeof(*e));
	e->m = m;
	e->b = b;
	e->state = TIER_PH_PROBE;
	e->placements = atomic_load_explicit(&m->blocks[b].placements, memory_order_relaxed);
	e->drops = atomic_load_explicit(&m->blocks[b].drops, memory_order_relaxed);
	e->last_period = period;
	e->win = 1;
	m->blocks[b].ph = (uint32_t)(e - tab) + 1;
	/* A page of a transparent huge page moves with its 512 (DESIGN.md
	 * §7), and written bits are kept for the huge page as a whole: split
	 * it.  MADV_COLD over part of a huge page splits it (and only marks
	 * that one page inactive); MADV_NOHUGEPAGE keeps khugepaged from
	 * collapsing it again while the block is looked at page by page. */
	uintptr_t lo;
	size_t len;
	range(m, b, &lo, &len);
	madvise((void *)lo, len, MADV_NOHUGEPAGE);
	if (madvise((void *)lo, TIER_PAGE, MADV_COLD) == 0)
		atomic_fetch_add_explicit(&tier_ph_stats.thp_splits, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&tier_ph_stats.probes, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&tier_ph_stats.probing, 1, memory_order_relaxed);
	return e;
}

static void hist_out(struct tier_ph *e, struct tier_hist *hist)
{
	for (uint8_t i = 0; i < e->nh; i++)
		tier_hist_sub(&hist[e->h[i].tier], e->h[i].bucket, e->h[i].pages);
	e->nh = 0;
}

void tier_ph_drop(struct tier_ph *e, struct tier_hist *hist)
{
	if (e->state == TIER_PH_FREE)
		return;
	hist_out(e, hist);
	if (e->state == TIER_PH_PROBE)
		atomic_fetch_sub_explicit(&tier_ph_stats.probing, 1, memory_order_relaxed);
	if (!e->m->gone) {
		e->m->blocks[e->b].ph = 0;
		uintptr_t lo;
		size_t len;
		range(e->m, e->b, &lo, &len);
		/* give the block back to THP where THP is the rule (and the
		 * hooks did not map it without) */
		if (thp_is_always() && !e->m->nohuge)
			madvise((void *)lo, len, MADV_HUGEPAGE);
	}
	e->state = TIER_PH_FREE;
	e->m = NULL;
}

void tier_ph_mark(struct tier_mapping *m, uint32_t b, uint32_t p0, uint32_t n)
{
	struct tier_ph *e = tier_ph_of(m, b);
	if (!e)
		return;
	for (uint32_t p = p0; p < p0 + n && p < TIER_PAGES_PER_BLOCK; p++)
		e->seen[p / 64] |= 1ull << (p % 64);
}

uint32_t tier_ph_window(struct tier_ph *e, uint32_t period)
{
	uint32_t seen = 0;
	for (uint32_t p = 0; p < TIER_PAGES_PER_BLOCK; p++) {
		uint32_t s = e->seen[p / 64] >> (p % 64) & 1;
		e->cnt[p] = (uint8_t)(e->cnt[p] + s);
		seen += s;
	}
	memset(e->seen, 0, sizeof(e->seen));
	e->windows++;
	e->wsum += period > e->last_period ? period - e->last_period : 1;
	e->last_period = period;
	if (e->windows >= TIER_PH_WINDOWS) {
		/* forget half: what a page did 16 windows ago weighs half */
		for (uint32_t p = 0; p < TIER_PAGES_PER_BLOCK; p++)
			e->cnt[p] = (uint8_t)((e->cnt[p] + 1) / 2);
		e->windows = (uint16_t)((e->windows + 1) / 2);
		e->wsum = (e->wsum + 1) / 2;
	}
	return seen;
}

float tier_ph_dispersion_of(const uint8_t *cnt, uint32_t n, uint32_t w)
{
	if (n < 2 || !w)
		return 0;
	double sum = 0, sq = 0;
	for (uint32_t i = 0; i < n; i++) {
		sum += cnt[i];
		sq += (double)cnt[i] * cnt[i];
	}
	double mean = sum / n, p = mean / w;
	if (mean <= 0)
		return 0;
	double var = (sq - sum * mean) / (n - 1);
	/* even heat: each page seen in a window with the same probability p,
	 * counts binomial(w, p); floor the expected variance at what one page
	 * in n seen once would give, so that near-saturated blocks do not
	 * divide by ~0 */
	double expect = (double)w * p * (1 - p), floor = 1.0 / n;
	return (float)(var / (expect > floor ? expect : floor));
}

float tier_ph_cold_half_of(const uint8_t *cnt, uint32_t n)
{
	uint32_t by[256] = {0};
	uint64_t sum = 0;
	for (uint32_t i = 0; i < n; i++) {
		by[cnt[i]]++;
		sum += cnt[i];
	}
	if (!sum)
		return 0.5f; /* nothing seen: no evidence of concentration */
	/* walk up from the coldest count until half the pages are taken */
	uint64_t cold = 0;
	uint32_t left = n / 2;
	for (uint32_t c = 0; c < 256 && left; c++) {
		uint32_t k = by[c] < left ? by[c] : left;
		cold += (uint64_t)k * c;
		left -= k;
	}
	return (float)((double)cold / (double)sum);
}

/* The counts of the block's committed pages, packed; returns how many. */
static uint32_t committed_counts(const struct tier_ph *e, uint8_t *out)
{
	const struct tier_mapping *m = e->m;
	size_t first = (size_t)e->b * TIER_PAGES_PER_BLOCK;
	uint32_t n = 0;
	for (uint32_t p = 0; p < TIER_PAGES_PER_BLOCK && first + p < m->npages; p++)
		if (tier_bit_test(m->commit, first + p))
			out[n++] = e->cnt[p];
	return n;
}

void tier_ph_shape(const struct tier_ph *e, struct tier_ph_shape *out)
{
	uint8_t c[TIER_PAGES_PER_BLOCK];
	uint32_t n = committed_counts(e, c), sum = 0;
	for (uint32_t i = 0; i < n; i++)
		sum += c[i];
	out->dispersion = tier_ph_dispersion_of(c, n, e->windows);
	out->cold_half = tier_ph_cold_half_of(c, n);
	out->seen_share = n && e->windows ? (float)sum / (float)n / (float)e->windows : 0;
}

static float mean_count(const struct tier_ph *e)
{
	uint8_t c[TIER_PAGES_PER_BLOCK];
	uint32_t n = committed_counts(e, c), sum = 0;
	for (uint32_t i = 0; i < n; i++)
		sum += c[i];
	return n ? (float)sum / (float)n : 0;
}

uint32_t tier_ph_select(const struct tier_ph *e, float block_heat, int home, bool fast, float thr,
			uint16_t *idx, float *heat)
{
	const struct tier_mapping *m = e->m;
	size_t first = (size_t)e->b * TIER_PAGES_PER_BLOCK;
	float mean = mean_count(e), sum = 0;
	uint32_t n = 0;
	for (uint32_t p = 0; p < TIER_PAGES_PER_BLOCK && first + p < m->npages; p++) {
		if (!tier_bit_test(m->commit, first + p))
			continue;
		bool on_fast = (home == 0) != tier_ph_away(e, p);
		if (on_fast == fast)
			continue;
		float h = mean > 0 ? block_heat * (float)e->cnt[p] / mean : block_heat;
		if (fast ? h < thr : h >= thr)
			continue;
		if (idx)
			idx[n] = (uint16_t)p;
		n++;
		sum += h;
	}
	*heat = n ? sum / (float)n : 0;
	return n;
}

void tier_ph_set_away(struct tier_ph *e, uint32_t p, bool away)
{
	if (away)
		e->away[p / 64] |= 1ull << (p % 64);
	else
		e->away[p / 64] &= ~(1ull << (p % 64));
}

uint32_t tier_ph_naway(const struct tier_ph *e)
{
	uint32_t n = 0;
	for (int w = 0; w < TIER_PH_WORDS; w++)
		n += (uint32_t)__builtin_popcountll(e->away[w]);
	return n;
}

void tier_ph_hist(struct tier_ph *e, float block_heat, int home, struct tier_hist *hist)
{
	hist_out(e, hist);
	if (home < 0)
		return;
	const struct tier_mapping *m = e->m;
	size_t first = (size_t)e->b * TIER_PAGES_PER_BLOCK;
	float mean = mean_count(e);
	/* pages by (count, away): a count stands for one heat */
	uint16_t by[TIER_PH_WINDOWS + 1][2] = {{0}};
	for (uint32_t p = 0; p < TIER_PAGES_PER_BLOCK && first + p < m->npages; p++)
		if (tier_bit_test(m->commit, first + p)) {
			uint8_t c = e->cnt[p] > TIER_PH_WINDOWS ? TIER_PH_WINDOWS : e->cnt[p];
			by[c][tier_ph_away(e, p)]++;
		}
	int other = home ? 0 : 1;
	for (int c = 0; c <= TIER_PH_WINDOWS; c++)
		for (int a = 0; a < 2; a++) {
			if (!by[c][a] || e->nh == sizeof(e->h) / sizeof(e->h[0]))
				continue;
			float heat = mean > 0 ? block_heat * (float)c / mean : block_heat;
			int t = a ? other : home;
			int k = tier_hist_bucket(heat);
			tier_hist_add(&hist[t], k, by[c][a]);
			e->h[e->nh].tier = (uint8_t)t;
			e->h[e->nh].bucket = (uint8_t)k;
			e->h[e->nh++].pages = by[c][a];
		}
}

void tier_ph_state_count(void)
{
	uint32_t probing = 0, split = 0;
	for (uint32_t i = 0; i < hw; i++) {
		probing += tab[i].state == TIER_PH_PROBE;
		split += tab[i].state == TIER_PH_SPLIT;
	}
	atomic_store(&tier_ph_stats.probing, probing);
	atomic_store(&tier_ph_stats.split, split);
}
