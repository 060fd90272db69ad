/* One round of tiering (policy over the monitor's candidates, migration)
 * and the immediate tier.promote / tier.demote actions. */
#ifndef TIER_TIERING_H
#define TIER_TIERING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "registry.h"

/* Heat is in accesses per page per period (a moving average per source,
 * summed over sources less their floors): memory written or found
 * accessed in every period settles near 1 per source that sees it.
 * Promotion needs at least this heat: stray accesses, and the heat DAMON's
 * coarse regions smear onto cold neighbours of hot memory, stay below it. */
#define TIER_MIN_HEAT 0.03f
/* A swap (a slow block displacing a fast one when the fast tier is full)
 * needs at least this heat gap.  Cold blocks of equal real rate differ by
 * up to about 0.12 from sampling noise (seen in GUPS under TCG: their
 * background of written bits and DAMON's regions): swapping them, period
 * after period, doubled the migration traffic.  But DAMON's real signal
 * for hot memory can be as weak (a few of its 20 samples per aggregation
 * under TCG).  (Measured 2026-12-03 as 0.25 on the former decayed-sum
 * scale, 3.4 times this one.) */
#define TIER_SWAP_GAP 0.07f
/* A heat gap this wide lets a block displace a colder one even under the
 * hysteresis ratio: a third of the heat of memory accessed every period. */
#define TIER_WIDE_MARGIN 0.35f
/* A block that moved stays put for this many periods (no ping-pong). */
#define TIER_SETTLE_PERIODS 10
/* A block whose moves are undone soon after settles TIER_SETTLE_PERIODS
 * times 2^backoff, backoff up to this. */
#define TIER_BACKOFF_MAX 6
/* A policy move that undoes one made less than this long ago is a regret
 * (policy.h), counted in the stats (70-80% of the moves at bg_cpu 20%
 * on GUPS under TCG); the share relaxes with this half-life when nothing
 * moves.  Not fed back into the thresholds: scaling them by
 * 1 + 4 x the share halved migration at bg_cpu 20% under TCG (GUPS hot
 * set 456-577 -> 245-256 MiB, shift 810-1063 -> 335-446) but slowed the
 * reaction to a shift (median 4.0 s against 1.3 s over 5 runs each), and
 * without the wide margin scaled it moved as much as before: the noise
 * that makes the swaps is wider than that margin. */
#define TIER_REGRET_MS 5000
#define TIER_REGRET_HALF_LIFE_MS 10000

/* One round over the monitor's candidates; the caller (background
 * thread) holds the balance lock.  Returns the bytes moved. */
size_t tier_balance(uint32_t period);
/* Move up to `bytes` (committed) of the hottest slow / coldest fast
 * memory now, regardless of watermarks.  Returns the bytes moved. */
size_t tier_move_now(size_t bytes, bool promote);
/* Forget references into a mapping being freed (registry reclaim). */
void tier_balance_gone(struct tier_mapping *m);

/* Serialises balancing, monitoring and actions; taken by the fork
 * handlers. */
void tier_balance_lock(void);
void tier_balance_unlock(void);

struct tier_balance_stats {
	_Atomic uint64_t rounds;
	_Atomic uint64_t swaps;
	_Atomic uint64_t last_candidates;
	_Atomic uint64_t stragglers;   /* blocks waiting for leftover pages to move */
	_Atomic uint64_t regrets;      /* moves that undid a recent one (policy.h) */
	_Atomic uint64_t retests;      /* slow blocks looked at again before a swap (policy.h) */
	_Atomic uint64_t skipped;      /* rounds with nothing new to decide on (no heat folded) */
	float cut, swap_min;           /* thresholds of the last round */
	float regret;                  /* the recent share of moves that were regrets
	                                * (written by the balance round only) */
	float hit_share;               /* the fast tier's share of all heat (pages x heat): an
	                                * estimate of the share of accesses served fast */
	_Atomic bool gain;             /* the change detector: something to gain now (bursts) */
	_Atomic uint64_t gains;        /* rounds that saw a gain */
	_Atomic uint64_t room_short;   /* promotions the fast nodes' free room held back (room.h) */
	_Atomic uint64_t room_waits;   /* retries of pages a promotion left behind put off for room */
	_Atomic uint64_t room_closed;  /* times a refused move closed the fast nodes for a while */
	_Atomic int64_t fast_room;     /* that room at the last round that promoted, bytes; -1 unknown */
};
extern struct tier_balance_stats tier_balance_stats;

#endif
