/* Arena set-up, through jemalloc's mallctl.
 *
 * Writing arena.<i>.extent_hooks on an automatic arena that does not exist
 * yet creates it with our hooks, so every automatic arena is hooked before
 * it maps anything.  Arena 0 already exists (jemalloc created it on its
 * first call); its metadata moves to our hooks with the write.  The arena
 * for huge allocations (index narenas) is created lazily by jemalloc with
 * the default hooks, so we create it with one oversize allocation and then
 * hook it: the few MiB it mapped meanwhile stay with the default hooks. */
#include <jemalloc/jemalloc.h>
#include <errno.h>
#include <stdio.h>

#include "init.h"
#include "registry.h"
#include "stats.h"

#include "arena.h"
#include "hooks.h"

static _Atomic(signed char) pinned[TIER_MAX_ARENAS];
static unsigned tier_arena[TIER_MAX_TIERS];
static unsigned hooked;
static bool huge_hooked;
static _Atomic size_t absorbed;

int tier_arena_pinned_tier(unsigned arena)
{
	return arena < TIER_MAX_ARENAS ? atomic_load_explicit(&pinned[arena], memory_order_relaxed) - 1
				       : -1;
}

unsigned tier_arena_of_tier(int tier)
{
	return tier >= 0 && tier < TIER_MAX_TIERS ? tier_arena[tier] : UINT32_MAX;
}

unsigned tier_arenas_hooked(void) { return hooked; }
bool tier_arena_huge_hooked(void) { return huge_hooked; }

static int set_hooks(unsigned i, extent_hooks_t **old)
{
	char name[64];
	extent_hooks_t *new = &tier_extent_hooks, *prev = NULL;
	size_t sz = sizeof(prev);
	snprintf(name, sizeof(name), "arena.%u.extent_hooks", i);
	int r = mallctl(name, &prev, &sz, &new, sizeof(new));
	if (r == 0 && old)
		*old = prev;
	return r;
}

/* jemalloc's first call (our own mallctl) already made arena 0 map a
 * chunk with the default hooks, for the booting thread's tcache.  What is
 * left of it sits in arena 0's retained cache, and small allocations would
 * be carved from it before any memory of ours.  Take it out of circulation
 * with allocations that are never freed: address space only, since those
 * pages are not touched. */
static void absorb_default_chunk(void)
{
	for (int i = 0; i < 32; i++) {
		uint64_t epoch = 1;
		size_t retained = 0, sz = sizeof(retained);
		if (mallctl("epoch", NULL, NULL, &epoch, sizeof(epoch)) ||
		    mallctl("stats.arenas.0.retained", &retained, &sz, NULL, 0))
			return;
		/* the largest size class that fits, with the page jemalloc adds
		 * to large extents for cache-oblivious offsets */
		size_t want = retained;
		while (want >= 16384 && nallocx(want, 0) + 4096 > retained)
			want = (want - want / 8) & ~(size_t)4095;
		if (want < 16384)
			return;
		void *p = mallocx(want, MALLOCX_ARENA(0) | MALLOCX_TCACHE_NONE);
		if (!p)
			return;
		if (tier_registry_lookup((uintptr_t)p)) {
			/* a fresh chunk of ours served it: the rest is fragmented */
			dallocx(p, MALLOCX_TCACHE_NONE);
			return;
		}
		atomic_fetch_add(&absorbed, sallocx(p, 0));
	}
}

size_t tier_arena_absorbed(void) { return atomic_load(&absorbed); }

int tier_arenas_install(int ntiers)
{
	unsigned narenas;
	size_t sz = sizeof(narenas);
	for (int t = 0; t < TIER_MAX_TIERS; t++)
		tier_arena[t] = UINT32_MAX;
	if (mallctl("opt.narenas", &narenas, &sz, NULL, 0))
		return -1;
	/* Arena 0 first: its previous hooks are jemalloc's defaults. */
	if (set_hooks(0, &tier_default_hooks))
		return -1;
	hooked = 1;
	for (unsigned i = 1; i < narenas; i++)
		if (set_hooks(i, NULL) == 0)
			hooked++;
	absorb_default_chunk();

	size_t oversize = 0;
	sz = sizeof(oversize);
	if (mallctl("opt.oversize_threshold", &oversize, &sz, NULL, 0) == 0 && oversize > 0 &&
	    oversize <= ((size_t)1 << 40)) {
		void *p = mallocx(oversize, MALLOCX_TCACHE_NONE);
		if (p) {
			dallocx(p, MALLOCX_TCACHE_NONE);
			huge_hooked = set_hooks(narenas, NULL) == 0;
		}
	}

	for (int t = 0; t < ntiers; t++) {
		unsigned idx;
		extent_hooks_t *h = &tier_extent_hooks;
		sz = sizeof(idx);
		if (mallctl("arenas.create", &idx, &sz, &h, sizeof(h)))
			continue;
		tier_arena[t] = idx;
		if (idx < TIER_MAX_ARENAS)
			atomic_store(&pinned[idx], (signed char)(t + 1));
	}
	return (int)hooked;
}

void *tier_malloc(unsigned tier, size_t size)
{
	tier_boot();
	unsigned a = tier_arena_of_tier((int)tier);
	if (a == UINT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	/* no tcache: a cached region could come from another arena */
	void *p = mallocx(size ? size : 1, MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE);
	if (!p)
		errno = ENOMEM;
	return p;
}
