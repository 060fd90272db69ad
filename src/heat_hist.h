/* Heat histograms: pages counted by heat in log-spaced buckets, kept up to
 * date one block at a time, so that thresholds and the hot-set curve are
 * read in O(buckets) instead of sorting every block.  Pure logic. */
#ifndef TIER_HEAT_HIST_H
#define TIER_HEAT_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bucket 0 holds heat below 2^TIER_HIST_MIN_LOG2 (no measurable access);
 * bucket k >= 1 holds [2^(MIN + (k-1)/STEPS), 2^(MIN + k/STEPS)); the last
 * bucket also holds everything hotter. */
#define TIER_HIST_BUCKETS 64
#define TIER_HIST_STEPS 4     /* buckets per doubling */
#define TIER_HIST_MIN_LOG2 (-12)

int tier_hist_bucket(float heat);
/* Lower and upper bound of bucket k (bucket 0: 0 and 2^MIN). */
float tier_hist_lower(int k);
float tier_hist_upper(int k);
/* The heat a bucket stands for (its geometric middle; 0 for bucket 0). */
float tier_hist_mid(int k);

struct tier_hist {
	uint64_t pages[TIER_HIST_BUCKETS];
	uint64_t total;
};

void tier_hist_add(struct tier_hist *h, int bucket, uint64_t pages);
void tier_hist_sub(struct tier_hist *h, int bucket, uint64_t pages);

/* The smallest heat h such that the pages of all histograms with heat at
 * least h do not exceed `pages`: the cut that the fastest `pages` pages
 * would hold (interpolated inside the bucket where it falls).  Returns 0
 * when everything fits. */
float tier_hist_cut(const struct tier_hist *const *h, int n, uint64_t pages);

/* The share of all heat (pages x heat) that the hottest `pages` pages
 * hold: the best hit share a fast tier of that size could reach as the
 * histograms see it.  1 when nothing is hot. */
float tier_hist_top_share(const struct tier_hist *const *h, int n, uint64_t pages);
/* The hot-set curve over the combined histograms: for each fraction f[i]
 * (0 < f <= 1) of all accesses (pages x heat), the pages that the hottest
 * memory needs to hold that share (out[i]).  0 when nothing is hot. */
void tier_hist_curve(const struct tier_hist *const *h, int n, const double *f, int nf,
                     uint64_t *out);

/* A decaying histogram of observed rates, weighted by pages: for each
 * source's floor (the rate its coldest memory shows). */
struct tier_rate_hist {
	double w[TIER_HIST_BUCKETS];
	double total;
};
void tier_rate_hist_add(struct tier_rate_hist *h, float rate, double weight);
void tier_rate_hist_decay(struct tier_rate_hist *h, double factor);
/* The rate below which `q` of the weight lies (lower bound of its bucket;
 * 0 when that bucket is the zero bucket or the histogram is empty). */
float tier_rate_hist_quantile(const struct tier_rate_hist *h, double q);

/* A block's heat noise: the moving variance of its fold-to-fold change
 * (half of it is the variance of each estimate, what a move must stand
 * out from: policy.h).  Noise is told from change by reversals: a change
 * counts only where it turns back the one before (prev), and then as the
 * smaller of the two, scaled so that independent noise gives E[change^2]
 * (TIER_NOISE_REVERSAL: 2.55 for Gaussian noise, simulated).  A level
 * shift or a trend (the hot set moved) is then taken for what it is, not
 * for noise that would make every later move of the block look
 * insignificant.  Returns the new variance; weight is one fold's. */
#define TIER_NOISE_REVERSAL 2.55f
float tier_heat_noise_step(float var, float prev, float dh, float weight);

/* A measurement that the block's estimate could hardly have given: n
 * pages measured over a window of w periods, a share `seen` of them found
 * written, where the estimate is `rate` writes per page per period.
 * -1: far fewer (a hot block went cold), +1: far more (a cold one turned
 * hot), 0: what the estimate allows.  Each page is written in the window
 * with probability 1 - exp(-rate w), so the count is binomial; the test
 * gives the estimate a factor TIER_SURPRISE_SLACK either way (it is a
 * moving average of a rate that varies) and calls a surprise what that
 * leaves less likely than TIER_SURPRISE_P.  The change detector's cue
 * that the ranking churned: the fast tier's hit share cannot see a hot set
 * that moved while neither it nor its new place has been looked at. */
#define TIER_SURPRISE_SLACK 1.5
#define TIER_SURPRISE_P 1e-3
/* ... and a block turned hot shows at least this many pages written (a
 * block estimated idle that shows two is not news) */
#define TIER_SURPRISE_MIN_SEEN 4
int tier_heat_surprise(int n, float rate, float w, float seen);
/* Whether a surprise (its sign) that took a block on `tier` from heat
 * `was` (surely at least was_lo) to `now` churned the ranking: a fast
 * block surely clearly hot (was_lo at least `hot`: the caller's, the cut
 * times the hysteresis squared) gone under the cut, or a slow one under
 * the cut turned clearly hot on a look that counted its pages (not one
 * that found them all written: `at_least`, which a warm block of 8-page
 * slices gives on 2.5% of its one-period looks).  Surprises within the
 * band change no placement.  Cut 0: everything warm fits, and only a fast
 * block surely at least `hot` read under a sixteenth of it churns (the
 * hot set moved or stopped: where it went is worth a burst's look; a slow
 * block turned hot is promoted without one). */
bool tier_heat_churn(int tier, int surprise, float was, float was_lo, float now, bool at_least, float cut,
		     float hot);
/* Whether a fast block's surprise counts toward several gone cold in one
 * period: it was over `base` (the cut; with no cut, the least heat
 * worth placing times the hysteresis squared) times the hysteresis, and
 * the look took it under a hysteresis squared of that.  One such block
 * may be noise or a pause; TIER_COLD_TOGETHER in one period, each look
 * improbable alone (TIER_SURPRISE_P), is a hot set that moved.  The
 * single-block cue asks for a lower bound at the cut times the
 * hysteresis squared, which a set placed moments before it moved has
 * not reached (traced: lower bounds 0.7-3.6 against 3.1-7.2, 13-15 such
 * blocks in one period, no cue). */
#define TIER_COLD_TOGETHER 3
bool tier_heat_cold_member(int surprise, float was, float now, float base, float hysteresis);
/* The sampling variance of a rate read from n pages over a window of w
 * periods, a share f of them found written: the count is binomial and the
 * rate -ln(1 - f) / w, so var = f (1 - f) / n / ((1 - f) w)^2.  A share of
 * 0 still leaves unseen a rate of about 1 / (n w) (f counts as 1 / n
 * there) and one near 1 says "at least" (f counts as 0.95, the cap the
 * rate was read with). */
float tier_heat_rate_var(float f, uint32_t n, float w);
/* A lower confidence bound (one-sided, TIER_RATE_LO_Z: 95%) of a rate
 * measured by looks worth `pages` pages in all.  A look is worth the pages
 * that, looked at over the window where a look tells the most, would
 * measure its rate as closely as it did (tier_heat_look_pages: its rate
 * and its variance, tier_heat_rate_var); looks' pages add up, decayed like
 * the rate.  The variance is symmetric and wrong at the ends of the
 * binomial (all 8 pages of a slice written in a sixteenth of a period read
 * 48 +- 25 where the count cannot tell 48 from 20; 5 of 8 read 5.4 +- 2.5
 * where 2.3 fits): the bound is Wilson's on the share that as many pages
 * would show over that window.  Unlike a per-look bound averaged, it
 * tightens as looks agree.  Summed as pages, not as 1 / variance: a
 * variance is in the units of its look's rate, and the information of
 * many looks at 0.05 read at a rate risen to 1 (one look all written,
 * averaged in) made a bound of 0.79 for 0.91 where the looks vouch for
 * 0.36; slow blocks were promoted on such bounds and read 0.1 once fast. */
#define TIER_RATE_LO_Z 1.645f
#define TIER_RATE_LO_X 1.5936f /* rate x window where a look tells the most */
float tier_heat_look_pages(float rate, float var);
float tier_heat_rate_lo(float rate, float pages);
/* P(X <= k) for X ~ Binomial(n, p). */
double tier_binom_cdf(int n, double p, int k);

#endif
