/* The registry: every mapping our extent hooks made, with an exact mirror
 * of jemalloc's extents inside it and per-2 MiB-block placement state.
 *
 * Writers are the extent hooks (under jemalloc's locks: they never block on
 * anything that allocates).  Readers (background thread, stats, pins) walk
 * the mapping list under rcu_read_lock() (liburcu-bp); removed mappings are
 * freed only after a grace period.  Addresses map to mappings through a
 * two-level table indexed by 2 MiB block number, so hooks find their
 * mapping in O(1) without locks.  Mappings are 2 MiB aligned and padded to
 * whole blocks, so every block belongs to one mapping and one arena. */
#ifndef TIER_REGISTRY_H
#define TIER_REGISTRY_H

#include <urcu-bp.h>
#include <urcu/rculist.h>

#include "tier.h"

/* Block state word: committed pages | (tier + 1) << 12.  Tier 0 in the
 * field means "not placed yet": the block holds no committed page. */
#define TIER_BS_PAGES 0x3ffu
#define TIER_BS_TIER_SHIFT 12
#define TIER_BS_TIER(s) ((int)(((s) >> TIER_BS_TIER_SHIFT) & 0xf) - 1)
#define TIER_BS_MAKE(pages, tier) ((uint32_t)(pages) | (uint32_t)((tier) + 1) << TIER_BS_TIER_SHIFT)
/* Split word: pages | (tier + 1) << 16; 0: none. */
#define TIER_SPLIT_PAGES(s) ((s) & 0xffffu)
#define TIER_SPLIT_TIER(s) ((int)((s) >> 16) - 1)
#define TIER_SPLIT_MAKE(pages, tier) ((pages) ? (uint32_t)(pages) | (uint32_t)((tier) + 1) << 16 : 0u)

struct tier_block {
	_Atomic uint32_t state;
	_Atomic uint32_t pins;     /* tier_pin nesting count */
	_Atomic uint32_t samples[5]; /* per heat source (TIER_SRC_*), since the last fold */
	_Atomic uint32_t placements; /* times the block was placed afresh (hooks) */
	_Atomic uint32_t moves;      /* times the migrator moved its pages: whoever caches
				      * where they are (the cxl source's frames) reads again */
	_Atomic uint32_t drops;    /* times pages of it were dropped (decommit, purge: hooks) */
	_Atomic uint32_t held;     /* device-held: drops + 1 when marked (migrate.c); stale otherwise */
	/* A split block's pages on another tier than the block's: how many are
	 * counted there (TIER_SPLIT_PAGES) and on which tier (place.c). */
	_Atomic uint32_t split;
	/* The rest belongs to the background thread (under the balance lock). */
	float heat;                /* sum over sources of rate - floor: what the policy ranks */
	float hvar;                /* moving variance of heat from one fold to the next: the noise */
	float hdelta;              /* the last fold-to-fold change of heat (monitor.c) */
	float hsvar;               /* sampling variance of heat: what the pages a pull
				    * source saw can tell (monitor.c) */
	uint8_t backoff;           /* moves of it undone soon after: it settles 2^backoff longer */
	uint8_t slice_shift;       /* where the pull slice sits, moved off pages never written */
	uint8_t looks;             /* pull-source measurements behind its rate since it last
				    * started again (first look, or a change): monitor.c */
	float rate[5];             /* per source: moving average of accesses per page per period */
	float rinfo;               /* the pull source's rate: what its looks are worth, in pages
				    * summed, decayed like the rate (tier_heat_rate_lo) */
	uint32_t fold_period;      /* period of the last fold into heat */
	uint32_t pull_period;      /* period the armed slice was last armed or measured */
	uint32_t seen_slot;        /* advisor: time slot counting this block as seen (0: none) */
	uint32_t seen_placements;  /* placements when heat was last folded */
	uint32_t moved_epoch;      /* period of the last migration (hysteresis) */
	uint32_t policy_epoch;     /* period of the policy's last move of it (regret) */
	uint32_t stragglers;       /* retries left for pages a migration could not move */
	uint32_t list_idx;         /* index in the heat list named by flags */
	uint32_t cxl_slot;         /* the cxl source's reverse-map slot (checked before use) */
	uint32_t ph;               /* entry + 1 in the per-page heat table (pageheat.c), 0: none */
	uint32_t ph_retry;         /* period before which the block is not probed again */
	uint32_t held_plc;         /* pull source: placements + 1 when it was seen holding a
				    * page, i.e. with its page table built (heat_pagemap.c) */
	uint16_t hist_pages;       /* pages counted in the heat histogram */
	uint16_t seen_pages;       /* pages counted in the advisor's slot */
	uint16_t pull_first;       /* pull sources: the armed slice, in pages (pull_pages 0: none) */
	uint16_t pull_pages;
	uint8_t pull_expect;       /* write faults charged for the armed part when it was armed */
	uint8_t hist_tier;         /* tier + 1 of that count (0: none) */
	uint8_t hist_bucket;
	uint8_t flags;             /* heat bookkeeping (TIER_BF_*) */
	/* The migrator's streak of tries that failed on the same pages, which
	 * makes a block device-held (migrate.c). */
	uint32_t hold_sig;         /* hash of the failing pages' indexes */
	uint32_t hold_since_ms;    /* when the streak began (monotonic, ms) */
	uint32_t hold_drops;       /* drops when it began */
	uint16_t hold_pages;       /* failing pages */
	uint8_t hold_tries;        /* tries in the streak */
	int16_t hold_status;       /* the last status seen (-errno, or TIER_HOLD_KEPT) */
	uint16_t left;             /* pages the last try left behind (migrate.c) */
};

struct tier_mapping {
	struct cds_list_head link;     /* registry list (RCU) */
	uintptr_t base;                /* 2 MiB aligned */
	size_t size;                   /* bytes given to jemalloc */
	size_t span;                   /* size rounded up to whole blocks (mapped) */
	size_t rec_size;               /* size of this record in the pool */
	unsigned arena;
	int pinned_tier;               /* explicit tier arena: its tier; else -1 */
	bool meta;                     /* jemalloc metadata: fast tier, not charged */
	bool nohuge;                   /* mapped MADV_NOHUGEPAGE (hooks.c): kept so by pageheat.c */
	uint32_t src_gen;              /* heat sources' registration mark (background thread) */
	uint64_t seq;                  /* order of registration: the list is sorted by it */
	bool gone;                     /* being freed: readers of the background thread drop it */
	uint32_t nblocks, npages;
	_Atomic size_t live;           /* bytes not destroyed yet */
	struct tier_mapping *limbo_next;
	_Atomic uint64_t *start;       /* bit per page: an extent starts here */
	_Atomic uint64_t *commit;      /* bit per page: committed */
	struct tier_block *blocks;
};

struct tier_registry_stats {
	_Atomic size_t mappings;
	_Atomic size_t mapped;         /* bytes of live mappings (size) */
	_Atomic size_t extents;
	_Atomic size_t committed;      /* bytes */
	_Atomic size_t unknown_calls;  /* hook calls on extents we did not map */
};
extern struct tier_registry_stats tier_reg_stats;

/* The address of block b of m. */
static inline uintptr_t tier_block_addr(const struct tier_mapping *m, uint32_t b)
{
	return m->base + ((uintptr_t)b << TIER_BLOCK_SHIFT);
}

/* Pages of [addr, addr+len) in m were dropped (decommitted, purged,
 * unmapped): whatever a device had mapped there is not what the program
 * finds there now, so a device-held mark on those blocks lapses.  Hooks. */
static inline void tier_registry_dropped(struct tier_mapping *m, uintptr_t addr, size_t len)
{
	if (!len || addr < m->base)
		return;
	uintptr_t b = (addr - m->base) >> TIER_BLOCK_SHIFT, e = (addr + len - 1 - m->base) >> TIER_BLOCK_SHIFT;
	for (; b <= e && b < m->nblocks; b++)
		atomic_fetch_add_explicit(&m->blocks[b].drops, 1, memory_order_relaxed);
}

/* Register a fresh mapping [base, base+size); NULL if out of memory. */
struct tier_mapping *tier_registry_add(uintptr_t base, size_t size, size_t span, unsigned arena,
                                       int pinned_tier, bool meta);
/* Unlink a mapping; it is freed after a grace period (tier_registry_reclaim). */
void tier_registry_remove(struct tier_mapping *m);
/* The mapping holding addr, or NULL.  Lock-free; readers other than the
 * hooks must hold rcu_read_lock(). */
struct tier_mapping *tier_registry_lookup(uintptr_t addr);
/* Free removed mappings once no reader can see them (may block: never
 * call it from a hook).  Before they are freed, gone() sees them (with
 * m->gone set), so that holders of references can drop them.  Returns the
 * number freed. */
size_t tier_registry_reclaim(void (*gone)(struct tier_mapping *m, void *ctx), void *ctx);
/* The first live mapping registered at or after seq, or NULL (list walk:
 * for readers whose saved position was freed). */
struct tier_mapping *tier_registry_from_seq(uint64_t seq);
/* The mapping after m in registration order, or NULL at the end. */
struct tier_mapping *tier_registry_next(struct tier_mapping *m);

/* Bit helpers over a mapping's page bitmaps.  Return how many bits changed. */
size_t tier_bits_set(_Atomic uint64_t *w, size_t from, size_t n);
size_t tier_bits_clear(_Atomic uint64_t *w, size_t from, size_t n);
size_t tier_bits_count(_Atomic uint64_t *w, size_t from, size_t n);
bool tier_bit_test(_Atomic uint64_t *w, size_t i);

/* Count inconsistencies between bitmaps, block states and counters
 * (0 = the registry is exact).  Walks under rcu_read_lock. */
size_t tier_registry_check(void);

void tier_registry_prefork(void);
void tier_registry_postfork(void);

/* Iteration for readers holding rcu_read_lock(). */
extern struct cds_list_head tier_registry_list;
#define tier_registry_for_each(m) cds_list_for_each_entry_rcu(m, &tier_registry_list, link)

#endif
