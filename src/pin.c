/* tier_pin/tier_unpin: ranges that must never move (a device or NIC has
 * them mapped).  Pins count per 2 MiB block; the migrator skips any block
 * with a pin. */
#include <errno.h>

#include "knobs.h"
#include "pin.h"
#include "registry.h"
#include "tiermalloc.h"

/* Apply delta (+1/-1) to every block of [ptr, ptr+len) after checking that
 * all of them are ours (and, for -1, pinned): all or nothing. */
static int pin_range(const void *ptr, size_t len, int delta)
{
	uintptr_t a = (uintptr_t)ptr;
	if (!ptr || !len || a + len < a)
		return EINVAL;
	uintptr_t first = tier_align_down(a, TIER_BLOCK), last = tier_align_down(a + len - 1, TIER_BLOCK);
	int err = 0;
	tier_boot();
	tier_ctl_lock();
	rcu_read_lock();
	for (int pass = 0; pass < 2 && !err; pass++) {
		for (uintptr_t b = first; b <= last; b += TIER_BLOCK) {
			struct tier_mapping *m = tier_registry_lookup(b);
			if (!m || (b == last && a + len > m->base + m->size)) {
				err = EINVAL;
				break;
			}
			struct tier_block *blk = &m->blocks[(b - m->base) >> TIER_BLOCK_SHIFT];
			if (pass == 0) {
				if (delta < 0 && atomic_load(&blk->pins) == 0) {
					err = EINVAL;
					break;
				}
			} else {
				atomic_fetch_add(&blk->pins, (uint32_t)delta);
			}
		}
	}
	rcu_read_unlock();
	tier_ctl_unlock();
	return err;
}

int tier_pin(const void *ptr, size_t len) { return pin_range(ptr, len, 1); }
int tier_unpin(const void *ptr, size_t len) { return pin_range(ptr, len, -1); }

struct tier_devreg_stats tier_devreg_stats;
