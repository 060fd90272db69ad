/* The cxl source's reverse map (page frame -> block slot, page): see
 * cxl_map.h.  Linear probing; stale entries (of an older generation of
 * their slot) are reused by inserts and dropped when the table is rebuilt,
 * which happens when it is 70% full or a slot's generation would wrap. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "cxl_map.h"

#define PAGE_BITS 9
#define GEN_MASK ((1u << (32 - PAGE_BITS)) - 1)
#define MIN_CAP 1024u

/* populate: a table is written whole at once (faulting it in page by
 * page cost more than filling it, measured under TCG) */
static void *map_mem(size_t bytes, bool populate)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : MAP_NORESERVE), -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

int tier_cxl_map_init(struct tier_cxl_map *mp, uint32_t max_slots, uint64_t max_pages)
{
	memset(mp, 0, sizeof(*mp));
	if (!max_slots || !max_pages || !(mp->slots = map_mem((size_t)max_slots * sizeof(*mp->slots), false)))
		return ENOMEM;
	mp->max_slots = max_slots;
	mp->max_pages = max_pages;
	mp->free_head = TIER_CXL_MAP_NONE;
	return 0;
}

void tier_cxl_map_free(struct tier_cxl_map *mp)
{
	if (mp->slots)
		munmap(mp->slots, (size_t)mp->max_slots * sizeof(*mp->slots));
	if (mp->tab)
		munmap(mp->tab, mp->cap * sizeof(*mp->tab));
	memset(mp, 0, sizeof(*mp));
}

size_t tier_cxl_map_bytes(const struct tier_cxl_map *mp)
{
	return (size_t)mp->nslots * sizeof(*mp->slots) + mp->cap * sizeof(*mp->tab);
}

static bool live(const struct tier_cxl_map *mp, const struct tier_cxl_entry *e)
{
	const struct tier_cxl_slot *s = &mp->slots[e->slot];
	return s->owner && (e->tag >> PAGE_BITS) == s->gen;
}

static uint64_t home(const struct tier_cxl_map *mp, uint64_t pfn)
{
	/* the product's top bits: cap is a power of two, at least MIN_CAP */
	return (pfn * 0x9e3779b97f4a7c15ull) >> (64 - __builtin_ctzll(mp->cap));
}

/* Put (pfn, slot, page) in: the entry holding pfn (live or stale), else
 * the first stale entry on its probe path, else the empty one ending it. */
static void insert(struct tier_cxl_map *mp, uint64_t pfn, uint32_t slot, uint32_t page)
{
	uint64_t i = home(mp, pfn), reuse = UINT64_MAX;
	struct tier_cxl_entry *e;
	for (;; i = (i + 1) & (mp->cap - 1)) {
		e = &mp->tab[i];
		if (!e->pfn)
			break;
		if (e->pfn == pfn) {
			if (live(mp, e)) { /* read before for another block: it moved here */
				mp->slots[e->slot].npfn--;
				mp->live--;
			}
			reuse = i;
			break;
		}
		if (reuse == UINT64_MAX && !live(mp, e))
			reuse = i;
	}
	if (reuse != UINT64_MAX)
		e = &mp->tab[reuse];
	else
		mp->occupied++;
	*e = (struct tier_cxl_entry){pfn, slot, mp->slots[slot].gen << PAGE_BITS | page};
	mp->slots[slot].npfn++;
	mp->live++;
}

/* Move the live entries into a table of cap entries (stale ones stay behind). */
static bool rebuild(struct tier_cxl_map *mp, uint64_t cap)
{
	struct tier_cxl_entry *old = mp->tab, *tab = map_mem(cap * sizeof(*tab), true);
	uint64_t old_cap = mp->cap;
	if (!tab)
		return false;
	mp->tab = tab;
	mp->cap = cap;
	mp->occupied = mp->live = 0;
	for (uint32_t s = 0; s < mp->nslots; s++)
		mp->slots[s].npfn = 0;
	for (uint64_t i = 0; i < old_cap; i++)
		if (old[i].pfn && live(mp, &old[i]))
			insert(mp, old[i].pfn, old[i].slot, old[i].tag & ((1u << PAGE_BITS) - 1));
	if (old)
		munmap(old, old_cap * sizeof(*old));
	mp->rebuilds++;
	return true;
}

/* A new generation for slot s: its entries go stale. */
static void bump(struct tier_cxl_map *mp, uint32_t s)
{
	struct tier_cxl_slot *sl = &mp->slots[s];
	if (sl->gen == GEN_MASK && mp->cap)
		rebuild(mp, mp->cap); /* ancient entries of generation 0 must not come back */
	mp->live -= sl->npfn;
	sl->npfn = 0;
	sl->gen = (sl->gen + 1) & GEN_MASK;
}

uint32_t tier_cxl_map_slot_new(struct tier_cxl_map *mp, const void *owner, uint32_t block)
{
	uint32_t s = mp->free_head;
	if (s != TIER_CXL_MAP_NONE)
		mp->free_head = mp->slots[s].next;
	else if (mp->nslots < mp->max_slots)
		s = mp->nslots++;
	else
		return TIER_CXL_MAP_NONE;
	struct tier_cxl_slot *sl = &mp->slots[s];
	uint32_t gen = sl->gen; /* generations go on across owners */
	*sl = (struct tier_cxl_slot){.owner = owner, .block = block, .gen = gen, .next = TIER_CXL_MAP_NONE};
	return s;
}

bool tier_cxl_map_slot_is(const struct tier_cxl_map *mp, uint32_t s, const void *owner, uint32_t block)
{
	return s < mp->nslots && owner && mp->slots[s].owner == owner && mp->slots[s].block == block;
}

void tier_cxl_map_slot_drop(struct tier_cxl_map *mp, uint32_t s)
{
	if (s >= mp->nslots || !mp->slots[s].owner)
		return;
	bump(mp, s);
	mp->slots[s].owner = NULL;
	mp->slots[s].next = mp->free_head;
	mp->free_head = s;
}

bool tier_cxl_map_reserve(struct tier_cxl_map *mp, uint64_t pages)
{
	/* room for twice what lives, so that stale entries have space */
	uint64_t want = mp->live + pages, cap = MIN_CAP;
	if (want > mp->max_pages)
		want = mp->max_pages;
	while (cap < 2 * want)
		cap <<= 1;
	if (cap <= mp->cap && mp->occupied + pages <= mp->cap / 10 * 7)
		return true;
	return rebuild(mp, cap > mp->cap ? cap : mp->cap);
}

bool tier_cxl_map_set(struct tier_cxl_map *mp, uint32_t s, const uint64_t *pfn, uint32_t n)
{
	if (s >= mp->nslots || !mp->slots[s].owner || n > 1u << PAGE_BITS)
		return false;
	bump(mp, s);
	uint64_t add = 0;
	for (uint32_t p = 0; p < n; p++)
		add += pfn[p] != 0;
	if (!add)
		return true;
	if (mp->live + add > mp->max_pages)
		return false;
	if (mp->occupied + add > mp->cap / 10 * 7 && !tier_cxl_map_reserve(mp, add))
		return false;
	for (uint32_t p = 0; p < n; p++)
		if (pfn[p])
			insert(mp, pfn[p], s, p);
	return true;
}

bool tier_cxl_map_lookup(const struct tier_cxl_map *mp, uint64_t pfn, uint32_t *slot, uint32_t *page)
{
	if (!mp->cap || !pfn)
		return false;
	for (uint64_t i = home(mp, pfn);; i = (i + 1) & (mp->cap - 1)) {
		const struct tier_cxl_entry *e = &mp->tab[i];
		if (!e->pfn)
			return false;
		if (e->pfn != pfn)
			continue;
		if (!live(mp, e)) /* one entry per frame: no live one further on */
			return false;
		*slot = e->slot;
		*page = e->tag & ((1u << PAGE_BITS) - 1);
		return true;
	}
}

void tier_cxl_map_each(const struct tier_cxl_map *mp,
                       void (*fn)(uint64_t pfn, uint32_t slot, uint32_t page, void *ctx), void *ctx)
{
	for (uint64_t i = 0; i < mp->cap; i++)
		if (mp->tab[i].pfn && live(mp, &mp->tab[i]))
			fn(mp->tab[i].pfn, mp->tab[i].slot, mp->tab[i].tag & ((1u << PAGE_BITS) - 1), ctx);
}
