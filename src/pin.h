/* Pins (tier_pin) and the device registrations that take them
 * (preload/devreg.c). */
#ifndef TIER_PIN_H
#define TIER_PIN_H

#include "tier.h"

/* What the interposed registration calls (ibv_reg_mr*, cudaHostRegister)
 * saw. */
struct tier_devreg_stats {
	_Atomic uint64_t calls;      /* registrations seen */
	_Atomic uint64_t pinned;     /* of those, ranges of ours pinned */
	_Atomic uint64_t foreign;    /* ranges not ours (or partly): passed through */
	_Atomic uint64_t untracked;  /* ours, but the table was full: not pinned */
	_Atomic uint64_t unpinned;   /* deregistrations that unpinned */
	_Atomic uint64_t missing;    /* calls with no library to forward to */
	_Atomic uint64_t live;       /* pinned registrations now */
};
extern struct tier_devreg_stats tier_devreg_stats;

#endif
