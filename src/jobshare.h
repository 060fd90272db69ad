/* A job's fast-tier budget split over its member processes: the budget
 * goes to the hottest memory of the whole job, whichever process holds
 * it.  Pure logic over heat histograms (unit-tested on the host). */
#ifndef TIER_JOBSHARE_H
#define TIER_JOBSHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIER_JOB_BUCKETS 64 /* = TIER_HIST_BUCKETS: bucket k is hotter than k-1 */
#define TIER_JOB_MAX 32     /* members of one job (the ledger's slots) */

/* One member as the ledger shows it: pages by heat bucket on the fast and
 * on the slow tiers, and the pages it holds on the fast tier now (blocks
 * not yet measured count as cold fast memory). */
struct tier_job_member {
	uint32_t fast[TIER_JOB_BUCKETS];
	uint32_t slow[TIER_JOB_BUCKETS];
	uint64_t fast_pages;
};

struct tier_job_rules {
	/* memory already fast competes as if this many buckets hotter: the
	 * hysteresis factor in buckets (factor 2 with 4 buckets per doubling
	 * is 4), so slow memory must be that much hotter to take its place */
	int stay_buckets;
	/* slow memory colder than this bucket claims nothing (the policy
	 * would not promote it anyway) */
	int min_bucket;
};

/* Water-fill: budget pages go to the hottest (fast boosted by
 * stay_buckets) memory of all members; then to fast memory that is cold
 * or not measured (it stays where it is); what remains is split evenly as
 * headroom for new allocations.  At most TIER_JOB_MAX members.  share[i] gets member i's pages; the
 * shares add up to budget exactly when n > 0. */
void tier_job_fill(const struct tier_job_member *m, int n, uint64_t budget,
                   const struct tier_job_rules *r, uint64_t *share);

/* A request to demote (or promote) `pages` of the job's coldest fast (or
 * hottest slow, at least min_bucket) memory, split over the members by
 * their histograms: part[i] gets member i's pages.  Returns the pages
 * placed (less than asked when the job holds less). */
uint64_t tier_job_split(const struct tier_job_member *m, int n, uint64_t pages, bool promote,
                        int min_bucket, uint64_t *part);

/* A member's fast_limit from its share: never above share, never above
 * the room that the others leave in the budget (so that the sum of the
 * members' fast bytes stays within it while shares shift), but never so
 * low that memory this member holds must leave only because others have
 * not yet given theirs up (own / wm_high keeps it under the watermark). */
uint64_t tier_job_limit(uint64_t share, uint64_t budget, uint64_t own, uint64_t others,
                        double wm_high);

#endif
