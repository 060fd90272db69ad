/* The cxl heat source's reverse map: page frame -> (block slot, page), for
 * the pages of our slow-tier blocks, kept between periods so that only
 * blocks whose placement changed are read again from /proc/self/pagemap.
 *
 * A slot stands for one 2 MiB block (an opaque owner reference and a block
 * number); its frames live in an open-addressing hash keyed by frame.
 * Replacing or dropping a slot's frames bumps its generation: the old
 * entries go stale at once (lookups ignore them) and are reused or swept
 * out when the table is rebuilt, so a block that moved costs O(its pages),
 * not O(map).  One entry per frame: a frame read again for another block
 * belongs to that block from then on.
 *
 * Memory comes from mmap (the background thread owns the map, and malloc
 * is not ours to call there), bounded by max_slots and max_pages given at
 * init.  Pure logic, unit-tested on the host (tests/unit/test_cxl_map.c). */
#ifndef TIER_CXL_MAP_H
#define TIER_CXL_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIER_CXL_MAP_NONE UINT32_MAX

struct tier_cxl_slot {
	const void *owner;  /* the caller's reference (a mapping); NULL: free */
	uint32_t block;
	uint32_t gen;       /* entries tagged with another generation are stale */
	uint32_t npfn;      /* live entries of this slot */
	uint32_t next;      /* free list */
	/* The caller's: what the block looked like when its frames were read. */
	uint32_t placements, moves, state, present;
	uint32_t next_read; /* period from which a partly present block is read again */
	uint16_t backoff;
};

struct tier_cxl_entry {
	uint64_t pfn; /* 0: empty */
	uint32_t slot;
	uint32_t tag; /* generation << 9 | page */
};

struct tier_cxl_map {
	struct tier_cxl_slot *slots;
	uint32_t max_slots, nslots, free_head;
	struct tier_cxl_entry *tab;
	uint64_t cap;      /* entries in tab, a power of two (0: none yet) */
	uint64_t occupied; /* non-empty entries, stale ones included */
	uint64_t live;     /* entries of their slot's generation */
	uint64_t max_pages;
	uint64_t rebuilds; /* table rebuilds (growth, or sweeping stale entries) */
};

/* 0, or ENOMEM.  Nothing is touched until used. */
int tier_cxl_map_init(struct tier_cxl_map *mp, uint32_t max_slots, uint64_t max_pages);
void tier_cxl_map_free(struct tier_cxl_map *mp);
/* A fresh slot for (owner, block), holding no frames; TIER_CXL_MAP_NONE
 * when max_slots are in use. */
uint32_t tier_cxl_map_slot_new(struct tier_cxl_map *mp, const void *owner, uint32_t block);
/* Whether slot s is in use for exactly (owner, block): callers keep slot
 * numbers in places that may outlive the slot. */
bool tier_cxl_map_slot_is(const struct tier_cxl_map *mp, uint32_t s, const void *owner, uint32_t block);
/* Free slot s; its frames are forgotten. */
void tier_cxl_map_slot_drop(struct tier_cxl_map *mp, uint32_t s);
/* Replace the frames of slot s: pfn[p] is page p's frame, 0 for none
 * (n <= 512).  False when that would pass max_pages or memory ran out:
 * the slot then holds no frames. */
bool tier_cxl_map_set(struct tier_cxl_map *mp, uint32_t s, const uint64_t *pfn, uint32_t n);
/* Make room for `pages` more frames in one step (a table sized for what
 * is known, instead of a chain of doublings).  False when out of memory. */
bool tier_cxl_map_reserve(struct tier_cxl_map *mp, uint64_t pages);
/* The slot and page holding frame pfn, or false. */
bool tier_cxl_map_lookup(const struct tier_cxl_map *mp, uint64_t pfn, uint32_t *slot, uint32_t *page);
/* Call fn on every live entry (a sweep of the table, for lists naming more
 * frames than the map holds). */
void tier_cxl_map_each(const struct tier_cxl_map *mp,
                       void (*fn)(uint64_t pfn, uint32_t slot, uint32_t page, void *ctx), void *ctx);
/* Bytes of memory the map holds. */
size_t tier_cxl_map_bytes(const struct tier_cxl_map *mp);

#endif
