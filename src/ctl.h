/* tier_mallctl's names with their types, and a text form of it for
 * callers outside the process (the control channel). */
#ifndef TIER_CTL_H
#define TIER_CTL_H

#include <stdbool.h>
#include <stddef.h>

#include "knobs.h"

enum tier_ctl_type {
	TC_BOOL,     /* bool */
	TC_UNSIGNED, /* unsigned */
	TC_SIZE,     /* size_t */
	TC_U64,      /* uint64_t */
	TC_DOUBLE,   /* double */
	TC_STR,      /* const char * */
	TC_MOVE,     /* write size_t, read size_t: tier.promote / tier.demote */
	TC_HEAT_OF,  /* write uintptr_t, read float: tier.heat.of */
	TC_REPORT,   /* write text (newp, newlen bytes), nothing to read: tier.cxl.report */
};

const char *tier_ctl_type_name(enum tier_ctl_type t);

/* Every name (tier indexes expanded) with its type, whether it can be
 * written and, for stats, the path of the same value in the JSON stats
 * (NULL for the rest); returns how many. */
int tier_ctl_names(void (*cb)(void *ctx, const char *name, enum tier_ctl_type type, bool writable,
			      const char *json),
		   void *ctx);
/* The type of one name; ENOENT when unknown.  *knob: the knob behind an
 * opt.<knob> / tier.<knob> name, else NULL. */
int tier_ctl_type(const char *name, enum tier_ctl_type *type, bool *writable,
		  const struct tier_knob **knob);

/* "NAME" reads, "NAME=VALUE" writes (VALUE as in TIERMALLOC_CONF: 2G,
 * true, 0.5; tier.heat.of takes an address).  Returns tier_mallctl's
 * status (0, ENOENT, EINVAL, EPERM, EFAULT); reply gets "NAME=VALUE" or,
 * on an error, a reason.  Changes nothing unless the whole request is
 * valid.  May allocate: never from a hook or a signal handler. */
int tier_ctl_text(const char *req, char *reply, size_t len);

#endif
