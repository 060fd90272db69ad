/* Process lifecycle: boot on the first allocation, start the rest from the
 * library constructor, fork and exit handling. */
#ifndef TIER_INIT_H
#define TIER_INIT_H

#include "knobs.h"
#include "topology.h"

/* The boot (tier_boot, knobs.h) is idempotent and thread-safe and never
 * allocates through malloc; a call made while this thread is already
 * booting returns at once. */

/* Work that may allocate (CXL discovery, exit hooks): constructor time. */
void tier_start(void);

#endif
