/* The cxl heat source's batches and counters (heat_cxl.c). */
#ifndef TIER_HEAT_CXL_H
#define TIER_HEAT_CXL_H

#include <stddef.h>
#include <stdint.h>

struct tier_cxl_stats {
	_Atomic uint64_t bytes;              /* of records read or queued */
	_Atomic uint64_t accepted;           /* records naming our memory */
	_Atomic uint64_t rejected_malformed;
	_Atomic uint64_t rejected_version;   /* unknown version, or no header */
	_Atomic uint64_t rejected_range;     /* unit, address or count out of range */
	_Atomic uint64_t rejected_foreign;   /* memory that is not ours */
	_Atomic uint64_t rejected_duplicate; /* the same record twice in one period */
	_Atomic uint64_t rejected_dpa;       /* dpa records no region maps (or spanning granules) */
	_Atomic uint64_t deferred;
	_Atomic uint64_t capped_pages;       /* our pages named, given no heat by the rule */
	_Atomic uint64_t dropped_bytes;      /* batches refused: the queue was full */
};
extern struct tier_cxl_stats tier_cxl_stats;

/* Queue a batch (text in the cxl_report.h format, starting with its
 * header) for the background thread.  0, EINVAL (empty, or a NUL byte),
 * EAGAIN (the queue is full: counted in dropped_bytes), EOPNOTSUPP (the
 * source is not running). */
int tier_cxl_submit(const char *text, size_t len);

#endif
