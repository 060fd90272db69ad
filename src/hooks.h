/* jemalloc extent hooks: every extent tiermalloc serves is mapped, bound
 * and registered here. */
#ifndef TIER_HOOKS_H
#define TIER_HOOKS_H

#include <jemalloc/jemalloc.h>

extern extent_hooks_t tier_extent_hooks;
/* jemalloc's own hooks, for extents mapped before ours were installed. */
extern extent_hooks_t *tier_default_hooks;

#endif
