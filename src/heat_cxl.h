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
	/* The reverse map (page frame -> our slow-tier page) and its costs. */
	_Atomic uint64_t map_reads;          /* blocks whose frames were read into it */
	_Atomic uint64_t map_checks;         /* blocks read again before they got heat */
	_Atomic uint64_t map_stale;          /* pages found moved by those reads */
	_Atomic uint64_t map_full;           /* blocks left out (bounds) */
	_Atomic uint64_t map_pages;          /* frames it holds now */
	_Atomic uint64_t hits_dropped;       /* named pages of ours over CXL_HITS a period */
	_Atomic uint64_t resolves;           /* periods with records */
	_Atomic uint64_t resolve_ns;         /* CPU time resolving them (map, lookups, heat) */
	/* Regions (dpa records). */
	_Atomic uint64_t region_reads;       /* times the layout was read */
	_Atomic uint64_t region_changes;     /* ... and found changed */
	_Atomic uint64_t regions_refused;    /* regions now refused (XOR or unknown interleave) */
	_Atomic uint64_t rejected_interleave; /* dpa records in such regions */
};
extern struct tier_cxl_stats tier_cxl_stats;

/* Queue a batch (text in the cxl_report.h format, starting with its
 * header) for the background thread.  0, EINVAL (empty, or a NUL byte),
 * EAGAIN (the queue is full: counted in dropped_bytes), EOPNOTSUPP (the
 * source is not running). */
int tier_cxl_submit(const char *text, size_t len);

#endif
