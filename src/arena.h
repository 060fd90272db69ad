/* Arenas: our hooks on jemalloc's automatic arenas, and one explicit arena
 * per tier whose memory stays on that tier. */
#ifndef TIER_ARENA_H
#define TIER_ARENA_H

#include "tier.h"

#define TIER_MAX_ARENAS 4096

/* Install the hooks on every automatic arena (initialising them) and on
 * the huge-allocation arena, then create one arena per tier.  Returns the
 * number of automatic arenas hooked, or -1. */
int tier_arenas_install(int ntiers);
/* The tier an explicit tier arena is pinned to, or -1. */
int tier_arena_pinned_tier(unsigned arena);
/* The explicit arena of a tier, or UINT32_MAX. */
unsigned tier_arena_of_tier(int tier);
/* Automatic arenas hooked, and whether the huge arena was. */
unsigned tier_arenas_hooked(void);
bool tier_arena_huge_hooked(void);
/* Bytes of arena 0's default-hook chunk taken out of circulation. */
size_t tier_arena_absorbed(void);

#endif
