/* Job-wide tiering: this process as a member of a job whose processes
 * share one fast-tier budget through the ledger (ledger.c), split by
 * jobshare.c; and this process's cgroup (cgroup.c).  Driven by the
 * background thread; it sets tier_place.fast_limit, which the policy
 * already enforces. */
#ifndef TIER_JOB_H
#define TIER_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup.h"

/* Each period, under the balance lock, before the policy runs: publish,
 * read the others, set this process's fast_limit; once a second also
 * re-read the cgroup and free the slots of members that are gone. */
void tier_job_period(void);
/* Apply a demote/promote request from outside (outside the balance
 * lock: it moves memory). */
void tier_job_requests(void);
/* Leave the ledger (exit). */
void tier_job_leave(void);
/* The child of a fork is a new member (a slot of its own). */
void tier_job_after_fork_child(void);

struct tier_job_view {
	const char *state;  /* "off", "member", or why not ("refused: ...") */
	const char *name;   /* the job's identity: "name:N" or "cgroup:/P"; "" when off */
	const char *ledger; /* the ledger file; "" when off */
	unsigned members;   /* live members, this one included */
	uint64_t budget;    /* job fast-tier budget, bytes */
	uint64_t share;     /* this process's share of it */
	uint64_t limit;     /* the fast_limit applied */
	uint64_t fast_bytes; /* the members' fast bytes together, as published */
	uint64_t requests, requested_moved; /* requests from outside applied */
	struct tier_cgroup cg;
};
/* A snapshot for stats and tier_mallctl (reads the cgroup when the
 * background thread has not yet). */
void tier_job_view(struct tier_job_view *v);

#endif
