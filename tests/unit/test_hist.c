/* Heat histograms: buckets, incremental updates, the cut, the hot-set
 * curve and rate quantiles (floors). */
#include <math.h>
#include <string.h>

#include "../tap.h"
#include "heat_hist.h"

static int near(double x, double want, double tol) { return fabs(x - want) <= tol * fabs(want); }

/* The bound after k looks alike (information k times one look's): f of
 * n pages written over w periods, read as the fold reads it. */
static float look_lo(float f, uint32_t n, float w, float k)
{
	float fc = f > 0.95f ? 0.95f : f;
	float v = tier_heat_rate_var(f, n, w);
	float r = -log1pf(-fc) / w;
	return tier_heat_rate_lo(r, k * tier_heat_look_pages(r, v));
}

int main(void)
{
	ok(tier_hist_bucket(0) == 0 && tier_hist_bucket(1e-9f) == 0 && tier_hist_bucket(NAN) == 0,
	   "zero, tiny and NaN heat go to bucket 0");
	int mono = 1;
	for (float h = 0.001f; h < 10; h *= 1.1f) {
		int k = tier_hist_bucket(h);
		mono &= tier_hist_lower(k) <= h * 1.0001f && h < tier_hist_upper(k) * 1.0001f;
	}
	ok(mono, "every heat falls inside its bucket's bounds");
	ok(tier_hist_bucket(1e6f) == TIER_HIST_BUCKETS - 1, "huge heat: the last bucket");

	/* 1000 cold pages (heat ~0.001), 100 warm (0.1), 10 hot (1.0) */
	struct tier_hist fast, slow;
	memset(&fast, 0, sizeof(fast));
	memset(&slow, 0, sizeof(slow));
	tier_hist_add(&slow, tier_hist_bucket(0.001f), 1000);
	tier_hist_add(&slow, tier_hist_bucket(0.1f), 60);
	tier_hist_add(&fast, tier_hist_bucket(0.1f), 40);
	tier_hist_add(&fast, tier_hist_bucket(1.0f), 10);
	const struct tier_hist *h[2] = {&fast, &slow};
	ok(fast.total == 50 && slow.total == 1060, "totals");

	float cut = tier_hist_cut(h, 2, 10);
	ok(cut > 0.1f && cut <= 1.0f, "room for 10 pages: the cut keeps the 10 hot ones above it (%.3f)",
	   (double)cut);
	cut = tier_hist_cut(h, 2, 60);
	ok(cut > tier_hist_lower(tier_hist_bucket(0.1f)) && cut < tier_hist_upper(tier_hist_bucket(0.1f)),
	   "room for 60: the cut falls inside the warm bucket (%.3f)", (double)cut);
	ok(tier_hist_cut(h, 2, 100000) == 0.0f, "room for everything: cut 0");

	/* accesses: hot 10 x 1 = 10, warm 100 x 0.1 = 10, cold 1000 x 0.001 = 1 */
	double f[3] = {0.4, 0.9, 0.99};
	uint64_t pages[3];
	tier_hist_curve(h, 2, f, 3, pages);
	/* the bucket mids are not the exact heats: allow their width */
	ok(pages[0] >= 4 && pages[0] <= 10, "40%% of accesses: within the hot pages (%llu)",
	   (unsigned long long)pages[0]);
	ok(pages[1] > 10 && pages[1] <= 110, "90%%: hot and most of the warm (%llu)", (unsigned long long)pages[1]);
	ok(pages[2] > 110 && pages[2] <= 1110, "99%%: reaches into the cold (%llu)", (unsigned long long)pages[2]);

	/* incremental: move the hot pages down, the curve follows */
	tier_hist_sub(&fast, tier_hist_bucket(1.0f), 10);
	tier_hist_add(&slow, tier_hist_bucket(0.001f), 10);
	tier_hist_curve(h, 2, f, 3, pages);
	ok(pages[0] <= 100 && fast.total == 40 && slow.total == 1070, "after moving pages: 40%% in warm (%llu)",
	   (unsigned long long)pages[0]);
	tier_hist_sub(&fast, 5, 1 << 30);
	ok(fast.total == 40, "removing more than a bucket holds clamps at zero");

	/* known hot set: 8192 pages at heat 1, 57344 at 0: 90/95/99% sizes */
	struct tier_hist k;
	memset(&k, 0, sizeof(k));
	tier_hist_add(&k, tier_hist_bucket(1.0f), 8192);
	tier_hist_add(&k, 0, 57344);
	const struct tier_hist *kh[1] = {&k};
	double g[3] = {0.9, 0.95, 0.99};
	tier_hist_curve(kh, 1, g, 3, pages);
	ok(near((double)pages[0], 0.9 * 8192, 0.01) && near((double)pages[1], 0.95 * 8192, 0.01) &&
		   near((double)pages[2], 0.99 * 8192, 0.01),
	   "uniform hot set of 8192 pages: 90/95/99%% need %llu/%llu/%llu", (unsigned long long)pages[0],
	   (unsigned long long)pages[1], (unsigned long long)pages[2]);
	memset(&k, 0, sizeof(k));
	tier_hist_curve(kh, 1, g, 3, pages);
	ok(pages[0] == 0 && pages[2] == 0, "nothing accessed: sizes 0");

	/* rate quantiles (floors) */
	struct tier_rate_hist r;
	memset(&r, 0, sizeof(r));
	ok(tier_rate_hist_quantile(&r, 0.1) == 0.0f, "empty: floor 0");
	tier_rate_hist_add(&r, 0.0f, 50);
	tier_rate_hist_add(&r, 0.5f, 950);
	ok(tier_rate_hist_quantile(&r, 0.1) <= 0.5f && tier_rate_hist_quantile(&r, 0.1) > 0.4f,
	   "90%% of memory at 0.5: the floor is 0.5's bucket (%.3f)", (double)tier_rate_hist_quantile(&r, 0.1));
	tier_rate_hist_add(&r, 0.0f, 100);
	ok(tier_rate_hist_quantile(&r, 0.1) == 0.0f, "a tenth idle: floor 0");
	tier_rate_hist_decay(&r, 0.5);
	ok(near(r.total, 550, 1e-9), "decay scales the weights");

	/* heat noise: independent noise is measured as E[change^2] ... */
	{
		uint32_t x = 2463534242u;
		double sum = 0;
		float var = 0, prev = 0, h = 0;
		for (int i = 0; i < 200000; i++) {
			float g = 0; /* about Gaussian, variance 1: a sum of 12 uniforms */
			for (int k = 0; k < 12; k++) {
				x ^= x << 13;
				x ^= x >> 17;
				x ^= x << 5;
				g += (float)(x >> 8) / 16777216.0f;
			}
			g -= 6;
			float dh = g - h;
			h = g;
			var = tier_heat_noise_step(var, prev, dh, 0.25f);
			prev = dh;
			sum += var;
		}
		double mean = sum / 200000;
		ok(mean > 1.7 && mean < 2.3, "independent noise of variance 1: the fold-to-fold variance reads %.2f (2 expected)",
		   mean);
	}
	/* ... a step (a hot set that moved) is not noise ... */
	{
		float var = 0.01f, prev = 0.1f, h = 3.0f;
		float lv[] = {3.1f, 3.0f, 0.0f, 0.0f, 0.0f};
		for (int i = 0; i < 5; i++) {
			float dh = lv[i] - h;
			var = tier_heat_noise_step(var, prev, dh, 0.25f);
			prev = dh;
			h = lv[i];
		}
		ok(var < 0.05f, "3 -> 0 after steady readings: the variance stays small (%.3f): the block's move is significant",
		   (double)var);
	}
	/* ... and a block that swings back and forth is noisy */
	{
		float var = 0, prev = 0, h = 0;
		for (int i = 0; i < 8; i++) {
			float next = i % 2 ? 0.0f : 3.0f, dh = next - h;
			var = tier_heat_noise_step(var, prev, dh, 0.25f);
			prev = dh;
			h = next;
		}
		ok(var > 10, "0, 3, 0, 3...: the variance grows (%.1f)", (double)var);
	}
	/* the best a fast tier could hold: 32 MiB at heat 3 and 224 MiB of
	 * background at 0.6 (GUPS under TCG); a 64 MiB tier holds about half
	 * the heat however it is placed, and all of it when all fits */
	{
		struct tier_hist a = {0}, b = {0};
		tier_hist_add(&a, tier_hist_bucket(3.0f), 8192);
		tier_hist_add(&b, tier_hist_bucket(0.6f), 57344);
		const struct tier_hist *hh[2] = {&a, &b};
		double m3 = tier_hist_mid(tier_hist_bucket(3.0f)), m6 = tier_hist_mid(tier_hist_bucket(0.6f));
		double want = (8192 * m3 + 8192 * m6) / (8192 * m3 + 57344 * m6);
		float top = tier_hist_top_share(hh, 2, 16384);
		ok(fabs(top - want) < 1e-4, "top share of a 64 MiB tier over 32 MiB hot + 224 MiB background: %.3f (want %.3f)",
		   (double)top, want);
		ok(tier_hist_top_share(hh, 2, 1 << 20) == 1.0f && tier_hist_top_share(hh, 2, 0) == 0.0f,
		   "top share: 1 when everything fits, 0 for no room");
		struct tier_hist z = {0};
		const struct tier_hist *hz[1] = {&z};
		ok(tier_hist_top_share(hz, 1, 100) == 1.0f, "top share: 1 when nothing is hot");
	}
	/* surprises: a hot slice gone cold and a cold block turned hot are
	 * seen; the counting noise of a steady block seldom is */
	{
		ok(fabs(tier_binom_cdf(8, 0.5, 3) - 93.0 / 256) < 1e-12 && fabs(tier_binom_cdf(8, 0.9, 7) - (1 - pow(0.9, 8))) < 1e-12 &&
		   tier_binom_cdf(512, 0.001, 512) == 1 && tier_binom_cdf(512, 0.999, -1) == 0,
		   "binomial cdf: exact on small cases, from either side");
		/* GUPS in the VM: a hot block writes each page ~50 times a period,
		 * the uniform background ~1.5; short windows are 1/16 period */
		ok(tier_heat_surprise(8, 48, 0.0625f, 0.125f) == -1, "a hot slice (rate 48) found 1 of 8 written in a short window: gone cold");
		ok(tier_heat_surprise(8, 3, 0.0625f, 1.0f) == 1, "a background slice (rate 3) found all 8 written in a short window: turned hot");
		ok(tier_heat_surprise(512, 0.01f, 1, 0.5f) == 1, "a cold block (5 pages expected) found half written: turned hot");
		ok(tier_heat_surprise(8, 3, 4, 1.0f) == 0 && tier_heat_surprise(8, 48, 4, 1.0f) == 0,
		   "a long window all written: hot and busy alike, no surprise");
		ok(tier_heat_surprise(8, 1, 1, 0.0f) == 0 && tier_heat_surprise(512, 0, 1, 0.004f) == 0,
		   "too few pages expected or seen to tell: no surprise");
		/* churn: GUPS at the default, cut 0.93 among the alike warm
		 * blocks, hysteresis 2 (clearly hot: 1.86); the values of a
		 * traced run */
		ok(tier_heat_churn(0, -1, 28.8f, 27.0f, 0.57f, false, 1.52f, 3.05f) &&
		   tier_heat_churn(1, 1, 0.9f, 0.6f, 12.0f, false, 0.93f, 1.86f),
		   "churn: the old hot set gone to the background, a background block counted hot");
		ok(!tier_heat_churn(0, -1, 1.1f, 0.9f, 0.7f, false, 0.93f, 1.86f) &&
		   !tier_heat_churn(1, 1, 0.8f, 0.5f, 1.3f, false, 0.93f, 1.86f),
		   "no churn: warm blocks' noise across the cut but within the band");
		ok(!tier_heat_churn(1, 1, 0.03f, 0.0f, 2.78f, true, 1.14f, 2.28f),
		   "no churn: a warm slow block's 8-page slice found all written in a period (only 'at least')");
		ok(!tier_heat_churn(0, -1, 5.07f, 1.2f, 0.13f, false, 1.65f, 3.31f),
		   "no churn: a fast block whose heat rested on such looks, not surely hot, read cold");
		ok(!tier_heat_churn(0, -1, 24.8f, 23.0f, 1.90f, false, 0.999f, 1.998f),
		   "no churn: a hot block read warm (a pause of the program), still over the cut");
		ok(!tier_heat_churn(0, 1, 0.5f, 0.4f, 20.0f, false, 0.93f, 1.86f) &&
		   !tier_heat_churn(1, -1, 12.0f, 11.0f, 0.5f, false, 0.93f, 1.86f) &&
		   !tier_heat_churn(1, 1, 1.2f, 1.0f, 12.0f, false, 0.93f, 1.86f),
		   "no churn: surprises the right way for their tier, a slow block over the cut already");
		ok(!tier_heat_churn(0, 0, 20.0f, 19.0f, 0.1f, false, 0.93f, 1.86f) &&
		   !tier_heat_churn(1, 1, 0.1f, 0.0f, 20.0f, false, 0, 0) &&
		   !tier_heat_churn(1, 1, 0.1f, 0.0f, 20.0f, false, 0, 0.48f),
		   "no churn: no surprise, or no cut (everything warm fits) and a slow block turned hot");
		/* everything warm fits (cut 0): the tiering round's mark is
		 * 0.03 x 2^4 = 0.48 at hysteresis 2 */
		ok(tier_heat_churn(0, -1, 30.0f, 24.0f, 0.0f, false, 0, 0.48f),
		   "churn with no cut: a hot fast block gone wholly cold (the hot set moved)");
		ok(!tier_heat_churn(0, -1, 0.6f, 0.4f, 0.0f, false, 0, 0.48f) &&
		   !tier_heat_churn(0, -1, 30.0f, 24.0f, 0.1f, false, 0, 0.48f) &&
		   !tier_heat_churn(0, -1, 30.0f, 24.0f, 0.0f, false, 0, 0),
		   "no churn with no cut: a fast block not surely hot, one still read warm, or no mark given");
		ok(tier_heat_churn(1, 1, 0.5f, 0.3f, 0.95f, false, 0.93f, 0), "a band given narrower than the cut is the cut");
		/* several gone cold together: the default check's hot set, shifted
		 * the moment it was placed (traced values, hysteresis 2) */
		ok(tier_heat_cold_member(-1, 6.5f, 0.96f, 1.79f, 2) && tier_heat_cold_member(-1, 2.24f, 0.12f, 0.77f, 2) &&
		   !tier_heat_churn(0, -1, 6.5f, 3.63f, 0.96f, false, 1.79f, 7.15f),
		   "a hot set's blocks gone cold, short of the single-block band, count together");
		ok(!tier_heat_cold_member(0, 6.5f, 0.1f, 1.79f, 2) && !tier_heat_cold_member(1, 6.5f, 20, 1.79f, 2) &&
		   !tier_heat_cold_member(-1, 1.2f, 0.1f, 0.93f, 2) && !tier_heat_cold_member(-1, 6.5f, 2.0f, 1.79f, 2) &&
		   !tier_heat_cold_member(-1, 6.5f, 0.1f, 0, 2),
		   "not counted: no cold surprise, a warm block near the cut, one still warm, no base");
		/* steady blocks measured with binomial noise, the estimate off by
		 * up to 1.5x: false cues well under TIER_SURPRISE_P's order */
		unsigned long long x = 88172645463325252ull;
		int cues = 0, trials = 0;
		int ns[] = {8, 16, 64, 512};
		float lams[] = {0.02f, 0.1f, 0.3f, 1.0f, 3.0f};
		float off[] = {0.67f, 1.0f, 1.5f};
		for (int a = 0; a < 4; a++)
			for (int c = 0; c < 5; c++)
				for (int o = 0; o < 3; o++) {
					double p = -expm1(-(double)lams[c] * off[o]);
					for (int t = 0; t < 2000; t++, trials++) {
						int k = 0;
						for (int i = 0; i < ns[a]; i++) {
							x ^= x << 13, x ^= x >> 7, x ^= x << 17;
							k += (double)(x >> 11) / 9007199254740992.0 < p;
						}
						cues += tier_heat_surprise(ns[a], lams[c], 1, (float)k / (float)ns[a]) != 0;
					}
				}
		ok(cues <= trials / 1000, "steady blocks (8-512 pages, estimate off by up to 1.5x): %d false surprises in %d", cues, trials);
	}
	/* the sampling error of a written-bit rate: what few pages can tell */
	{
		float a = sqrtf(tier_heat_rate_var(0.875f, 16, 1)), b = sqrtf(tier_heat_rate_var(0.625f, 16, 1));
		float c = sqrtf(tier_heat_rate_var(0.875f, 512, 1)), z = sqrtf(tier_heat_rate_var(0, 512, 10));
		ok(fabsf(a - 0.661f) < 0.01f && fabsf(b - 0.323f) < 0.01f,
		   "16 pages over a period, 14 and 10 written: rates 2.08 +- %.2f and 0.98 +- %.2f, within two errors", a, b);
		ok(c < a / 5 && z < 0.001f, "a whole block tells 5.7x finer (%.3f); none of 512 written over 10 periods: +- %.5f", c, z);
		float one = tier_heat_rate_var(0, 1, 1);
		ok(isfinite(one) && one > 0 && one == tier_heat_rate_var(0.95f, 1, 1),
		   "one page seen unwritten: a finite variance, as if 0.95 written (%g)", (double)one);
		ok(tier_heat_rate_var(1.0f, 8, 0.0625f) == tier_heat_rate_var(0.95f, 8, 0.0625f) &&
		   sqrtf(tier_heat_rate_var(1.0f, 8, 0.0625f)) > 10,
		   "all of 8 written in a sixteenth of a period: 'at least', read at the cap, +- %.0f",
		   sqrtf(tier_heat_rate_var(1.0f, 8, 0.0625f)));
		ok(tier_heat_rate_var(0.5f, 0, 1) == 0 && tier_heat_rate_var(0.5f, 8, 0) == 0, "nothing measured: no error claimed");
	}
	/* the rate's lower bound: what the written pages vouch for */
	{
		float all = look_lo(1.0f, 8, 0.0625f, 1), five = look_lo(0.625f, 8, 0.18f, 1);
		ok(all > 15 && all < 24, "all of 8 written in a sixteenth of a period: surely %.1f a period (read 48 at the cap)",
		   all);
		ok(five > 2.0f && five < 2.6f && five < -log1pf(-0.625f) / 0.18f / 2,
		   "5 of 8 over 0.18 of a period: read %.1f, surely only %.2f (under half)", -log1pf(-0.625f) / 0.18f, five);
		/* at the window where a look tells the most, the bound is
		 * Wilson's on the share itself */
		float x = TIER_RATE_LO_X, f = -expm1f(-x), z = TIER_RATE_LO_Z, z2n = z * z / 8;
		float wil = (f + z2n / 2 - z * sqrtf(f * (1 - f) / 8 + z2n / 32)) / (1 + z2n);
		float at = look_lo(f, 8, 1, 1);
		ok(fabsf(at + log1pf(-wil)) < 0.01f * at, "8 pages at rate x window %.2f: %.3f, Wilson's %.3f", x, at, -log1pf(-wil));
		bool mono = tier_heat_rate_lo(0, 100) == 0, under = true;
		for (int k = 1; k <= 8; k++) {
			float fk = (float)k / 8, prev = (float)(k - 1) / 8;
			mono &= look_lo(fk, 8, 1, 1) > look_lo(prev, 8, 1, 1);
			if (k < 8)
				under &= look_lo(fk, 8, 1, 1) < -log1pf(-fk);
		}
		ok(mono && under, "0 to 8 of 8 written: the bound rises with the count, from 0, and stays under the rate read");
		/* looks that agree tighten it; decayed like the rate, 0.707 a look */
		float one = look_lo(0.625f, 8, 1, 1), ten = look_lo(0.625f, 8, 1, (1 - powf(0.707f, 10)) / (1 - 0.707f)),
		      many = look_lo(0.625f, 8, 1, 64), r = -log1pf(-0.625f);
		ok(one < 0.5f * r && ten > 1.3f * one && ten < r && many > 0.8f * r && many < r,
		   "5 of 8 over a period (%.2f): one look %.2f, ten decayed %.2f, 64 %.2f", r, one, ten, many);
		float whole = look_lo(0.5f, 512, 1, 1), slice = look_lo(0.5f, 8, 1, 1);
		ok(whole > 0.85f * -log1pf(-0.5f) && whole < -log1pf(-0.5f) && slice < 0.5f * -log1pf(-0.5f),
		   "half written: a whole block surely %.3f of %.3f, a slice of 8 pages only %.3f", whole, -log1pf(-0.5f),
		   slice);
		ok(tier_heat_rate_lo(1, 0) == 0 && tier_heat_rate_lo(0, 10) == 0, "nothing measured: nothing vouched for");
		/* ten looks at 0.05 (8-page slices, a period each), then one all
		 * written averaged in: the pooled pages are those looks', not
		 * their information read at the new rate */
		float r0 = -log1pf(-0.049f), pages = 0, rate = r0, d = 0.707f;
		for (int k = 0; k < 10; k++)
			pages = pages * d + tier_heat_look_pages(r0, tier_heat_rate_var(0.049f, 8, 1));
		float r1 = -log1pf(-0.95f);
		rate = rate * d + r1 * (1 - d);
		pages = pages * d + tier_heat_look_pages(r1, tier_heat_rate_var(1.0f, 8, 1));
		float lo = tier_heat_rate_lo(rate, pages);
		ok(lo > 0 && lo < 0.5f * rate, "a rate risen on one look all written (%.2f): bound %.2f, not near it", rate,
		   lo);
	}
	return done();
}
