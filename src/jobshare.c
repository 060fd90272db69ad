#include <math.h>

#include "jobshare.h"

/* Give up to *left pages to the n amounts want[] (pro rata when they do
 * not all fit, the rounding remainder to the first ones), adding to
 * share[]. */
static void give(const uint64_t *want, int n, uint64_t *left, uint64_t *share)
{
	uint64_t total = 0;
	for (int i = 0; i < n; i++)
		total += want[i];
	if (!total || !*left)
		return;
	if (total <= *left) {
		for (int i = 0; i < n; i++)
			share[i] += want[i];
		*left -= total;
		return;
	}
	uint64_t given = 0;
	for (int i = 0; i < n; i++) {
		uint64_t g = (uint64_t)((long double)want[i] * (long double)*left / (long double)total);
		share[i] += g;
		given += g;
	}
	for (int i = 0; i < n && given < *left; i++)
		if (want[i]) {
			share[i]++;
			given++;
		}
	*left = 0;
}

static uint64_t fast_total(const struct tier_job_member *m)
{
	uint64_t s = 0;
	for (int k = 0; k < TIER_JOB_BUCKETS; k++)
		s += m->fast[k];
	return s > m->fast_pages ? s : m->fast_pages;
}

void tier_job_fill(const struct tier_job_member *m, int n, uint64_t budget,
                   const struct tier_job_rules *r, uint64_t *share)
{
	uint64_t want[TIER_JOB_MAX], held[TIER_JOB_MAX];
	if (n > TIER_JOB_MAX)
		n = TIER_JOB_MAX;
	uint64_t left = budget;
	int stay = r->stay_buckets < 0 ? 0 : r->stay_buckets;
	int minb = r->min_bucket < 1 ? 1 : r->min_bucket;
	for (int i = 0; i < n; i++) {
		share[i] = 0;
		held[i] = 0;
	}
	/* heated memory, hottest key first; fast bucket k sits at key
	 * k + stay and goes first among equal keys (it is already there) */
	for (int key = TIER_JOB_BUCKETS - 1 + stay; key >= 1 && left; key--) {
		int kf = key - stay;
		if (kf >= 1 && kf < TIER_JOB_BUCKETS) {
			for (int i = 0; i < n; i++)
				want[i] = m[i].fast[kf];
			give(want, n, &left, share);
			for (int i = 0; i < n; i++)
				held[i] += m[i].fast[kf];
		}
		if (key < TIER_JOB_BUCKETS && key >= minb) {
			for (int i = 0; i < n; i++)
				want[i] = m[i].slow[key];
			give(want, n, &left, share);
		}
	}
	/* fast memory that is cold or not measured yet stays */
	for (int i = 0; i < n; i++) {
		uint64_t ft = fast_total(&m[i]);
		want[i] = ft > held[i] ? ft - held[i] : 0;
	}
	give(want, n, &left, share);
	/* headroom, evenly */
	for (int i = 0; i < n && left; i++) {
		uint64_t g = left / (uint64_t)(n - i);
		share[i] += g;
		left -= g;
	}
}

uint64_t tier_job_split(const struct tier_job_member *m, int n, uint64_t pages, bool promote,
                        int min_bucket, uint64_t *part)
{
	uint64_t want[TIER_JOB_MAX];
	if (n > TIER_JOB_MAX)
		n = TIER_JOB_MAX;
	uint64_t left = pages;
	for (int i = 0; i < n; i++)
		part[i] = 0;
	if (promote) {
		int minb = min_bucket < 1 ? 1 : min_bucket;
		for (int k = TIER_JOB_BUCKETS - 1; k >= minb && left; k--) {
			for (int i = 0; i < n; i++)
				want[i] = m[i].slow[k];
			give(want, n, &left, part);
		}
	} else {
		/* fast memory not measured yet counts as the coldest */
		for (int i = 0; i < n; i++) {
			uint64_t s = 0;
			for (int k = 0; k < TIER_JOB_BUCKETS; k++)
				s += m[i].fast[k];
			want[i] = m[i].fast_pages > s ? m[i].fast_pages - s : 0;
		}
		give(want, n, &left, part);
		for (int k = 0; k < TIER_JOB_BUCKETS && left; k++) {
			for (int i = 0; i < n; i++)
				want[i] = m[i].fast[k];
			give(want, n, &left, part);
		}
	}
	return pages - left;
}

uint64_t tier_job_limit(uint64_t share, uint64_t budget, uint64_t own, uint64_t others,
                        double wm_high)
{
	uint64_t room = others < budget ? budget - others : 0;
	uint64_t keep = wm_high > 0 ? (uint64_t)ceil((double)own / wm_high) : own;
	uint64_t cap = room > keep ? room : keep;
	return share < cap ? share : cap;
}
