/* liburcu-bp, loaded when a process first needs it (rcu.c). */
#ifndef TIER_RCU_H
#define TIER_RCU_H

#include <stdbool.h>

/* Load liburcu-bp if not yet done; whether it is there.  dlopen allocates:
 * never from an extent hook or with an allocator lock held.  The boot
 * calls it before any hook is installed, so hooked processes have it. */
bool tier_rcu_load(void);

#endif
