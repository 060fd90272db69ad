/* One round of tiering (heat decay, policy, migration) and the immediate
 * tier.promote / tier.demote actions. */
#ifndef TIER_TIERING_H
#define TIER_TIERING_H

#include <stddef.h>
#include <stdint.h>

/* Promotion needs at least this heat (decayed accessed-periods per page;
 * a block whose every page is accessed every period settles near 3.4 with
 * the default half-life): stray accesses, and the heat DAMON's coarse
 * regions smear onto cold neighbours of hot memory, stay below it. */
#define TIER_MIN_HEAT 0.1f
/* A swap (a slow block displacing a fast one when the fast tier is full)
 * needs at least this heat gap.  Cold blocks of equal real rate differ by
 * up to about 0.4 from sampling noise (seen in GUPS under TCG: their
 * background of written bits and DAMON's regions): swapping them, period
 * after period, doubled the migration traffic.  But DAMON's real signal
 * for hot memory can be as weak (a few of its 20 samples per aggregation
 * under TCG): at 0.5, DAMON alone stalled in 2 of 8 hot-set runs, at 0.25
 * in 1 of 10, at 0.1 in none of 8 (one VM run each, 2026-12-03).  A block
 * accessed in every period gains more than 1 per period. */
#define TIER_SWAP_GAP 0.25f
/* A heat gap this wide lets a block displace a colder one even under the
 * hysteresis ratio: a third of the steady heat of memory accessed every
 * period. */
#define TIER_WIDE_MARGIN 1.2f
/* A block that moved stays put for this many periods (no ping-pong). */
#define TIER_SETTLE_PERIODS 10

/* Returns the bytes moved. */
size_t tier_balance(uint64_t period, unsigned period_ms);
/* Move up to `bytes` (committed) of the hottest slow / coldest fast
 * memory now, regardless of watermarks.  Returns the bytes moved. */
size_t tier_move_now(size_t bytes, bool promote);

/* Serialises balancing and actions; taken by the fork handlers. */
void tier_balance_lock(void);
void tier_balance_unlock(void);

struct tier_balance_stats {
	_Atomic uint64_t rounds;
	_Atomic uint64_t swaps;
	_Atomic uint64_t last_candidates;
};
extern struct tier_balance_stats tier_balance_stats;

#endif
