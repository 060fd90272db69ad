/* Moving resident pages from one range of the process to another
 * (mremap with MREMAP_DONTUNMAP): a fresh huge buffer is filled with the
 * pages of held ones that do not fit it, so that the program does not
 * fault them in again.  See large_move.c.  No malloc: fit for the large
 * cache's lock, not for extent hooks (it maps).  Callers take turns (the
 * large cache's lock). */
#ifndef TIER_LARGE_MOVE_H
#define TIER_LARGE_MOVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Pages move in aligned granules: one page-table move each where the
 * kernel can, and a mapping split only at granule boundaries. */
#define TIER_MOVE_GRAIN ((size_t)2 << 20)
#define TIER_MOVE_RUNS 32

/* Where pages may go: runs of granules of one buffer with no page
 * resident, filled in order. */
struct tier_move_dst {
	uintptr_t at[TIER_MOVE_RUNS];
	size_t len[TIER_MOVE_RUNS];
	int n, i;
};

/* The granules of [p, p + bytes) with no resident page. */
void tier_move_dst_init(struct tier_move_dst *d, const void *p, size_t bytes);
/* Bytes still to fill. */
size_t tier_move_dst_left(const struct tier_move_dst *d);
/* Moves the granules of [src, src + bytes) that are at least half
 * resident into d's runs; src's granules are left mapped and empty (they
 * read zero when touched again).  Returns the bytes moved. */
size_t tier_move_from(struct tier_move_dst *d, void *src, size_t bytes);
/* Whether moves are possible: the kernel has MREMAP_DONTUNMAP for
 * private anonymous memory and the process is far from its limit on
 * mappings.  Once false, stays false. */
bool tier_move_usable(void);

#endif
