/* Lists inside a knob's value: items joined by a separator, as in
 * fast_nodes:0-1+4 and heat_sources:perf+damon.  One splitter for all. */
#ifndef TIER_LIST_H
#define TIER_LIST_H

#include <stddef.h>

/* Call item(ctx, s, n) for each item of v[0..len), split at any byte of
 * seps.  -1 for an empty list, an empty item (a leading, trailing or
 * doubled separator) or an item that item() refuses (returns nonzero);
 * else 0. */
int tier_list_parse(const char *v, size_t len, const char *seps,
		    int (*item)(void *ctx, const char *s, size_t n), void *ctx);

#endif
