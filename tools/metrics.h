/* Metrics for a fleet: the statistics of tiermalloc processes in the
 * Prometheus text exposition format (version 0.0.4), as the node
 * exporter's textfile collector and promtool read it.  Built from what
 * the command already has of each process: the channel's snapshot and the
 * library's JSON statistics. */
#ifndef TIER_METRICS_H
#define TIER_METRICS_H

#include <stdbool.h>
#include <stdio.h>

#include "chan.h"

#define TIER_METRICS_VALUES 64

struct tier_metrics_proc {
	long pid;    /* as this command sees it */
	long ns_pid; /* in the process's own pid namespace; 0: the same */
	char comm[64];
	char job[128]; /* the job it is a member of ("name:x", "cgroup:/a"), or "" */
	struct tier_chan_snap snap;
	/* read from the JSON statistics, one per row of the metric table */
	double v[TIER_METRICS_VALUES];
	bool has[TIER_METRICS_VALUES];
	double tier_resident[TIER_CHAN_TIERS];
	bool json; /* the JSON statistics were read */
};

/* Fill p's JSON values and job from the library's JSON statistics (the
 * reply of a TIER_REQ_STATS request with arg 1).  -1 when it does not
 * parse (p keeps what it has: the snapshot's metrics are still good). */
int tier_metrics_parse(const char *json, struct tier_metrics_proc *p);

/* Every metric family, each followed by one sample per process (and tier
 * or source), HELP and TYPE lines first. */
void tier_metrics_write(FILE *f, const struct tier_metrics_proc *procs, int n);

#endif
