/* damon: accessed bits through DAMON virtual-address monitoring, via
 * /sys/kernel/mm/damon/admin (root, CONFIG_DAMON_VADDR + CONFIG_DAMON_SYSFS).
 *
 * DAMON's sysfs is one interface for the whole machine: nr_kdamonds cannot
 * change while any kdamond runs, and rewriting it tears down every
 * kdamond's setup.  So tiermalloc processes share ONE kdamond: its context
 * monitors one target per process, and each process owns one "stat"
 * scheme whose target filter keeps only its own regions (scheme i <->
 * target i).  A state file under a lock lists the member pids; whoever
 * joins or leaves rewrites the targets and schemes and commits them; dead
 * members (pid gone, or pid reused: start time differs) are pruned by the
 * next one.  A kdamond is added only when none of ours exists and no
 * kdamond at all is running; otherwise this source stays off and says why.
 * DAMON (6.12) can monitor virtual addresses but not migrate them; it only
 * reports here, tiermalloc moves. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "thread.h"
#include "heat.h"
#include "rundir.h"
#include "sysfs.h"

#define ADMIN "/sys/kernel/mm/damon/admin/kdamonds"
#define MAX_MEMBERS 64
#define EMPTY_RESTART 8
/* Sampling levels for the CPU budget: level L samples every 5 ms << L
 * over at most 2000 >> L regions, aggregating over at least 100 ms and
 * two samples (20, 10, 5, 2, 2 samples per aggregation): kdamond's work
 * falls by 2 to 4 times per level.  The shared kdamond runs at the
 * highest level any member asked for: the most frugal wins. */
#define LEVELS 5
#define SAMPLE_US(l) (5000 << (l))
#define AGGR_US_AT(l) (SAMPLE_US(l) * 2 > 100000 ? SAMPLE_US(l) * 2 : 100000)
#define MAX_REGIONS_AT(l) (2000 >> (l))

struct member {
	long pid;
	unsigned long long start; /* /proc/PID/stat starttime */
	int level;
};

struct state {
	int kd; /* kdamond index, -1: none */
	int n;
	struct member m[MAX_MEMBERS];
};

static struct {
	bool on, paused;
	bool joined;      /* has been a member of the kdamond since start */
	int kd;
	int lockfd;
	unsigned long long my_start;
	int empty;        /* collections in a row without an accessed region */
	unsigned restarts;
	int level;        /* this member's sampling level */
	int samples;      /* samples per aggregation in the running configuration */
	int members;      /* members sharing the kdamond at the last configuration */
	long kpid;        /* the kdamond's pid, for its CPU time */
	uint64_t kcpu;    /* its CPU time (schedstat) at the last reading */
	_Atomic uint64_t kernel_ns; /* our share of its CPU since we joined */
	_Atomic uint64_t thread_ns; /* the query thread's CPU */
} dm = {.kd = -1, .lockfd = -1, .samples = AGGR_US_AT(0) / SAMPLE_US(0)};


/* The lock and the member list live in root's machine-wide runtime
 * directory (/run/tiermalloc, else /dev/shm/tiermalloc-0: every root
 * process resolves the same one), since the kdamond is one per machine. */
static int lock(int how)
{
	if (dm.lockfd < 0) {
		int dir = tier_rundir_shared(NULL, 0);
		if (dir < 0) {
			errno = ENOENT;
			return -1;
		}
		dm.lockfd = openat(dir, "damon.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (dm.lockfd < 0)
			return -1;
	}
	while (flock(dm.lockfd, how) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

static void unlock(void)
{
	flock(dm.lockfd, LOCK_UN);
}

static void load(struct state *s)
{
	char buf[4096];
	s->kd = -1;
	s->n = 0;
	int dir = tier_rundir_shared(NULL, 0), fd;
	ssize_t got = -1;
	if (dir >= 0 && (fd = openat(dir, "damon.state", O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
		got = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (got <= 0)
		return;
	buf[got] = '\0';
	char *save = NULL;
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		long pid;
		unsigned long long st;
		int level = 0;
		if (sscanf(l, "kdamond %d", &s->kd) == 1)
			continue;
		if (sscanf(l, "%ld %llu %d", &pid, &st, &level) >= 2 && s->n < MAX_MEMBERS)
			s->m[s->n++] = (struct member){pid, st, level < 0 ? 0 : level >= LEVELS ? LEVELS - 1 : level};
	}
}

static int save(const struct state *s)
{
	char buf[4096];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "kdamond %d\n", s->kd);
	for (int i = 0; i < s->n && n < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%ld %llu %d\n", s->m[i].pid, s->m[i].start,
				      s->m[i].level);
	int dir = tier_rundir_shared(NULL, 0);
	if (dir < 0)
		return -1;
	int fd = openat(dir, "damon.state.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	bool ok = write(fd, buf, n) == (ssize_t)n;
	close(fd);
	return ok ? renameat(dir, "damon.state.tmp", dir, "damon.state") : -1;
}

static void prune(struct state *s)
{
	int k = 0;
	for (int i = 0; i < s->n; i++) {
		bool alive = (kill((pid_t)s->m[i].pid, 0) == 0 || errno == EPERM) &&
			     tier_proc_start_time(s->m[i].pid) == s->m[i].start;
		if (alive)
			s->m[k++] = s->m[i];
	}
	s->n = k;
}

static int wr(const char *value, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int wr(const char *value, const char *fmt, ...)
{
	char path[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return tier_write_file(path, value);
}

static bool kdamond_on(int k)
{
	char path[128], buf[16];
	snprintf(path, sizeof(path), ADMIN "/%d/state", k);
	return tier_read_file(path, buf, sizeof(buf)) > 0 && !strcmp(buf, "on");
}

/* Turn a kdamond off and wait until its thread is gone, so that the next
 * member's "on" starts a new one instead of committing to a dying one. */
static int turn_off(int k)
{
	int e = wr("off", ADMIN "/%d/state", k);
	for (int i = 0; i < 200 && kdamond_on(k); i++)
		usleep(10000);
	return e;
}

/* Rewrite the shared kdamond's context for the members of s and start or
 * commit it.  0, or a negative errno. */
static int configure(const struct state *s)
{
	int k = s->kd, e;
	char v[32];
	if (!s->n) /* nobody left: stop monitoring */
		return kdamond_on(k) ? turn_off(k) : 0;
	char path[128], buf[16];
	snprintf(path, sizeof(path), ADMIN "/%d/contexts/nr_contexts", k);
	if (tier_read_file(path, buf, sizeof(buf)) <= 0 || strcmp(buf, "1"))
		if ((e = wr("1", ADMIN "/%d/contexts/nr_contexts", k)))
			return e;
#define C ADMIN "/%d/contexts/0"
	if ((e = wr("vaddr", C "/operations", k)))
		return e;
	int level = 0;
	for (int i = 0; i < s->n; i++)
		if (s->m[i].level > level)
			level = s->m[i].level;
	snprintf(v, sizeof(v), "%d", SAMPLE_US(level));
	wr(v, C "/monitoring_attrs/intervals/sample_us", k);
	snprintf(v, sizeof(v), "%d", AGGR_US_AT(level));
	wr(v, C "/monitoring_attrs/intervals/aggr_us", k);
	wr("200000", C "/monitoring_attrs/intervals/update_us", k); /* new mappings covered soon */
	snprintf(v, sizeof(v), "%d", MAX_REGIONS_AT(level) / 10);
	wr(v, C "/monitoring_attrs/nr_regions/min", k);
	snprintf(v, sizeof(v), "%d", MAX_REGIONS_AT(level));
	wr(v, C "/monitoring_attrs/nr_regions/max", k);
	dm.samples = AGGR_US_AT(level) / SAMPLE_US(level);
	dm.members = s->n;
	snprintf(v, sizeof(v), "%d", s->n);
	if ((e = wr(v, C "/targets/nr_targets", k)) || (e = wr(v, C "/schemes/nr_schemes", k)))
		return e;
	for (int i = 0; i < s->n; i++) {
		snprintf(v, sizeof(v), "%ld", s->m[i].pid);
		if ((e = wr(v, C "/targets/%d/pid_target", k, i)))
			return e;
#define S C "/schemes/%d"
		wr("stat", S "/action", k, i);
		wr("0", S "/access_pattern/sz/min", k, i);
		wr("18446744073709551615", S "/access_pattern/sz/max", k, i);
		wr("1", S "/access_pattern/nr_accesses/min", k, i); /* accessed regions only */
		wr("4294967295", S "/access_pattern/nr_accesses/max", k, i);
		wr("0", S "/access_pattern/age/min", k, i);
		wr("4294967295", S "/access_pattern/age/max", k, i);
		/* keep only target i's regions: filter out what does not match it */
		if ((e = wr("1", S "/filters/nr_filters", k, i)) ||
		    (e = wr("target", S "/filters/0/type", k, i)))
			return e;
		snprintf(v, sizeof(v), "%d", i);
		wr(v, S "/filters/0/target_idx", k, i);
		wr("N", S "/filters/0/matching", k, i);
#undef S
	}
#undef C
	if (kdamond_on(k))
		return wr("commit", ADMIN "/%d/state", k);
	/* a kdamond that was just turned off may still be winding down: "on"
	 * then fails (EBUSY) for a moment */
	for (int i = 0;; i++) {
		e = wr("on", ADMIN "/%d/state", k);
		if (!e || i == 100)
			return e;
		usleep(20000);
	}
}

/* A kdamond for us: the recorded one if it still exists, else an idle
 * unconfigured one, else a new one if no kdamond runs at all. */
static int pick_kdamond(struct state *s, char *why, size_t len)
{
	long long n = 0;
	if (tier_read_long(ADMIN "/nr_kdamonds", &n))
		n = 0;
	if (s->kd >= 0 && s->kd < n)
		return 0;
	for (int k = 0; k < n; k++) {
		char path[128], buf[16];
		snprintf(path, sizeof(path), ADMIN "/%d/contexts/nr_contexts", k);
		if (!kdamond_on(k) && tier_read_file(path, buf, sizeof(buf)) > 0 && !strcmp(buf, "0")) {
			s->kd = k;
			s->n = 0;
			return 0;
		}
	}
	for (int k = 0; k < n; k++)
		if (kdamond_on(k)) {
			snprintf(why, len, "kdamond %d (not ours) is running; adding one would stop it", k);
			return -1;
		}
	char v[16];
	snprintf(v, sizeof(v), "%lld", n + 1);
	int e = tier_write_file(ADMIN "/nr_kdamonds", v);
	if (e) {
		snprintf(why, len, "cannot add a kdamond: %s", strerror(-e));
		return -1;
	}
	s->kd = (int)n;
	s->n = 0;
	return 0;
}

static int damon_probe(char *why, size_t len)
{
	if (access(ADMIN "/nr_kdamonds", F_OK)) {
		snprintf(why, len, "no DAMON sysfs interface (CONFIG_DAMON_SYSFS)");
		return -1;
	}
	if (access(ADMIN "/nr_kdamonds", W_OK)) {
		snprintf(why, len, "DAMON sysfs needs root");
		return -1;
	}
	return 0;
}

static int query_start(void);
static void damon_stop(void);

/* Ready, not joined: the shared kdamond (and its machine-wide lock) is
 * joined at the first resume, the first period something could move
 * (bg.c).  A short-lived process (a shell, a shim, a compiler pass)
 * never touches it: joined and left by every one of them, the kdamond was
 * reconfigured dozens of times a second under one lock, and a chain of
 * shells each waiting for that lock at start and at exit ran past a
 * 15-minute VM limit (tests/rel, python's test suite behind pyenv's
 * shims). */
static int damon_start(char *why, size_t len)
{
	dm.my_start = tier_proc_start_time(getpid());
	dm.on = true;
	dm.paused = true;
	dm.joined = false;
	if (query_start()) {
		snprintf(why, len, "cannot start the DAMON query thread");
		dm.on = dm.paused = false;
		return -1;
	}
	return 0;
}

static int my_index(void)
{
	struct state s;
	load(&s);
	for (int i = 0; i < s.n; i++)
		if (s.m[i].pid == getpid() && s.m[i].start == dm.my_start)
			return s.kd == dm.kd ? i : -1;
	return -1;
}

/* DAMON answers "update_schemes_tried_regions" only at its next aggregation
 * (100 ms, and about 250 ms under TCG): waited for in the background
 * thread, that stretched every period to 300 ms.  So a query thread of its
 * own asks DAMON and publishes the accessed regions; collect() reports the
 * latest published snapshot, which is DAMON's rate over its last
 * aggregation, the best estimate of the rate now, and asks for the next
 * one: queries follow collections (fewer when the background thread backs
 * off), never more than one DAMON answer at a time. */
#define MAX_REGIONS 4096
#define MAX_SERVED 16 /* a snapshot no newer answer replaced is stale after this */

struct region {
	uintptr_t start;
	size_t len;
	uint32_t weight;
};

static struct {
	pthread_t thread;
	bool running;
	bool stop, want;
	pthread_mutex_t mu; /* guards front, nfront, stop, want */
	pthread_cond_t cv;
	struct region buf[2][MAX_REGIONS];
	struct region *front, *back;
	size_t nfront, nback;
	unsigned served; /* collections that reported the current front */
	unsigned collects;
} q = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* A region of tried_regions: read relative to that directory, which is
 * deep (one path walk per file otherwise, and a query reads three files
 * per region). */
static int region(const char *name, void *arg)
{
	int dfd = *(int *)arg;
	char path[64];
	long long start, end, acc;
	if (name[0] < '0' || name[0] > '9' || q.nback >= MAX_REGIONS)
		return 0; /* total_bytes */
	snprintf(path, sizeof(path), "%s/start", name);
	if (tier_read_long_at(dfd, path, &start))
		return 0;
	snprintf(path, sizeof(path), "%s/end", name);
	if (tier_read_long_at(dfd, path, &end))
		return 0;
	snprintf(path, sizeof(path), "%s/nr_accesses", name);
	if (tier_read_long_at(dfd, path, &acc))
		return 0;
	/* nr_accesses counts the samples (of aggr_us / sample_us) that found
	 * the region accessed: scale it to one access per period */
	if (end > start && acc > 0)
		q.back[q.nback++] = (struct region){(uintptr_t)start, (size_t)(end - start),
						    (uint32_t)(acc * TIER_HEAT_UNIT / dm.samples)};
	return 0;
}

/* One query: fill q.back with our accessed regions.  False when DAMON gave
 * no answer (the caller waits before asking again). */
static bool query(void)
{
	/* exclusive: DAMON answers one command at a time (a second writer gets
	 * EIO), and members may be rewriting the configuration */
	if (lock(LOCK_EX))
		return false;
	q.nback = 0;
	int i = my_index();
	if (i >= 0 && !kdamond_on(dm.kd)) {
		/* it stopped under us (all its targets had exited meanwhile, or a
		 * member's "off" raced our "commit"): start it again */
		struct state s;
		load(&s);
		prune(&s);
		configure(&s);
		save(&s);
		i = my_index();
	}
	bool answered = false;
	char sp[128];
	long long sample_us, aggr_us;
	/* another member may have changed the shared sampling level */
	snprintf(sp, sizeof(sp), ADMIN "/%d/contexts/0/monitoring_attrs/intervals/sample_us", dm.kd);
	bool have = tier_read_long(sp, &sample_us) == 0;
	snprintf(sp, sizeof(sp), ADMIN "/%d/contexts/0/monitoring_attrs/intervals/aggr_us", dm.kd);
	have = have && tier_read_long(sp, &aggr_us) == 0;
	if (i >= 0 && have && sample_us > 0 && aggr_us >= sample_us)
		dm.samples = (int)(aggr_us / sample_us);
	if (i >= 0 && wr("update_schemes_tried_regions", ADMIN "/%d/state", dm.kd) == 0) {
		char path[128];
		snprintf(path, sizeof(path), ADMIN "/%d/contexts/0/schemes/%d/tried_regions", dm.kd, i);
		int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			tier_dir_fd_each(dfd, region, &dfd);
			close(dfd);
			answered = true;
		}
	}
	/* A kdamond that says "on" but has found no accessed region for
	 * EMPTY_RESTART queries may be stuck (seen under TCG: regions never
	 * reported again): restart it.  An idle process pays one restart per
	 * EMPTY_RESTART queries. */
	dm.empty = q.nback ? 0 : dm.empty + 1;
	if (i >= 0 && dm.empty >= EMPTY_RESTART) {
		struct state s;
		dm.empty = 0;
		load(&s);
		prune(&s);
		turn_off(dm.kd);
		configure(&s);
		dm.restarts++;
	}
	unlock();
	return answered;
}

/* The kdamond's CPU time (ns, from schedstat), our share of what it
 * spent since the last reading: it works for every member alike. */
static void kdamond_cpu(void)
{
	char path[64], buf[128];
	long long pid = 0;
	snprintf(path, sizeof(path), ADMIN "/%d/pid", dm.kd);
	if (tier_read_long(path, &pid) || pid <= 0)
		return;
	if (pid != dm.kpid) { /* (re)started: a new baseline */
		dm.kpid = (long)pid;
		dm.kcpu = 0;
	}
	snprintf(path, sizeof(path), "/proc/%ld/schedstat", dm.kpid);
	if (tier_read_file(path, buf, sizeof(buf)) <= 0)
		return;
	uint64_t cpu = strtoull(buf, NULL, 10);
	if (dm.kcpu && cpu > dm.kcpu && dm.members > 0)
		atomic_fetch_add(&dm.kernel_ns, (cpu - dm.kcpu) / (uint64_t)dm.members);
	dm.kcpu = cpu;
}

static void *query_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "tiermalloc-dmon"); /* 15 chars at most */
	pthread_mutex_lock(&q.mu);
	for (;;) {
		while (!q.want && !q.stop)
			pthread_cond_wait(&q.cv, &q.mu);
		if (q.stop)
			break;
		q.want = false;
		pthread_mutex_unlock(&q.mu);
		uint64_t cpu0 = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID);
		bool answered = query();
		/* the background's cost includes this thread's */
		atomic_fetch_add(&dm.thread_ns, tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0);
		kdamond_cpu();
		if (!answered)
			usleep(100000); /* not configured yet, or DAMON busy */
		pthread_mutex_lock(&q.mu);
		if (answered) {
			struct region *t = q.front;
			q.front = q.back;
			q.nfront = q.nback;
			q.back = t;
			q.served = 0;
		}
	}
	pthread_mutex_unlock(&q.mu);
	return NULL;
}

static int query_start(void)
{
	q.front = q.buf[0];
	q.back = q.buf[1];
	q.nfront = q.nback = 0;
	q.served = 0;
	q.stop = false;
	/* the first query waits for the first collection: a query in flight
	 * delays exit until DAMON answers (short programs doubled their run
	 * time in the VM, 236 -> 467 ms for /bin/true as root) */
	q.want = false;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, TIER_THREAD_STACK);
	q.running = pthread_create(&q.thread, &attr, query_main, NULL) == 0;
	pthread_attr_destroy(&attr);
	return q.running ? 0 : -1;
}

static void query_stop(void)
{
	if (!q.running)
		return;
	pthread_mutex_lock(&q.mu);
	q.stop = true;
	pthread_cond_signal(&q.cv);
	pthread_mutex_unlock(&q.mu);
	pthread_join(q.thread, NULL); /* at most one DAMON answer away */
	q.running = false;
}

static void damon_collect(void)
{
	if (dm.paused)
		return;
	pthread_mutex_lock(&q.mu);
	for (size_t r = 0; q.served < MAX_SERVED && r < q.nfront; r++)
		tier_heat_report(TIER_SRC_DAMON, q.front[r].start, q.front[r].len, q.front[r].weight);
	q.served++;
	/* at coarse levels DAMON is asked less often too: reading its answer
	 * (three sysfs files a region) is the query thread's whole cost */
	if (++q.collects % (1u << (dm.level > 2 ? dm.level - 2 : 0)) == 0)
		q.want = true;
	pthread_cond_signal(&q.cv);
	pthread_mutex_unlock(&q.mu);
}

/* Leave the shared kdamond (it stops when nobody is left). */
static void leave(void)
{
	struct state s;
	if (lock(LOCK_EX) == 0) {
		load(&s);
		prune(&s);
		int k = 0;
		for (int i = 0; i < s.n; i++)
			if (s.m[i].pid != getpid())
				s.m[k++] = s.m[i];
		s.n = k;
		configure(&s);
		save(&s);
		unlock();
	}
}

static void damon_stop(void)
{
	if (!dm.on)
		return;
	query_stop();
	if (!dm.paused)
		leave();
	dm.on = dm.paused = false;
}

/* The first join failed: the source says why and stops (a later resume
 * that fails stays paused and tries again). */
static void join_failed(const char *why)
{
	if (dm.joined)
		return;
	query_stop();
	dm.on = dm.paused = false;
	tier_heat_failed(TIER_SRC_DAMON, why[0] ? why : "could not join a kdamond");
}

/* The cheap watch: nothing can move, so nobody needs our accessed bits:
 * leave the kdamond (no sampling, no queries) until resumed. */
static void damon_pause(bool paused)
{
	if (!dm.on || paused == dm.paused)
		return;
	if (paused) {
		leave();
		dm.paused = true;
		return;
	}
	struct state s;
	char why[160] = "";
	if (lock(LOCK_EX)) {
		char dir[TIER_RUNDIR_PATH];
		if (tier_rundir_shared(dir, sizeof(dir)) < 0)
			snprintf(why, sizeof(why), "no runtime directory for its lock (/run/tiermalloc, "
						   "/dev/shm/tiermalloc-0 both unusable; verbose:true says why)");
		else
			snprintf(why, sizeof(why), "cannot lock %s/damon.lock: %s", dir, strerror(errno));
		join_failed(why);
		return;
	}
	load(&s);
	prune(&s);
	if (pick_kdamond(&s, why, sizeof(why)) == 0) {
		if (s.n < MAX_MEMBERS)
			s.m[s.n++] = (struct member){getpid(), dm.my_start, dm.level};
		int e = configure(&s);
		if (e == 0) {
			dm.kd = s.kd;
			dm.paused = false;
			dm.joined = true;
		} else {
			snprintf(why, sizeof(why), "configuring kdamond %d: %s (vaddr monitoring unavailable?)", s.kd,
				 strerror(-e));
			s.n--;
			configure(&s);
		}
		save(&s);
	}
	unlock();
	if (dm.paused)
		join_failed(why);
}

/* Budget steps: a coarser sampling level for this member. */
static bool damon_adjust(int dir)
{
	int level = dm.level + (dir < 0 ? 1 : -1);
	if (dm.on && dm.paused && !dm.joined && level >= 0 && level < LEVELS) {
		dm.level = level; /* not joined yet: the level it will join at */
		return true;
	}
	if (!dm.on || dm.paused || level < 0 || level >= LEVELS)
		return false;
	struct state s;
	if (lock(LOCK_EX))
		return false;
	load(&s);
	prune(&s);
	bool found = false;
	for (int i = 0; i < s.n; i++)
		if (s.m[i].pid == getpid() && s.m[i].start == dm.my_start) {
			s.m[i].level = level;
			found = true;
		}
	if (found && configure(&s) == 0) {
		dm.level = level;
		save(&s);
	}
	unlock();
	return found && dm.level == level;
}

static uint64_t damon_cost(int kind)
{
	if (kind == TIER_COST_THREAD)
		return atomic_load(&dm.thread_ns);
	if (kind == TIER_COST_KERNEL)
		return atomic_load(&dm.kernel_ns);
	return 0;
}

/* The parent stays registered; the child only drops its copy of the lock
 * descriptor (flock locks belong to the open file, shared with the parent). */
static void damon_forget(void)
{
	/* the query thread was the parent's; it may have held q.mu at fork */
	q.running = false;
	q.nfront = 0;
	pthread_mutex_init(&q.mu, NULL);
	pthread_cond_init(&q.cv, NULL);
	if (dm.lockfd >= 0)
		close(dm.lockfd);
	dm.lockfd = -1;
	dm.on = dm.paused = dm.joined = false;
}

const struct tier_heat_ops tier_heat_damon = {
	.name = "damon",
	.probe = damon_probe,
	.start = damon_start,
	.collect = damon_collect,
	.stop = damon_stop,
	.forget = damon_forget,
	.adjust = damon_adjust,
	.levels = LEVELS,
	.pause = damon_pause,
	.cost_ns = damon_cost,
	.sees_reads = true,
};
