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

/* The curve's values by name, for tier_mallctl (stats.advise.<name>)
 * and the stats ("advise"): seen_1s, seen_10s, seen_60s, size_90,
 * size_95, size_99, tracked. */
#define TIER_ADVISE_VALUES 7
extern const char *const tier_advise_names[TIER_ADVISE_VALUES];
uint64_t tier_advise_value(int i);

/* Background thread: recompute when a second has passed (or `final`). */
void tier_advise_tick(bool final);

#endif
