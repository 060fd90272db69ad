/* jemalloc extent hooks: every extent tiermalloc serves is mapped, bound
 * and registered here. */
#ifndef TIER_HOOKS_H
#define TIER_HOOKS_H

#include <jemalloc/jemalloc.h>

extern extent_hooks_t tier_extent_hooks;
/* jemalloc's own hooks, for extents mapped before ours were installed. */
extern extent_hooks_t *tier_default_hooks;

#define TIER_MAX_ARENAS 4096

/* Explicit tier arenas: arena.c names the tier of each one it creates,
 * before it hands the index out; the hooks place that arena's extents
 * there.  The tier of an arena, or -1.  Safe in hooks. */
void tier_hooks_pin_arena(unsigned arena, int tier);
int tier_hooks_arena_tier(unsigned arena);

#endif
