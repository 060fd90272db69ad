/* The policy: which blocks move, given their heat and the fast tier's
 * budget.  Pure logic over candidate arrays (unit-tested on the host). */
#ifndef TIER_POLICY_H
#define TIER_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tier_cand {
	void *ref;          /* the caller's handle (mapping) */
	uint32_t block;
	uint32_t bytes;     /* committed bytes: what moving it costs the budget */
	float heat;
	float se;           /* the heat's standard error (its fold-to-fold noise) */
	float lo;           /* how hot it surely is (a lower confidence bound of heat) */
	uint8_t tier;       /* where it is now (0 = fast) */
	uint8_t part;       /* TIER_PART_*: a whole block, or pages of a split block */
	bool unsure;        /* its last look found every page written, so its heat is only "at
	                     * least": fast, how cold it is is not known; slow, its se (the
	                     * spread of such reads) means nothing, its lo still holds */
	bool picked_on_own; /* slow: its heat is the estimate that ranks it first, so it is picked
	                     * on its luck as much as its heat (the hottest of a hundred noisy
	                     * estimates): a swap waits for a look made after the pick */
	bool judged;        /* fast: its heat rests on a look over the window a slow block's
	                     * retest uses, made since it was picked to give way (or no look of
	                     * that kind can be made: no pull source, a part) */
	bool chosen;        /* output: move it (to 0 if tier > 0, else to 1) */
	bool retest;        /* output: slow, it would have displaced fast memory; fast, it would
	                     * have given way: look again first */
	float thr;          /* a part: the page heat that chose its pages */
};
/* Parts of split blocks: its pages elsewhere at least thr hot (up), its
 * pages on the fast tier under thr (down). */
enum { TIER_PART_WHOLE, TIER_PART_UP, TIER_PART_DOWN };

struct tier_policy_in {
	size_t fast_limit;
	size_t fast_used;       /* committed bytes on the fast tier now */
	double wm_high, wm_low; /* fractions of fast_limit */
	double hysteresis;      /* a swap needs slow heat >= hysteresis * fast heat */
	size_t promote_budget;  /* bytes this period (rate limit) */
	size_t demote_budget;
	float min_heat;         /* promote nothing colder than this */
	float swap_gap;         /* a swap needs at least this heat gap */
	float wide_margin;      /* a heat gap this wide is enough for a swap */
	float swap_min;         /* a swap needs the slow block surely (its lo) this hot (0: any) */
	float z;                /* a swap needs a gap of z standard errors (0: any) */
	/* The fast nodes' real free room (room.h) when room_capped: promotions
	 * fit in it and in what the round's demotions free, beside the budget.
	 * It never forces a demotion: memory that others took is not ours to
	 * give back. */
	bool room_capped;
	size_t fast_room;
};

struct tier_policy_out {
	size_t promote_bytes, demote_bytes, promote_blocks, demote_blocks, swaps, retests;
	size_t fast_after;
	size_t room_short;      /* promotions the budget allowed that the free room did not */
};

/* Significance: a swap displaces fast memory for slow memory that is
 * hotter by at least TIER_SWAP_Z standard errors of the difference (the
 * candidates' se): under noisy heat a fixed margin is either too wide for
 * the real signal or too narrow for the noise (70-80% of the moves at
 * bg_cpu 20% undid a recent one with the fixed margins alone). */
#define TIER_SWAP_Z 2.0f
/* A candidate's lo where no binomial bound is known: heat less this many
 * standard errors (monitor.c). */
#define TIER_CUT_Z 1.0f

/* Rules, in order:
 *  1. above the high watermark: demote the coldest fast blocks until at or
 *     below the low watermark;
 *  2. promote the hottest slow blocks while they fit under the high
 *     watermark;
 *  3. then swap: for the hottest remaining slow block, demote the coldest
 *     fast blocks until it fits, but only blocks it is hotter than by the
 *     hysteresis factor (or by wide_margin) and by at least swap_gap, and
 *     only for slow blocks at least swap_min hot; stop at the first block
 *     that cannot fit.  A slow block picked_on_own is not moved: it is marked
 *     retest (the caller looks again, and moves it on what that look says),
 *     and so are the fast blocks it would displace; a swap whose slow block
 *     is judged but whose fast ones are not (judged false) marks those
 *     retest and waits for their looks: both sides judged on alike looks.
 * Each direction stays within its byte budget.  Sorts both arrays (fast:
 * coldest first; slow: hottest first) and marks the chosen candidates. */
void tier_policy_decide(const struct tier_policy_in *in, struct tier_cand *fast, size_t nfast,
                        struct tier_cand *slow, size_t nslow, struct tier_policy_out *out);

/* Thresholds read from the heat histograms of the tiers (O(buckets)):
 *   cut: the heat that the hottest `high` bytes of all tiers reach (what
 *        the fast tier would hold if it held the hottest memory);
 *   swap_min: a slow block below it does not displace fast memory (it may
 *        still fill free room): max(cut, min_heat);
 *   demote_max: fast memory under cut / hysteresis is what gives way. */
struct tier_hist;
struct tier_thresholds {
	float cut, swap_min, demote_max;
};
void tier_policy_thresholds(const struct tier_hist *const *h, int ntiers, size_t high_bytes,
                            double hysteresis, float min_heat, struct tier_thresholds *out);

/* Regret: the recent share of the policy's moves that undid a move made
 * shortly before (a block promoted and soon demoted again, or the reverse):
 * blocks of near-equal heat swapped on noise, two migrations for nothing.
 * tier_regret_move folds one move in (a moving share over about 16 moves);
 * tier_regret_decay relaxes it when nothing moves (factor per period). */
float tier_regret_move(float regret, bool undid);
float tier_regret_decay(float regret, double factor);

/* The heat a round's decision brings to the fast tier (pages x heat): its
 * promotions less its demotions, and what the slow blocks it would swap
 * in after a second look hold above the cut (their swap's demotions were
 * undone).  The change detector's measure of whether the moves are worth
 * a burst (tiering.c). */
double tier_policy_moved_heat(const struct tier_cand *fast, size_t nfast, const struct tier_cand *slow,
			      size_t nslow, float cut);

/* Sort candidates by heat, hottest or coldest first, in place, without
 * allocating. */
void tier_cand_sort(struct tier_cand *v, size_t n, bool hottest_first);

#endif
