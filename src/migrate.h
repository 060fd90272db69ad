/* The migrator: moves blocks between tiers and counts what it did. */
#ifndef TIER_MIGRATE_H
#define TIER_MIGRATE_H

#include "registry.h"

struct tier_migrate_stats {
	_Atomic uint64_t promoted_bytes, promoted_blocks;
	_Atomic uint64_t demoted_bytes, demoted_blocks;
	_Atomic uint64_t moved_pages;   /* pages the kernel moved */
	_Atomic uint64_t failed_pages;  /* pages it could not move (busy, no memory) */
	_Atomic uint64_t ns;            /* wall time spent migrating */
	_Atomic uint64_t retries;       /* blocks whose leftover pages were moved again */
};
extern struct tier_migrate_stats tier_migrate_stats;

/* Move block b of m to tier `to`: rebind the block's policy (future faults
 * land there too), then move its committed pages with move_pages in one
 * batch.  Returns the committed bytes moved in the accounting, 0 when the
 * block changed under us or may not move.  Caller holds rcu_read_lock. */
size_t tier_migrate_block(struct tier_mapping *m, uint32_t b, int to);
/* Move again the pages of a block that a migration left behind: eight
 * tries, one per period, then one every few periods until they move. */
void tier_migrate_retry(struct tier_mapping *m, uint32_t b);
/* Whether a block may ever move (automatic arena, not metadata, unpinned). */
bool tier_block_movable(const struct tier_mapping *m, uint32_t b);

#endif
