/* The split test of pageheat.c on simulated per-page counts: even heat
 * (every page seen with the same probability each window) against heat
 * concentrated on a few pages, over the windows a probe takes. */
#include <math.h>

#include "../tap.h"
#include "pageheat.h"

static uint32_t rng = 88172645u;
static double uni(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return (rng >> 8) / 16777216.0;
}

/* counts of n pages over w windows; page i seen with probability p[i] */
static void draw(uint8_t *cnt, uint32_t n, uint32_t w, const double *p)
{
	for (uint32_t i = 0; i < n; i++) {
		cnt[i] = 0;
		for (uint32_t k = 0; k < w; k++)
			cnt[i] += uni() < p[i];
	}
}

/* the probe's verdict (monitor.c): over-dispersed, and concentrated
 * enough that splitting pays */
static bool splits(const uint8_t *cnt, uint32_t n, uint32_t w)
{
	return tier_ph_dispersion_of(cnt, n, w) >= TIER_PH_SPLIT_AT && tier_ph_cold_half_of(cnt, n) < TIER_PH_COLD_SPLIT;
}

int main(void)
{
	enum { N = 512, W = TIER_PH_PROBE_WINDOWS };
	static uint8_t cnt[N];
	static double p[N];
	int wrong = 0;
	float worst = 0;
	/* even heat at rates from rare to near saturated: never split */
	for (double q = 0.02; q < 0.99; q += 0.04)
		for (int rep = 0; rep < 20; rep++) {
			for (int i = 0; i < N; i++)
				p[i] = q;
			draw(cnt, N, W, p);
			float d = tier_ph_dispersion_of(cnt, N, W);
			if (d > worst)
				worst = d;
			wrong += d >= TIER_PH_SPLIT_AT;
		}
	ok(wrong == 0, "even heat, 25 rates x 20 draws: never split (highest dispersion %.2f, split at %.1f)",
	   (double)worst, (double)TIER_PH_SPLIT_AT);

	/* a Zipf-like block: a tenth of the pages hot (seen in most windows),
	 * the rest rarely: split */
	wrong = 0;
	float least = 1e9f;
	for (int rep = 0; rep < 50; rep++) {
		for (int i = 0; i < N; i++)
			p[i] = i % 10 == 0 ? 0.8 : 0.03;
		draw(cnt, N, W, p);
		float d = tier_ph_dispersion_of(cnt, N, W);
		if (d < least)
			least = d;
		wrong += !splits(cnt, N, W);
	}
	ok(wrong == 0, "a tenth of the pages hot: always split (lowest dispersion %.2f)", (double)least);

	/* a key-value store's pages: items of all popularities mixed, about a
	 * third of the pages holding a popular item (written in half the
	 * windows), the rest rarely: the skew that pays page by page (a page
	 * oracle 0.73 against a block oracle 0.41 in the tiered VM) */
	wrong = 0;
	least = 1e9f;
	for (int rep = 0; rep < 50; rep++) {
		for (int i = 0; i < N; i++)
			p[i] = uni() < 0.3 ? 0.5 : 0.05;
		draw(cnt, N, W, p);
		float d = tier_ph_dispersion_of(cnt, N, W);
		if (d < least)
			least = d;
		wrong += !splits(cnt, N, W);
	}
	ok(wrong == 0, "a key-value mix (30%% of pages at 0.5, the rest 0.05): always split (lowest dispersion %.2f)",
	   (double)least);

	/* hot pages a few percent of the block, the rest cold */
	wrong = 0;
	for (int rep = 0; rep < 50; rep++) {
		for (int i = 0; i < N; i++)
			p[i] = i % 32 == 0 ? 0.9 : 0.0;
		draw(cnt, N, W, p);
		wrong += !splits(cnt, N, W);
	}
	ok(wrong == 0, "16 hot pages of 512, the rest never seen: always split");

	/* every page hot but an allocation's padding (32 pages never touched):
	 * over-dispersed (saturated counts have ~0 binomial variance) but not
	 * worth a split: 6% of the block would move */
	wrong = 0;
	float cold = 1;
	for (int rep = 0; rep < 50; rep++) {
		for (int i = 0; i < N; i++)
			p[i] = i < N - 32 ? 0.97 : 0.0;
		draw(cnt, N, W, p);
		float c = tier_ph_cold_half_of(cnt, N);
		cold = c < cold ? c : cold;
		wrong += tier_ph_dispersion_of(cnt, N, W) < TIER_PH_SPLIT_AT || splits(cnt, N, W);
	}
	ok(wrong == 0, "all hot but 32 padding pages: over-dispersed, yet never split (coldest half holds >= %.2f of the heat)",
	   (double)cold);
	/* a block half hot, half never touched (two allocations, one hot) */
	for (int i = 0; i < N; i++)
		p[i] = i < N / 2 ? 0.9 : 0.0;
	draw(cnt, N, W, p);
	ok(splits(cnt, N, W) && tier_ph_cold_half_of(cnt, N) == 0, "half hot, half never touched: split (coldest half %.2f)",
	   (double)tier_ph_cold_half_of(cnt, N));
	ok(tier_ph_cold_half_of((const uint8_t[4]){0, 0, 0, 0}, 4) == 0.5f &&
	       tier_ph_cold_half_of((const uint8_t[4]){2, 2, 2, 2}, 4) == 0.5f,
	   "cold half: nothing seen, or even counts: 0.5");

	/* what joins again: even heat after a split stays under the join mark
	 * most of the time over the longer windows a split block keeps */
	wrong = 0;
	for (int rep = 0; rep < 50; rep++) {
		for (int i = 0; i < N; i++)
			p[i] = 0.3;
		draw(cnt, N, TIER_PH_WINDOWS, p);
		wrong += tier_ph_dispersion_of(cnt, N, TIER_PH_WINDOWS) >= TIER_PH_JOIN_AT;
	}
	ok(wrong == 0, "even heat over %d windows: under the join mark", TIER_PH_WINDOWS);

	ok(tier_ph_dispersion_of(cnt, N, 0) == 0 && tier_ph_dispersion_of((const uint8_t[2]){0, 0}, 2, 4) == 0,
	   "no windows, or nothing seen: no verdict (0)");
	return done();
}
