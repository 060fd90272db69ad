/* The advisor: the program's hot-set curve, from the monitor's heat
 * histograms and its record of when blocks were last seen accessed, with
 * or without tiering (advise:true runs the heat sources on one tier too):
 * bytes seen accessed in the last 1 / 10 / 60 s, and the fast-tier size
 * that would have served 90 / 95 / 99% of the sampled accesses.  Updated
 * once a second (and at exit); a CSV row each time when advise_csv names
 * a file. */
#ifndef TIER_ADVISE_H
#define TIER_ADVISE_H

#include <stdbool.h>
#include <stdint.h>

struct tier_advise_stats {
	_Atomic uint64_t seen[3];   /* bytes: last 1 s, 10 s, 60 s */
	_Atomic uint64_t size[3];   /* bytes for 90%, 95%, 99% of the accesses */
	_Atomic uint64_t tracked;   /* bytes in the histograms */
	_Atomic uint64_t updates;   /* curves computed */
	_Atomic uint64_t rows;      /* CSV rows written */
	_Atomic int csv_errno;      /* the CSV file could not be written (0: fine) */
};
extern struct tier_advise_stats tier_advise_stats;

/* Background thread: recompute when a second has passed (or `final`). */
void tier_advise_tick(bool final);

#endif
