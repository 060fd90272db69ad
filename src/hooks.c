/* The extent hooks.  Rules that hold for every function here: no malloc
 * (jemalloc may hold arena locks and would recurse into itself), no
 * blocking on anything that may allocate, and extents we did not map
 * (jemalloc mapped a few before our hooks were installed) go to jemalloc's
 * default hooks untouched. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>

#include "hooks.h"
#include "place.h"

extent_hooks_t *tier_default_hooks;

/* explicit tier arenas: tier + 1, 0 for the rest */
static _Atomic(signed char) pinned[TIER_MAX_ARENAS];

void tier_hooks_pin_arena(unsigned arena, int tier)
{
	if (arena < TIER_MAX_ARENAS)
		atomic_store(&pinned[arena], (signed char)(tier + 1));
}

int tier_hooks_arena_tier(unsigned arena)
{
	return arena < TIER_MAX_ARENAS ? atomic_load_explicit(&pinned[arena], memory_order_relaxed) - 1
				       : -1;
}

/* The span alone at an aligned address: where the kernel placed it
 * aligned (it aligns anonymous mappings of whole 2 MiB), or at the aligned
 * address just below or above it, if that is free. */
static void *reserve_exact(size_t sp, size_t align)
{
	const int prot = PROT_READ | PROT_WRITE;
	const int fl = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	char *p = mmap(NULL, sp, prot, fl, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (!((uintptr_t)p & (align - 1)))
		return p;
	munmap(p, sp);
	uintptr_t at[2] = {(uintptr_t)p & ~(uintptr_t)(align - 1),
			   tier_align_up((uintptr_t)p, align)};
	for (int i = 0; i < 2; i++) {
		char *q = mmap((void *)at[i], sp, prot, fl | MAP_FIXED_NOREPLACE, -1, 0);
		if (q == (char *)at[i])
			return q;
		if (q != MAP_FAILED) /* an old kernel took it as a hint */
			munmap(q, sp);
	}
	return NULL;
}

/* Reserve size bytes at a 2 MiB (or larger) alignment, padded to whole
 * blocks so that no other mapping shares a block with this one. */
static void *reserve(size_t size, size_t alignment, size_t *span)
{
	size_t align = alignment > TIER_BLOCK ? alignment : TIER_BLOCK;
	size_t sp = tier_align_up(size, TIER_BLOCK);
	size_t len = sp + align - TIER_PAGE;
	if (len < sp)
		return NULL;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (p == MAP_FAILED) {
		/* Near RLIMIT_AS the padding itself can be refused (a 4 KiB
		 * slab needs 4 MiB here): take exactly the span, aligned. */
		*span = sp;
		return reserve_exact(sp, align);
	}
	char *base = (char *)tier_align_up((uintptr_t)p, align);
	if (base > p)
		munmap(p, (size_t)(base - p));
	if (p + len > base + sp)
		munmap(base + sp, (size_t)(p + len - (base + sp)));
	*span = sp;
	return base;
}

static void *h_alloc(extent_hooks_t *h, void *new_addr, size_t size, size_t alignment, bool *zero,
		     bool *commit, unsigned arena)
{
	(void)h;
	/* In-place growth at a fixed address is not ours to give: jemalloc
	 * then allocates elsewhere and copies. */
	if (new_addr)
		return NULL;
	size_t span;
	void *p = reserve(size, alignment, &span);
	if (!p)
		return NULL;
	/* jemalloc asks for its metadata (base) blocks committed and 2 MiB
	 * aligned; data extents are reserved page aligned and committed as
	 * they are carved.  Metadata stays on the fast tier, outside the
	 * budget: each arena's block is 2 MiB of address space of which a
	 * little is ever touched. */
	bool meta = *commit && alignment >= TIER_BLOCK;
	struct tier_mapping *m = tier_registry_add((uintptr_t)p, size, span, arena,
						    tier_hooks_arena_tier(arena), meta);
	if (!m) {
		munmap(p, span);
		return NULL;
	}
	/* 2 MiB aligned, a metadata block would become one transparent huge
	 * page under THP=always: 2 MiB resident for a few KiB used.  Data
	 * too while tiering: a block first written as one huge page moves as
	 * one 2 MiB folio, which needs an order-9 page on the target; on a
	 * fast node with little free room (the bench's balloon) that meant
	 * compaction stalls, failed moves and retries, and GUPS's first hot
	 * set placed after 5.8-12 s instead of 1.3 s (bench/README).  The
	 * pull source's slices split a huge page's mapping at the first
	 * look anyway, so its TLB reach was not kept. */
	if (meta || atomic_load_explicit(&tier_place.active, memory_order_relaxed))
		m->nohuge = madvise(p, span, MADV_NOHUGEPAGE) == 0;
	*zero = true;
	if (*commit)
		tier_place_commit(m, (uintptr_t)p, size);
	return p;
}

static struct tier_mapping *known(void *addr)
{
	struct tier_mapping *m = tier_registry_lookup((uintptr_t)addr);
	if (!m)
		atomic_fetch_add_explicit(&tier_reg_stats.unknown_calls, 1, memory_order_relaxed);
	return m;
}

/* Opt out of unmapping: jemalloc keeps the range and decommits it, so the
 * address space (and its registry entry) is reused. */
static bool h_dalloc(extent_hooks_t *h, void *addr, size_t size, bool committed, unsigned arena)
{
	(void)h;
	if (!known(addr) && tier_default_hooks->dalloc)
		return tier_default_hooks->dalloc(tier_default_hooks, addr, size, committed, arena);
	return true;
}

static void h_destroy(extent_hooks_t *h, void *addr, size_t size, bool committed, unsigned arena)
{
	(void)h;
	struct tier_mapping *m = known(addr);
	if (!m) {
		if (tier_default_hooks->destroy)
			tier_default_hooks->destroy(tier_default_hooks, addr, size, committed, arena);
		return;
	}
	uintptr_t a = (uintptr_t)addr;
	tier_place_decommit(m, a, size);
	tier_registry_dropped(m, a, size);
	if (tier_bits_clear(m->start, (a - m->base) >> TIER_PAGE_SHIFT, 1))
		atomic_fetch_sub(&tier_reg_stats.extents, 1);
	if (atomic_fetch_sub(&m->live, size) == size) {
		uintptr_t base = m->base;
		size_t span = m->span;
		tier_registry_remove(m);
		munmap((void *)base, span);
	} else {
		/* keep the range reserved until the whole mapping is gone, so no
		 * other mapping lands inside a registered block */
		mmap(addr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
		     0);
	}
}

/* Commit and decommit of extents jemalloc mapped itself: its own hooks'
 * (the two have one signature), or "not done" when it has none. */
static bool default_commit(bool on, void *addr, size_t size, size_t offset, size_t length, unsigned arena)
{
	extent_commit_t *fwd = on ? tier_default_hooks->commit : tier_default_hooks->decommit;
	return fwd ? fwd(tier_default_hooks, addr, size, offset, length, arena) : true;
}

static bool h_commit(extent_hooks_t *h, void *addr, size_t size, size_t offset, size_t length,
		     unsigned arena)
{
	(void)h;
	struct tier_mapping *m = known(addr);
	if (!m)
		return default_commit(true, addr, size, offset, length, arena);
	tier_place_commit(m, (uintptr_t)addr + offset, length);
	return false;
}

static bool h_decommit(extent_hooks_t *h, void *addr, size_t size, size_t offset, size_t length,
		       unsigned arena)
{
	(void)h;
	struct tier_mapping *m = known(addr);
	if (!m)
		return default_commit(false, addr, size, offset, length, arena);
	/* Drop the pages first: once the block is accounted empty it may be
	 * re-placed and rebound, and it must hold nothing then. */
	if (madvise((char *)addr + offset, length, MADV_DONTNEED))
		return true;
	tier_registry_dropped(m, (uintptr_t)addr + offset, length);
	tier_place_decommit(m, (uintptr_t)addr + offset, length);
	return false;
}

/* Both purges: jemalloc's for extents it mapped, else the registry is
 * told the pages are gone and the kernel drops them (lazily or now). */
static bool purge(void *addr, size_t size, size_t offset, size_t length, unsigned arena, bool lazy)
{
	struct tier_mapping *m = known(addr);
	if (!m) {
		extent_purge_t *fwd = lazy ? tier_default_hooks->purge_lazy : tier_default_hooks->purge_forced;
		return fwd ? fwd(tier_default_hooks, addr, size, offset, length, arena) : true;
	}
	tier_registry_dropped(m, (uintptr_t)addr + offset, length);
	return madvise((char *)addr + offset, length, lazy ? MADV_FREE : MADV_DONTNEED) != 0;
}

static bool h_purge_forced(extent_hooks_t *h, void *addr, size_t size, size_t offset, size_t length,
			   unsigned arena)
{
	(void)h;
	return purge(addr, size, offset, length, arena, false);
}

static bool h_purge_lazy(extent_hooks_t *h, void *addr, size_t size, size_t offset, size_t length,
			 unsigned arena)
{
	(void)h;
	return purge(addr, size, offset, length, arena, true);
}

static bool h_split(extent_hooks_t *h, void *addr, size_t size, size_t size_a, size_t size_b,
		    bool committed, unsigned arena)
{
	(void)h;
	struct tier_mapping *m = known(addr);
	if (!m)
		return tier_default_hooks->split
			       ? tier_default_hooks->split(tier_default_hooks, addr, size, size_a, size_b,
							   committed, arena)
			       : true;
	if (tier_bits_set(m->start, ((uintptr_t)addr + size_a - m->base) >> TIER_PAGE_SHIFT, 1))
		atomic_fetch_add_explicit(&tier_reg_stats.extents, 1, memory_order_relaxed);
	return false;
}

static bool h_merge(extent_hooks_t *h, void *addr_a, size_t size_a, void *addr_b, size_t size_b,
		    bool committed, unsigned arena)
{
	(void)h;
	struct tier_mapping *ma = tier_registry_lookup((uintptr_t)addr_a);
	struct tier_mapping *mb = tier_registry_lookup((uintptr_t)addr_b);
	if (!ma && !mb) {
		atomic_fetch_add_explicit(&tier_reg_stats.unknown_calls, 1, memory_order_relaxed);
		return tier_default_hooks->merge
			       ? tier_default_hooks->merge(tier_default_hooks, addr_a, size_a, addr_b,
							   size_b, committed, arena)
			       : true;
	}
	/* Extents of different mappings stay apart: a mapping is the unit we
	 * register, bind and eventually unmap. */
	if (ma != mb)
		return true;
	if (tier_bits_clear(ma->start, ((uintptr_t)addr_b - ma->base) >> TIER_PAGE_SHIFT, 1))
		atomic_fetch_sub_explicit(&tier_reg_stats.extents, 1, memory_order_relaxed);
	return false;
}

extent_hooks_t tier_extent_hooks = {
	.alloc = h_alloc,
	.dalloc = h_dalloc,
	.destroy = h_destroy,
	.commit = h_commit,
	.decommit = h_decommit,
	.purge_lazy = h_purge_lazy,
	.purge_forced = h_purge_forced,
	.split = h_split,
	.merge = h_merge,
};
