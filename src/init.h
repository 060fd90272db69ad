/* Process lifecycle: boot on the first allocation, start the rest from the
 * library constructor, fork and exit handling. */
#ifndef TIER_INIT_H
#define TIER_INIT_H

#include "knobs.h"
#include "topology.h"

extern struct tier_settings tier_settings; /* live knobs */
extern struct tier_topology tier_topo;

/* Idempotent, thread-safe; never allocates through malloc.  A call made
 * while this thread is already booting returns at once. */
void tier_boot(void);
/* Work that may allocate (CXL discovery, exit hooks): constructor time. */
void tier_start(void);
/* Serialises knob writes and actions from tier_mallctl. */
void tier_ctl_lock(void);
void tier_ctl_unlock(void);

#endif
