#include <math.h>
#include <stdint.h>

#include "heat_hist.h"

/* Bucket bounds without libm: under the TCG emulation these tests run in,
 * exp2f and log2f take 300-650 ns a call (100x native), and a balance
 * round that read 250 bucket bounds spent a quarter of the default's
 * budget on them.  2^(j/8) for j = 0..7, the eighths of a doubling that
 * bounds (quarters) and middles (odd eighths) fall on. */
_Static_assert(TIER_HIST_STEPS == 4, "bounds on quarters of a doubling");
static const float eighths[8] = {1.0f, 1.09050773f, 1.18920712f, 1.29683955f,
				 1.41421356f, 1.54221083f, 1.68179283f, 1.83400809f};

/* 2^(e8 / 8), exact in the power of two (normal floats only: the range
 * here is 2^-12 to 2^4). */
static float pow2_eighths(int e8)
{
	int q = e8 >= 0 ? e8 / 8 : -((-e8 + 7) / 8);
	union {
		uint32_t u;
		float f;
	} two = {.u = (uint32_t)(q + 127) << 23};
	return eighths[e8 - 8 * q] * two.f;
}

int tier_hist_bucket(float heat)
{
	if (!(heat >= pow2_eighths(8 * TIER_HIST_MIN_LOG2)))
		return 0; /* also NaN */
	if (heat >= pow2_eighths(8 * TIER_HIST_MIN_LOG2 + 2 * (TIER_HIST_BUCKETS - 1)))
		return TIER_HIST_BUCKETS - 1;
	/* the exponent gives the doubling, the mantissa the quarter of it */
	union {
		float f;
		uint32_t u;
	} v = {.f = heat};
	int e = (int)(v.u >> 23 & 0xff) - 127;
	v.u = (v.u & 0x7fffffu) | (127u << 23); /* the mantissa, in [1, 2) */
	int quarter = (v.f >= eighths[2]) + (v.f >= eighths[4]) + (v.f >= eighths[6]);
	return 1 + (e - TIER_HIST_MIN_LOG2) * TIER_HIST_STEPS + quarter;
}

float tier_hist_lower(int k)
{
	return k <= 0 ? 0.0f : pow2_eighths(8 * TIER_HIST_MIN_LOG2 + 2 * (k - 1));
}

float tier_hist_upper(int k)
{
	return pow2_eighths(8 * TIER_HIST_MIN_LOG2 + 2 * k);
}

float tier_hist_mid(int k)
{
	return k <= 0 ? 0.0f : pow2_eighths(8 * TIER_HIST_MIN_LOG2 + 2 * k - 1);
}

void tier_hist_add(struct tier_hist *h, int bucket, uint64_t pages)
{
	h->pages[bucket] += pages;
	h->total += pages;
}

void tier_hist_sub(struct tier_hist *h, int bucket, uint64_t pages)
{
	/* never below zero, whatever a caller got wrong */
	uint64_t p = pages < h->pages[bucket] ? pages : h->pages[bucket];
	h->pages[bucket] -= p;
	h->total -= p < h->total ? p : h->total;
}

static uint64_t pages_in(const struct tier_hist *const *h, int n, int k)
{
	uint64_t s = 0;
	for (int i = 0; i < n; i++)
		s += h[i]->pages[k];
	return s;
}

float tier_hist_cut(const struct tier_hist *const *h, int n, uint64_t pages)
{
	uint64_t acc = 0;
	for (int k = TIER_HIST_BUCKETS - 1; k >= 1; k--) {
		uint64_t in = pages_in(h, n, k);
		if (acc + in > pages) {
			/* a share of this bucket fits: interpolate in log space */
			double frac = in ? (double)(pages - acc) / (double)in : 0.0;
			double lo = log2(tier_hist_lower(k)), hi = log2(tier_hist_upper(k));
			return (float)exp2(hi - frac * (hi - lo));
		}
		acc += in;
	}
	return 0.0f;
}

float tier_hist_top_share(const struct tier_hist *const *h, int n, uint64_t pages)
{
	double total = 0, top = 0;
	uint64_t left = pages;
	for (int k = TIER_HIST_BUCKETS - 1; k >= 1; k--) {
		uint64_t in = pages_in(h, n, k);
		uint64_t take = in < left ? in : left;
		total += (double)in * tier_hist_mid(k);
		top += (double)take * tier_hist_mid(k);
		left -= take;
	}
	return total > 0 ? (float)(top / total) : 1.0f;
}

void tier_hist_curve(const struct tier_hist *const *h, int n, const double *f, int nf,
                     uint64_t *out)
{
	double total = 0;
	for (int k = 1; k < TIER_HIST_BUCKETS; k++)
		total += (double)pages_in(h, n, k) * tier_hist_mid(k);
	for (int i = 0; i < nf; i++) {
		out[i] = 0;
		if (total <= 0)
			continue;
		double want = f[i] * total, acc = 0;
		uint64_t pages = 0;
		for (int k = TIER_HIST_BUCKETS - 1; k >= 1; k--) {
			uint64_t in = pages_in(h, n, k);
			double mass = (double)in * tier_hist_mid(k);
			if (acc + mass >= want) {
				/* the part of this bucket that completes the share */
				double need = mass > 0 ? (want - acc) / mass : 0;
				pages += (uint64_t)ceil(need * (double)in);
				break;
			}
			acc += mass;
			pages += in;
		}
		out[i] = pages;
	}
}

void tier_rate_hist_add(struct tier_rate_hist *h, float rate, double weight)
{
	h->w[tier_hist_bucket(rate)] += weight;
	h->total += weight;
}

void tier_rate_hist_decay(struct tier_rate_hist *h, double factor)
{
	for (int k = 0; k < TIER_HIST_BUCKETS; k++)
		h->w[k] *= factor;
	h->total *= factor;
}

float tier_rate_hist_quantile(const struct tier_rate_hist *h, double q)
{
	if (h->total <= 0)
		return 0.0f;
	double acc = 0;
	for (int k = 0; k < TIER_HIST_BUCKETS; k++) {
		acc += h->w[k];
		if (acc >= q * h->total)
			return tier_hist_lower(k);
	}
	return tier_hist_lower(TIER_HIST_BUCKETS - 1);
}

double tier_binom_cdf(int n, double p, int k)
{
	if (k < 0)
		return 0;
	if (k >= n || p <= 0)
		return 1;
	if (p >= 1)
		return 0;
	/* summed from the side whose terms do not underflow */
	if (p > 0.5)
		return 1 - tier_binom_cdf(n, 1 - p, n - k - 1);
	double q = 1 - p, t = pow(q, n), s = t;
	for (int i = 0; i < k; i++) {
		t *= (double)(n - i) / (double)(i + 1) * p / q;
		s += t;
	}
	return s > 1 ? 1 : s;
}

bool tier_heat_churn(int tier, int surprise, float was, float was_lo, float now, bool at_least, float cut,
		     float hot)
{
	if (!surprise)
		return false;
	if (!(cut > 0))
		return tier == 0 && surprise < 0 && hot > 0 && was_lo >= hot && now * 16 < hot;
	if (hot < cut)
		hot = cut;
	if (tier == 0)
		return surprise < 0 && was_lo >= hot && now < cut;
	return surprise > 0 && !at_least && was < cut && now >= hot;
}

bool tier_heat_cold_member(int surprise, float was, float now, float base, float hysteresis)
{
	if (surprise >= 0 || !(base > 0) || !(hysteresis >= 1))
		return false;
	return was >= base * hysteresis && now * hysteresis * hysteresis <= was;
}

int tier_heat_surprise(int n, float rate, float w, float seen)
{
	if (n <= 0 || !(w > 0) || !(rate >= 0))
		return 0;
	int k = (int)lrintf(seen * (float)n);
	double lam = (double)rate * w;
	double p_lo = -expm1(-lam / TIER_SURPRISE_SLACK), p_hi = -expm1(-lam * TIER_SURPRISE_SLACK);
	if (tier_binom_cdf(n, p_lo, k) < TIER_SURPRISE_P)
		return -1;
	if (k >= TIER_SURPRISE_MIN_SEEN && 1 - tier_binom_cdf(n, p_hi, k - 1) < TIER_SURPRISE_P)
		return 1;
	return 0;
}

float tier_heat_rate_var(float f, uint32_t n, float w)
{
	if (!n || !(w > 0))
		return 0;
	/* the cap last: a block of one page (1 / n = 1) read nothing as 1,
	 * and its variance as 0 / 0, a NaN that kept it from ever giving way
	 * (traced: "se -nan" on fast blocks of one committed page) */
	float lo = 1.0f / (float)n;
	f = f < lo ? lo : f;
	f = f > 0.95f ? 0.95f : f;
	float d = (1.0f - f) * w;
	return f * (1.0f - f) / (float)n / (d * d);
}

/* The rate x window where a look tells the most, and what one page looked
 * at over it tells: a rate read from n such pages has variance
 * rate^2 * LO_K / n. */
static float lo_k(void)
{
	const float x = TIER_RATE_LO_X, q = expf(-x);
	return x * x * q / (1 - q);
}

float tier_heat_look_pages(float rate, float var)
{
	if (!(rate > 0) || !(var > 0))
		return 0;
	return rate * rate / (var * lo_k());
}

float tier_heat_rate_lo(float rate, float pages)
{
	if (!(rate > 0) || !(pages > 0))
		return 0;
	/* Wilson's bound on the share that as many pages would show over
	 * the most telling window */
	const float x = TIER_RATE_LO_X, q = expf(-x), f = 1 - q, n = pages;
	float z2n = TIER_RATE_LO_Z * TIER_RATE_LO_Z / n;
	float p = (f + z2n / 2 - TIER_RATE_LO_Z * sqrtf(f * q / n + z2n / (4 * n))) / (1 + z2n);
	return p > 0 ? rate * -log1pf(-p) / x : 0;
}

float tier_heat_noise_step(float var, float prev, float dh, float weight)
{
	float v = dh * prev < 0 ? TIER_NOISE_REVERSAL * fminf(dh * dh, prev * prev) : 0.0f;
	return var + weight * (v - var);
}
