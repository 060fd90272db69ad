/* Bursts of the background budget (src/burst.c), over simulated time:
 * 100 ms periods, a detector that sees a gain or not. */
#include "../tap.h"
#include "burst.h"

#define P 100000000ull /* 100 ms */

struct run {
	double burst_share; /* share of periods spent at the burst budget */
	int first_on, started;
};

/* n periods from t; gain(i) decides each period's detector output */
static struct run steps(struct tier_burst *b, uint64_t *t, int n, int (*gain)(int))
{
	struct run r = {0, -1, 0};
	int on = 0;
	for (int i = 0; i < n; i++) {
		*t += P;
		bool st;
		double tgt = tier_burst_step(b, *t, gain(i), 0.01, 0.3, &st);
		if (tgt > 0.01) {
			on++;
			if (r.first_on < 0)
				r.first_on = i;
		}
		r.started += st;
	}
	r.burst_share = (double)on / n;
	return r;
}

static int never(int i) { (void)i; return 0; }
static int always(int i) { (void)i; return 1; }
static int once(int i) { return i == 0; }

int main(void)
{
	struct tier_burst b;
	uint64_t t = 1000 * P;
	tier_burst_init(&b, t);
	struct run r = steps(&b, &t, 100, never);
	ok(r.burst_share == 0 && r.started == 0, "no gain: the steady budget only (%.2f of periods in bursts)",
	   r.burst_share);

	r = steps(&b, &t, 100, once);
	ok(r.first_on == 0 && r.started == 1, "a gain starts a burst at once (period %d, %d started)", r.first_on,
	   r.started);
	ok(r.burst_share >= 0.19 && r.burst_share <= 0.21, "one gain: a burst of about 2 s (%.2f of 10 s)",
	   r.burst_share);

	/* a workload that churns forever: bursts paid from the bank */
	tier_burst_init(&b, t);
	r = steps(&b, &t, 3000, always);
	ok(r.burst_share < 0.25, "a gain every period for 300 s: at most about a fifth of the time in bursts (%.3f)",
	   r.burst_share);
	ok(r.burst_share > 0.1 && r.started < 100, "... and bursts still come, each at least 1 s long (%.3f, %d started)",
	   r.burst_share, r.started);

	/* the first burst is paid by its own allowance: a start-up that
	 * finds things to gain for 5 s, then a cue */
	tier_burst_init(&b, t);
	r = steps(&b, &t, 50, always);
	r = steps(&b, &t, 50, never);
	ok(r.started == 0 && !b.active && b.bursts == 1 && b.bank_ms >= TIER_BURST_BANK_MS - 1,
	   "the start-up's burst (%.0f ms) leaves the bank whole (%.0f ms)", b.burst_ms, b.bank_ms);
	r = steps(&b, &t, 5, once);
	ok(r.started == 1 && r.first_on == 0, "... and the next cue starts a burst at once");
	tier_burst_init(&b, t);
	r = steps(&b, &t, 100, always);
	ok(b.bursts == 2 && b.burst_ms >= 9700 && b.bank_ms <= TIER_BURST_BANK_MS - 3500,
	   "... at most %.0f ms of it: 10 s of cues, the next burst from the bank (%.0f ms left)", TIER_BURST_BANK_MS,
	   b.bank_ms);

	/* a cue that finds the bank short waits for it: the bank spent by a
	 * long burst, a cue 0.5 s after it ended starts one when the bank
	 * holds TIER_BURST_START_MS again (5 s at EARN 0.2), not never */
	tier_burst_init(&b, t);
	b.bank_ms = 0; /* a burst just spent it all */
	r = steps(&b, &t, 5, once);
	ok(r.started == 0 && !b.active, "a cue with the bank empty starts nothing at once");
	r = steps(&b, &t, 70, never);
	ok(r.started == 1 && b.held == 1 && r.first_on >= 40 && r.first_on <= 50,
	   "... it waits, and the burst starts when the bank allows (%d periods later, %llu held)", r.first_on + 5,
	   (unsigned long long)b.held);
	tier_burst_init(&b, t);
	b.bank_ms = -1000; /* 10 s from a start */
	r = steps(&b, &t, 1, once);
	r = steps(&b, &t, 150, never);
	ok(r.started == 0 && b.held == 0, "... for TIER_BURST_HOLD_MS at most: a bank 10 s from a start drops it (%d started)",
	   r.started);

	/* off: bg_cpu_burst no larger than bg_cpu */
	tier_burst_init(&b, t);
	bool st;
	double tgt = tier_burst_step(&b, t + P, true, 0.05, 0.0, &st);
	ok(tgt == 0.05 && !st, "bg_cpu_burst 0: no burst (%.2f)", tgt);
	return done();
}
