/* Direct jumps written into our own entry points (patch.c). */
#ifndef TIER_PATCH_H
#define TIER_PATCH_H

#include <stdbool.h>
#include <stddef.h>

/* One rewrite: in the function fn, the indirect jump through slot (found
 * within its first span bytes), or with slot NULL the function's first
 * instruction, becomes a direct jump to target. */
struct tier_patch {
	void *fn;
	void *const *slot;
	const void *target;
};

/* Applies the rewrites that can be (see patch.c); returns how many were
 * made.  Only while the process has a single thread. */
int tier_patch_apply(const struct tier_patch *p, int n);

#endif
