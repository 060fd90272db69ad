/* Job membership: identity, ledger slot, share of the job budget. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heat_hist.h"
#include "knobs.h"
#include "topology.h"
#include "job.h"
#include "jobshare.h"
#include "ledger.h"
#include "monitor.h"
#include "place.h"
#include "rundir.h"
#include "sysfs.h"
#include "tiering.h"

/* Liveness checks and cgroup reads: once per this many ns. */
#define CHECK_NS 1000000000ull

static struct {
	pthread_mutex_t mu; /* the view against the background thread */
	bool tried;         /* identity decided */
	bool wanted;        /* job or job_fast_limit given */
	char state[320];
	char ident[TIER_LEDGER_IDENT];
	struct tier_ledger_map map;
	int slot;
	uint64_t start;
	uint64_t budget, share, limit, fast_all;
	unsigned members;
	uint64_t next_check;
	uint64_t requests, requested_moved;
	struct tier_cgroup cg;
	bool cg_read;
} job = {.mu = PTHREAD_MUTEX_INITIALIZER, .slot = -1, .state = "off"};

static uint64_t start_of(long pid)
{
	return tier_ledger_start_of(pid);
}

/* The job budget this process asks for. */
static uint64_t budget_wanted(void)
{
	const struct tier_size_share *z = &tier_settings.job_fast_limit;
	if (z->share > 0) {
		/* a share of the fast nodes this cgroup may use */
		tier_nodemask_t allowed = ~(tier_nodemask_t)0, m;
		if (job.cg.mems[0] && !tier_nodemask_parse(job.cg.mems, strlen(job.cg.mems), &m))
			allowed = m;
		uint64_t total = 0;
		for (int n = 0; n < TIER_MAX_NODES; n++)
			if (tier_topo.ntiers && (tier_topo.tier[0].nodes & allowed) >> n & 1)
				total += tier_topo.node[n].mem_total;
		return (uint64_t)((double)total * z->share);
	}
	if (z->bytes)
		return z->bytes;
	return tier_settings.fast_limit;
}

static void set_state(const char *s)
{
	pthread_mutex_lock(&job.mu);
	snprintf(job.state, sizeof(job.state), "%s", s);
	pthread_mutex_unlock(&job.mu);
}

static void leave(void)
{
	if (job.map.l && job.slot >= 0)
		tier_ledger_release(job.map.l, job.slot, (long)getpid());
	job.slot = -1;
	tier_ledger_close(&job.map);
	pthread_mutex_lock(&job.mu);
	job.members = 0;
	job.share = job.fast_all = 0;
	pthread_mutex_unlock(&job.mu);
	/* back to this process's own budget */
	tier_place_set_fast_limit(tier_settings.fast_limit);
}

/* Decide the identity and open the ledger; once, and again when the
 * cgroup that names the job changes. */
static void join(void)
{
	char ident[TIER_LEDGER_IDENT];
	if (tier_settings.job[0])
		snprintf(ident, sizeof(ident), "name:%s", tier_settings.job);
	else if (job.cg.found)
		snprintf(ident, sizeof(ident), "cgroup:%s", job.cg.path);
	else {
		set_state("off: job_fast_limit given, but no cgroup v2 found and no job name");
		return;
	}
	char dir[TIER_RUNDIR_PATH], why[200];
	int dfd = tier_rundir(dir, sizeof(dir));
	struct tier_ledger_map m;
	char line[400];
	if (dfd < 0) {
		snprintf(line, sizeof(line), "refused: no runtime directory for the job ledger");
	} else if (tier_ledger_open(dfd, dir, ident, true, &m, why, sizeof(why))) {
		snprintf(line, sizeof(line), "refused: %s: %s", m.path, why);
	} else {
		job.map = m;
		job.start = start_of((long)getpid());
		job.slot = tier_ledger_claim(m.l, (long)getpid(), job.start);
		if (job.slot < 0) {
			tier_ledger_close(&job.map);
			snprintf(line, sizeof(line), "refused: %s: all %d slots taken", m.path,
				 TIER_LEDGER_SLOTS);
		} else {
			pthread_mutex_lock(&job.mu);
			snprintf(job.ident, sizeof(job.ident), "%s", ident);
			snprintf(job.state, sizeof(job.state), "member");
			pthread_mutex_unlock(&job.mu);
			if (tier_settings.verbose)
				tier_log("job %s: ledger %s, slot %d", ident, m.path, job.slot);
			return;
		}
	}
	/* one clear line, then this process's own budget */
	tier_log("job %s: ledger %s; this process keeps its own fast_limit (%zu MiB)", ident,
		 line + 9, tier_settings.fast_limit >> 20);
	set_state(line);
	pthread_mutex_lock(&job.mu);
	snprintf(job.ident, sizeof(job.ident), "%s", ident);
	pthread_mutex_unlock(&job.mu);
}

static void snapshot(struct tier_job_member *h)
{
	memset(h, 0, sizeof(*h));
	for (int t = 0; t < tier_place.ntiers && t < TIER_MAX_TIERS; t++) {
		const struct tier_hist *th = tier_monitor_hist(t);
		if (!th)
			break;
		uint32_t *dst = t == 0 ? h->fast : h->slow;
		for (int k = 0; k < TIER_JOB_BUCKETS && k < TIER_HIST_BUCKETS; k++) {
			uint64_t v = dst[k] + th->pages[k];
			dst[k] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
		}
	}
	h->fast_pages = atomic_load(&tier_place_stats.committed[0]) >> TIER_PAGE_SHIFT;
}

/* The members' publications (alive or not yet reaped), this one first. */
static struct tier_ledger_pub pubs[TIER_LEDGER_SLOTS];
static struct tier_job_member mems[TIER_LEDGER_SLOTS];
static uint64_t shares[TIER_LEDGER_SLOTS];

TIER_STARTUP void tier_job_period(void)
{
	if (!job.tried) {
		job.tried = true;
		job.wanted = tier_settings.job[0] || tier_knob_given(&tier_settings, "job_fast_limit");
		if (!job.wanted)
			return; /* the cgroup is read when stats ask */
		pthread_mutex_lock(&job.mu);
		tier_cgroup_read(&job.cg);
		job.cg_read = true;
		pthread_mutex_unlock(&job.mu);
		job.next_check = tier_clock_ns(CLOCK_MONOTONIC) + CHECK_NS;
		if (atomic_load(&tier_place.active))
			join();
		else
			set_state("off: tiering is off in this process (one tier, or enabled:false)");
	}
	if (!job.wanted)
		return;
	uint64_t now = tier_clock_ns(CLOCK_MONOTONIC);
	bool check = now >= job.next_check;
	if (check) {
		job.next_check = now + CHECK_NS;
		struct tier_cgroup cg = job.cg;
		if (tier_cgroup_read(&cg)) {
			bool moved = strcmp(cg.path, job.cg.path) != 0;
			if (tier_settings.verbose)
				tier_log("cgroup %s: memory.max %s, cpuset.mems.effective %s", cg.path,
					 cg.memory_max == UINT64_MAX ? "max" : "set", cg.mems[0] ? cg.mems : "?");
			pthread_mutex_lock(&job.mu);
			job.cg = cg;
			pthread_mutex_unlock(&job.mu);
			/* a job named by its cgroup follows the process */
			if (moved && job.wanted && !tier_settings.job[0] && atomic_load(&tier_place.active)) {
				leave();
				join();
			}
		} else {
			pthread_mutex_lock(&job.mu);
			job.cg.memory_current = cg.memory_current;
			pthread_mutex_unlock(&job.mu);
		}
	}
	if (!job.map.l || job.slot < 0)
		return;
	struct tier_ledger *l = job.map.l;
	long self = (long)getpid();
	if (__atomic_load_n(&l->slot[job.slot].owner, __ATOMIC_ACQUIRE) != (uint64_t)self) {
		/* freed under us (a reaper misjudged a reused pid): claim again */
		job.slot = tier_ledger_claim(l, self, job.start);
		if (job.slot < 0) {
			leave();
			set_state("refused: the ledger's slots are all taken");
			return;
		}
	}
	if (check)
		tier_ledger_reap(l, self, start_of);

	/* this process's publication, then everyone's */
	struct tier_ledger_pub me;
	memset(&me, 0, sizeof(me));
	me.start = job.start;
	snapshot(&me.hist);
	me.fast_bytes = atomic_load(&tier_place_stats.committed[0]);
	me.budget = budget_wanted();
	me.share = job.share;
	me.limit = job.limit;
	me.updated_ns = tier_clock_ns(CLOCK_BOOTTIME);
	me.min_bucket = (uint64_t)tier_hist_bucket(TIER_MIN_HEAT);
	tier_ledger_publish(&l->slot[job.slot], &me);

	int n = 0, mine = -1;
	uint64_t budget = UINT64_MAX, all = 0;
	for (int i = 0; i < TIER_LEDGER_SLOTS; i++) {
		long pid;
		if (i == job.slot) {
			pubs[n] = me;
			mine = n;
		} else if (!tier_ledger_read(&l->slot[i], &pid, &pubs[n])) {
			continue;
		}
		mems[n] = pubs[n].hist;
		/* the smallest budget any member asks for binds them all */
		if (pubs[n].budget && pubs[n].budget < budget)
			budget = pubs[n].budget;
		all += pubs[n].fast_bytes;
		n++;
	}
	if (budget == UINT64_MAX)
		budget = me.budget;
	struct tier_job_rules rules = {
		.stay_buckets = (int)lround(log2(tier_settings.hysteresis) * TIER_HIST_STEPS),
		.min_bucket = (int)me.min_bucket,
	};
	tier_job_fill(mems, n, budget >> TIER_PAGE_SHIFT, &rules, shares);
	uint64_t share = shares[mine] << TIER_PAGE_SHIFT;
	uint64_t limit = tier_job_limit(share, budget, me.fast_bytes, all - me.fast_bytes,
					tier_settings.watermark_high);
	if (limit > tier_settings.fast_limit)
		limit = tier_settings.fast_limit; /* the per-process cap still holds */
	tier_place_set_fast_limit((size_t)limit);
	pthread_mutex_lock(&job.mu);
	job.members = (unsigned)n;
	job.budget = budget;
	job.share = share;
	job.limit = limit;
	job.fast_all = all;
	pthread_mutex_unlock(&job.mu);
}

void tier_job_requests(void)
{
	if (!job.map.l || job.slot < 0)
		return;
	struct tier_ledger_slot *s = &job.map.l->slot[job.slot];
	uint32_t kind;
	uint64_t bytes, seq;
	if (!tier_ledger_pending(s, &kind, &bytes, &seq))
		return;
	size_t moved = 0;
	if ((kind == TIER_LEDGER_DEMOTE || kind == TIER_LEDGER_PROMOTE) && atomic_load(&tier_place.active))
		moved = tier_move_now((size_t)bytes, kind == TIER_LEDGER_PROMOTE);
	tier_ledger_done(s, seq, moved);
	pthread_mutex_lock(&job.mu);
	job.requests++;
	job.requested_moved += moved;
	pthread_mutex_unlock(&job.mu);
	if (tier_settings.verbose)
		tier_log("job request: %s %llu bytes, moved %zu", kind == TIER_LEDGER_PROMOTE ? "promote" : "demote",
			 (unsigned long long)bytes, moved);
}

TIER_STARTUP void tier_job_leave(void)
{
	if (job.map.l)
		leave();
}

void tier_job_after_fork_child(void)
{
	/* the mapping is inherited, the slot is the parent's */
	job.slot = -1;
	tier_ledger_close(&job.map);
	job.tried = false;
	job.members = 0;
	job.share = job.limit = job.fast_all = 0;
	job.requests = job.requested_moved = 0;
	pthread_mutex_init(&job.mu, NULL);
}

void tier_job_view(struct tier_job_view *v)
{
	static char state[320], ident[TIER_LEDGER_IDENT], path[512];
	pthread_mutex_lock(&job.mu);
	/* not a member: read now (members re-read once a second) */
	if (!job.cg_read)
		tier_cgroup_read(&job.cg);
	snprintf(state, sizeof(state), "%s", job.state);
	snprintf(ident, sizeof(ident), "%s", job.ident);
	snprintf(path, sizeof(path), "%s", job.map.l ? job.map.path : "");
	v->state = state;
	v->name = ident;
	v->ledger = path;
	v->members = job.members;
	v->budget = job.budget;
	v->share = job.share;
	v->limit = job.limit;
	v->fast_bytes = job.fast_all;
	v->requests = job.requests;
	v->requested_moved = job.requested_moved;
	v->cg = job.cg;
	pthread_mutex_unlock(&job.mu);
}
