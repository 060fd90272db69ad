/* Placement: which tier a block of fresh memory goes to, and binding a
 * range to a tier's nodes. */
#ifndef TIER_PLACE_H
#define TIER_PLACE_H

#include "registry.h"
#include "topology.h"

struct tier_place_stats {
	_Atomic size_t used[TIER_MAX_TIERS];      /* bytes of blocks placed on each tier */
	_Atomic size_t committed[TIER_MAX_TIERS]; /* committed bytes in those blocks */
	_Atomic size_t meta_committed;            /* jemalloc metadata (fast, not charged) */
	_Atomic uint64_t placed[TIER_MAX_TIERS];  /* blocks placed there, ever */
	_Atomic uint64_t spilled;                 /* blocks sent down: fast tier over budget */
	_Atomic uint64_t bind_calls;
	_Atomic uint64_t bind_failures;
	_Atomic int last_bind_errno;
};
extern struct tier_place_stats tier_place_stats;

/* The state placement reads on every decision. */
struct tier_place_conf {
	_Atomic bool active;             /* tiering on: more than one tier, enabled */
	_Atomic size_t fast_limit;       /* budget for tier 0, bytes */
	_Atomic unsigned fill_pm;        /* placement fills tier 0 to this share of it, per mille */
	int ntiers;
	tier_nodemask_t nodes[TIER_MAX_TIERS];
};
extern struct tier_place_conf tier_place;

void tier_place_setup(const struct tier_topology *t, bool enabled, size_t fast_limit);
/* The fast-tier budget in force: this process's fast_limit, or its share
 * of the job's (job.c); the one writer after setup. */
void tier_place_set_fast_limit(size_t bytes);
/* How much of that budget placement fills, a fraction: inside the band
 * of watermarks where the policy keeps the fast tier (migration on), else
 * all of it.
 * Filled to the budget, the fast tier stood over the watermark as a
 * program touched its memory; each round demoted the overshoot and new
 * pages took the room again (uniform GUPS: 27-50 MiB demoted in its first
 * second, of 130 MiB moved in the run). */
void tier_place_set_fill(double frac);

/* Bytes of block b of m that lie inside the mapping (the budget charge). */
static inline size_t tier_block_capacity(const struct tier_mapping *m, uint32_t b)
{
	size_t off = (size_t)b << TIER_BLOCK_SHIFT;
	return m->size - off < TIER_BLOCK ? m->size - off : TIER_BLOCK;
}

/* Account newly committed / decommitted pages of [addr, addr+len) in m,
 * placing blocks that receive their first committed page, and binding
 * those to their tier's nodes when tiering is active. */
void tier_place_commit(struct tier_mapping *m, uintptr_t addr, size_t len);
void tier_place_decommit(struct tier_mapping *m, uintptr_t addr, size_t len);

/* Bind [addr, addr+len) to tier's nodes; with move, migrate resident pages
 * (MPOL_MF_MOVE).  Returns 0 or an errno. */
int tier_bind(uintptr_t addr, size_t len, int tier, bool move);

/* Move block b of m to tier `to` in the accounting (the caller migrates
 * the pages).  Returns false when the block changed state meanwhile. */
bool tier_place_move_block(struct tier_mapping *m, uint32_t b, int to);

/* Block b of m is split: `pages` of its committed pages are on tier
 * `other`, not on the block's tier; count them there (replacing what was
 * counted before).  Returns false when the block was emptied or re-placed
 * meanwhile (nothing counted).  Background thread. */
bool tier_place_set_split(struct tier_mapping *m, uint32_t b, int other, uint32_t pages);

/* Recount all accounting from the bitmaps (fork child, single-threaded). */
void tier_place_rebuild(void);

/* Count inconsistencies between block states and the tier counters. */
size_t tier_place_check(void);

#endif
