#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "heat_hist.h"
#include "policy.h"
#include "tier.h"

/* In-place heapsort: glibc's qsort may call malloc, and the policy runs
 * under a lock that fork's prepare handler takes after jemalloc's. */
static bool before(const struct tier_cand *a, const struct tier_cand *b, bool hottest)
{
	return hottest ? a->heat > b->heat : a->heat < b->heat;
}

static void sift(struct tier_cand *v, size_t i, size_t n, bool hottest)
{
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			return;
		/* a heap whose root sorts last, so the array ends up in order */
		if (c + 1 < n && before(&v[c], &v[c + 1], hottest))
			c++;
		if (!before(&v[i], &v[c], hottest))
			return;
		struct tier_cand t = v[i];
		v[i] = v[c];
		v[c] = t;
		i = c;
	}
}

void tier_cand_sort(struct tier_cand *v, size_t n, bool hottest_first)
{
	for (size_t i = n / 2; i-- > 0;)
		sift(v, i, n, hottest_first);
	for (size_t end = n; end > 1; end--) {
		struct tier_cand t = v[0];
		v[0] = v[end - 1];
		v[end - 1] = t;
		sift(v, 0, end - 1, hottest_first);
	}
}

/* hot may displace cold: hotter by the hysteresis factor, or by a wide
 * absolute margin (a source that smears heat over neighbours, like DAMON's
 * regions, can keep ratios under the factor while the gap stays large).
 * Either way the gap must reach swap_gap: among cold blocks, ratios are
 * noise (0.2 against 0.09) and a swap of two cold blocks costs two moves
 * and gains nothing.  This part only weakens as cold gets hotter: past the
 * first fast candidate that fails it, every later one fails too. */
static bool hotter_by_heat(const struct tier_policy_in *in, const struct tier_cand *hot,
			   const struct tier_cand *cold)
{
	float gap = hot->heat - cold->heat;
	if (gap < in->swap_gap)
		return false;
	return (double)hot->heat >= in->hysteresis * (double)cold->heat || gap >= in->wide_margin;
}

/* ... and the gap stands out from both blocks' noise (z standard errors).
 * A noisy candidate (a block of a few pages, a part) fails alone: the
 * ones after it may still pass. */
static bool significant(const struct tier_policy_in *in, const struct tier_cand *hot,
			const struct tier_cand *cold)
{
	if (hot->heat - cold->heat >= in->z * sqrtf(hot->se * hot->se + cold->se * cold->se))
		return true;
	/* a slow block found all written reads "at least" a rate, with an
	 * error as large as the rate (GUPS's new hot set after a shift: 45
	 * +- 23 from 8-page slices over a sixteenth of a period, against
	 * fast blocks at 0.7 +- 0.2, stayed slow for 10 s).  What it surely
	 * is (lo) clearing what the fast block may be is the test then; for
	 * a rate read from a few written pages it is weaker than the one
	 * above (5 of 8: lo 6.6 from 15.7 +- 7.3), so it is not used there */
	return hot->unsure && hot->lo - cold->heat >= in->z * cold->se;
}

static void unpick(struct tier_cand *fast, const size_t *picks, size_t np)
{
	for (size_t k = 0; k < np; k++)
		fast[picks[k]].chosen = false;
}

/* A swap's picks, coldest first until enough was freed, may hold blocks
 * the room does not need: the smallest are given back first (among equal
 * sizes, the hotter), while what is left still frees `need`.  On uniform
 * GUPS the coldest fast blocks were 4-56 KiB ones of the program's small
 * data, read by DAMON's regions as 0.003-0.5 one round and 11-188 ten
 * rounds later: taken in front of each 2 MiB victim, they were demoted
 * and promoted back, a third of the moves and most of those undone. */
static size_t prune(struct tier_cand *fast, size_t *picks, size_t np, size_t *freed, size_t need)
{
	/* insertion sort by bytes, then hotter (later) first */
	for (size_t i = 1; i < np; i++)
		for (size_t j = i; j > 0; j--) {
			const struct tier_cand *a = &fast[picks[j - 1]], *b = &fast[picks[j]];
			if (a->bytes < b->bytes || (a->bytes == b->bytes && picks[j - 1] > picks[j]))
				break;
			size_t t = picks[j - 1];
			picks[j - 1] = picks[j];
			picks[j] = t;
		}
	size_t kept = 0;
	for (size_t k = 0; k < np; k++) {
		size_t b = fast[picks[k]].bytes;
		if (*freed - b >= need) {
			fast[picks[k]].chosen = false;
			*freed -= b;
		} else {
			picks[kept++] = picks[k];
		}
	}
	return kept;
}

/* Slow candidates tried in a row without finding room before the swap
 * step gives up (each try walks the fast candidates). */
#define SWAP_TRIES 64
/* Fast candidates one swap may take. */
#define SWAP_PICKS 512

void tier_policy_decide(const struct tier_policy_in *in, struct tier_cand *fast, size_t nfast,
                        struct tier_cand *slow, size_t nslow, struct tier_policy_out *out)
{
	*out = (struct tier_policy_out){0};
	tier_cand_sort(fast, nfast, false);
	tier_cand_sort(slow, nslow, true);
	size_t high = (size_t)((double)in->fast_limit * in->wm_high);
	size_t low = (size_t)((double)in->fast_limit * in->wm_low);
	size_t used = in->fast_used, pbudget = in->promote_budget, dbudget = in->demote_budget;
	size_t room = in->room_capped ? in->fast_room : SIZE_MAX;
	size_t f = 0, s = 0;

	/* 1. over the high watermark: back down to the low one */
	if (used > high)
		for (; f < nfast && used > low && fast[f].bytes <= dbudget; f++) {
			fast[f].chosen = true;
			used -= fast[f].bytes;
			dbudget -= fast[f].bytes;
			room = room > SIZE_MAX - fast[f].bytes ? SIZE_MAX : room + fast[f].bytes;
			out->demote_bytes += fast[f].bytes;
			out->demote_blocks++;
		}

	/* 2. room under the high watermark: the hottest slow blocks first */
	for (; s < nslow && slow[s].heat >= in->min_heat && slow[s].heat > 0; s++) {
		if (used + slow[s].bytes > high || slow[s].bytes > pbudget)
			break;
		if (slow[s].bytes > room)
			break; /* the budget has room, the node not: a swap may (counted there) */
		slow[s].chosen = true;
		used += slow[s].bytes;
		room -= slow[s].bytes;
		pbudget -= slow[s].bytes;
		out->promote_bytes += slow[s].bytes;
		out->promote_blocks++;
	}

	/* 3. no room: make room for each next-hottest slow block by demoting
	 * the coldest fast blocks that it is clearly hotter than (by heat and
	 * beyond the noise); a candidate too noisy to judge is passed over,
	 * not allowed to stop the round */
	size_t picks[SWAP_PICKS];
	for (unsigned tries = 0; s < nslow && tries < SWAP_TRIES; s++) {
		struct tier_cand *hot = &slow[s];
		if (hot->heat < in->min_heat || hot->heat <= 0 || hot->heat < in->swap_min)
			break; /* hottest first: the rest are colder */
		if (hot->bytes > pbudget)
			continue;
		if (hot->lo < in->swap_min)
			continue; /* may be above the cut by chance: ranked by heat, a
				   * later block may be surer */
		while (f < nfast && fast[f].chosen)
			f++;
		size_t freed = 0, np = 0;
		/* what the budget and the node both need freed first */
		size_t over = used + hot->bytes > high ? used + hot->bytes - high : 0;
		size_t short_node = hot->bytes > room ? hot->bytes - room : 0;
		size_t need = over > short_node ? over : short_node;
		for (size_t g = f; g < nfast && freed < need && np < SWAP_PICKS; g++) {
			/* (one looking again is spoken for: the next slow block
			 * has others looked at, not the same one again: a shifted
			 * hot set's 16 blocks had one victim looked at a round) */
			if (fast[g].chosen || fast[g].retest)
				continue;
			if (!hotter_by_heat(in, hot, &fast[g]))
				break;
			/* a fast block gives way on what it surely is: uniform
			 * GUPS's fast blocks, looked at over windows of 2-3
			 * periods, came back all written (at least 1.2) and read
			 * 1-1.7 where the slow ones read 2.5 and more; each was
			 * displaced on that difference */
			if (fast[g].unsure || !significant(in, hot, &fast[g]))
				continue;
			if (freed + fast[g].bytes > dbudget)
				break;
			fast[g].chosen = true;
			picks[np++] = g;
			freed += fast[g].bytes;
		}
		if (freed < need) {
			/* not enough colder memory to give way */
			if (freed >= over)
				out->room_short++;
			unpick(fast, picks, np);
			tries++;
			continue;
		}
		np = prune(fast, picks, np, &freed, need); /* the least that frees it */
		bool unjudged = false;
		for (size_t k = 0; k < np; k++)
			unjudged |= !fast[picks[k]].judged;
		if (hot->picked_on_own || unjudged) {
			/* enough, but the slow block ranks first on the very looks
			 * that would judge it: on uniform GUPS the hottest of a
			 * hundred alike blocks read 5-30 against a typical 1.5-2.5
			 * and passed every test of its own noise.  A look made
			 * after the pick is free of that selection; the caller
			 * takes one first.  The fast blocks that would give way
			 * are looked at over the same window: judged on long
			 * windows (1-1.5 a period, a look spanning the program's
			 * quiet moments) against the slow block's one period
			 * (3 and more, all written), alike blocks of uniform GUPS
			 * swapped on the difference of the windows */
			for (size_t k = 0; k < np; k++)
				if (!fast[picks[k]].judged)
					fast[picks[k]].retest = true;
			unpick(fast, picks, np);
			hot->retest = hot->picked_on_own;
			out->retests++;
			continue;
		}
		tries = 0;
		for (size_t k = 0; k < np; k++) {
			out->demote_bytes += fast[picks[k]].bytes;
			out->demote_blocks++;
			out->swaps++;
		}
		used = used - freed + hot->bytes;
		room = hot->bytes > freed ? room - (hot->bytes - freed)
		       : room > SIZE_MAX - (freed - hot->bytes) ? SIZE_MAX : room + (freed - hot->bytes);
		dbudget -= freed;
		pbudget -= hot->bytes;
		hot->chosen = true;
		out->promote_bytes += hot->bytes;
		out->promote_blocks++;
	}
	out->fast_after = used;
}

double tier_policy_moved_heat(const struct tier_cand *fast, size_t nfast, const struct tier_cand *slow,
			      size_t nslow, float cut)
{
	double x = 0;
	for (size_t i = 0; i < nslow; i++)
		if (slow[i].chosen)
			x += (double)slow[i].heat * (double)(slow[i].bytes >> TIER_PAGE_SHIFT);
		else if (slow[i].retest && slow[i].heat > cut)
			x += (double)(slow[i].heat - cut) * (double)(slow[i].bytes >> TIER_PAGE_SHIFT);
	for (size_t i = 0; i < nfast; i++)
		if (fast[i].chosen)
			x -= (double)fast[i].heat * (double)(fast[i].bytes >> TIER_PAGE_SHIFT);
	return x;
}

float tier_regret_move(float regret, bool undid)
{
	return regret + 0.0625f * ((undid ? 1.0f : 0.0f) - regret);
}

float tier_regret_decay(float regret, double factor) { return (float)(regret * factor); }

void tier_policy_thresholds(const struct tier_hist *const *h, int ntiers, size_t high_bytes,
                            double hysteresis, float min_heat, struct tier_thresholds *out)
{
	float cut = tier_hist_cut(h, ntiers, high_bytes >> TIER_PAGE_SHIFT);
	out->cut = cut;
	out->swap_min = cut > min_heat ? cut : min_heat;
	out->demote_max = (float)(cut / hysteresis);
}
