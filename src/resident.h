/* Where our pages live, as the kernel reports it (move_pages status
 * queries, batched: one call per 16384 pages). */
#ifndef TIER_RESIDENT_H
#define TIER_RESIDENT_H

#include "tier.h"

struct tier_resident {
	size_t node[TIER_MAX_NODES];  /* bytes resident per node */
	size_t tier[TIER_MAX_TIERS];  /* the same, summed per tier */
	size_t other;                 /* on nodes outside every tier */
	size_t queried;               /* committed bytes asked about */
};

/* Scan every committed page of the registry.  Returns 0, or an errno. */
int tier_resident_scan(struct tier_resident *r);
/* Query the nodes of n pages; status[i] gets a node or -errno. */
int tier_pages_where(void **pages, int *status, size_t n);

#endif
