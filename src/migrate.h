/* The migrator: moves blocks between tiers and counts what it did. */
#ifndef TIER_MIGRATE_H
#define TIER_MIGRATE_H

#include "registry.h"

/* The status of a page that move_pages left where it was without saying
 * why (it does so for long-term pinned pages); not an errno. */
#define TIER_HOLD_KEPT 1000

struct tier_migrate_stats {
	_Atomic uint64_t promoted_bytes, promoted_blocks;
	_Atomic uint64_t demoted_bytes, demoted_blocks;
	_Atomic uint64_t moved_pages;   /* pages the kernel moved */
	_Atomic uint64_t failed_pages;  /* pages it could not move (busy, no memory) */
	_Atomic uint64_t ns;            /* CPU time of the threads that moved */
	_Atomic uint64_t retries;       /* blocks whose leftover pages were moved again */
	_Atomic uint64_t audited;       /* blocks whose pages' nodes were sampled */
	_Atomic uint64_t misplaced;     /* ... and found partly on another tier */
	_Atomic uint64_t held_marked;   /* blocks found device-held, ever */
	_Atomic uint64_t refused;       /* moves the target node refused for want of memory
	                                 * (move_pages: ENOMEM), after the kernel's reclaim */
	_Atomic uint64_t abandoned;     /* moves given up, their blocks counted back (tier_migrate_abandon) */
	_Atomic uintptr_t last_held_addr;
	_Atomic int last_held_status;   /* -errno or TIER_HOLD_KEPT */
	_Atomic unsigned last_held_tries;
};
extern struct tier_migrate_stats tier_migrate_stats;

/* Move block b of m to tier `to`: rebind the block's policy (future faults
 * land there too), then move its committed pages with move_pages in one
 * batch.  Returns the committed bytes moved in the accounting, 0 when the
 * block changed under us or may not move.  Caller holds rcu_read_lock. */
size_t tier_migrate_block(struct tier_mapping *m, uint32_t b, int to);
/* Give up a move whose pages could not follow: count block b on tier
 * `back` again and bind it there; its pages that did move go back through
 * the retries.  Returns false when the block changed state meanwhile. */
bool tier_migrate_abandon(struct tier_mapping *m, uint32_t b, int back);
/* Move pages idx[0..n) of block b of m (page indexes in the block) to
 * tier `to` in one batch, leaving the block's policy and accounting as
 * they are (a split block: the caller counts its pages elsewhere).
 * Returns how many moved, their indexes in moved_idx.  Caller holds
 * rcu_read_lock. */
uint32_t tier_migrate_pages(struct tier_mapping *m, uint32_t b, const uint16_t *idx, uint32_t n, int to,
			    uint16_t *moved_idx);
/* Where pages idx[0..n) of block b are: their tier in tier[] (-1: not
 * resident or unknown).  Returns n, or 0 when the query failed. */
uint32_t tier_migrate_where(struct tier_mapping *m, uint32_t b, const uint16_t *idx, uint32_t n, int *tier);
/* Move again the pages of a block that a migration left behind: eight
 * tries, one per period, then one every few periods until they move or
 * the block is found device-held. */
void tier_migrate_retry(struct tier_mapping *m, uint32_t b);
/* Whether pages of block b lie on another tier than the block's, from a
 * sample of its committed pages: pages fault in where the block's policy
 * prefers only while those nodes have free memory (the kernel falls back
 * to other nodes), and nothing else looks again.  A block found so is
 * given to the straggler retries (tier_migrate_retry).  Split, held and
 * retried blocks are not looked at. */
bool tier_migrate_audit(struct tier_mapping *m, uint32_t b);
/* Whether a block may ever move (automatic arena, not metadata, unpinned,
 * not device-held). */
bool tier_block_movable(const struct tier_mapping *m, uint32_t b);
/* Device-held: the same pages of it failed to move over repeated tries
 * (something holds them: RDMA, io_uring fixed buffers, GPU registration);
 * lapses when pages of the block are dropped. */
bool tier_block_held(const struct tier_mapping *m, uint32_t b);

/* Pinned and device-held blocks now (a walk over the registry: for
 * stats, never per period). */
struct tier_device_scan {
	size_t pinned_blocks, pinned_bytes;  /* tier_pin (committed bytes) */
	size_t held_blocks, held_bytes;      /* device-held */
	size_t held_kept, held_busy, held_other; /* blocks by their last status */
};
void tier_migrate_scan(struct tier_device_scan *s);
/* "not-migrated", "-EBUSY", ... */
const char *tier_hold_status_name(int st);
/* The last block marked: "not-migrated x9 at 0x7f...", or "none". */
void tier_migrate_held_reason(char *buf, size_t len);

#endif
