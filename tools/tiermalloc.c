/* tiermalloc: run a program with tiermalloc, and see and tune running ones
 * through their control channels (src/chan.h).  Linked with the knob table
 * (knobs.c, conf.c), the runtime directory (rundir.c) and topology
 * discovery, never with the allocator itself. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "chan.h"
#include "knobs.h"
#include "ledger.h"
#include "metrics.h"
#include "rundir.h"
#include "sysfs.h"
#include "topology.h"

#ifndef TIERMALLOC_LIBDIR
#define TIERMALLOC_LIBDIR "/usr/local/lib"
#endif
#ifndef TIERMALLOC_VERSION_STR
#define TIERMALLOC_VERSION_STR "?"
#endif


static const char *prog = "tiermalloc";

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(code);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tiermalloc [run] [--fast-limit SIZE] [-c CONF] [--stats[=json]] [--] PROGRAM [ARGS...]\n"
		"       tiermalloc stat PID [--json] [--watch SECONDS [--count N]]\n"
		"       tiermalloc stat --openmetrics [--textfile PATH] [--watch SECONDS] [PID...]\n"
		"       tiermalloc top [--once] [--interval SECONDS]\n"
		"       tiermalloc ctl PID NAME[=VALUE]...   |   tiermalloc ctl PID --list\n"
		"       tiermalloc topology\n"
		"       tiermalloc heat PID\n"
		"       tiermalloc knobs [--markdown | --man]\n"
		"       tiermalloc job [list]   |   tiermalloc job show JOB [--watch SECONDS [--interval SECONDS]]\n"
		"       tiermalloc job wait JOB SLOTS [--timeout SECONDS]\n"
		"       tiermalloc job demote|promote JOB SIZE [--pid PID] [--wait SECONDS]\n"
		"       tiermalloc --version | --help\n"
		"\n"
		"run (the default): PROGRAM with libtiermalloc preloaded.\n"
		"  -c CONF          TIERMALLOC_CONF for the program (key:value,...), checked first\n"
		"  --fast-limit S   the fast-tier budget (fast_limit:S)\n"
		"  -s, --stats      print statistics when the program exits; -j, --stats=json as JSON\n"
		"stat: one process's statistics (tiers, placed and resident bytes, heat, moves\n"
		"  and their rates, background CPU, sources); --openmetrics: of PIDs (default:\n"
		"  every tiermalloc process of this user) in Prometheus's text format, to stdout\n"
		"  or, written atomically, to a file for the node exporter's textfile collector\n"
		"  (--textfile, rewritten every --watch SECONDS).  top: every tiermalloc process of\n"
		"  this user, one line each.  ctl: read or set tier_mallctl names of a running\n"
		"  process (same names, types and errors: tier.fast_limit=2G, tier.demote=512M).\n"
		"  topology: the tiers this machine offers and why.  heat: every 2 MiB block of\n"
		"  a process (address range, tier, heat, seconds since it last moved).\n"
		"job: the job ledgers of this user (processes sharing job_fast_limit): list\n"
		"  them, show one's members, or demote/promote SIZE of the job's coldest fast\n"
		"  (hottest slow) memory now, split over its members by their heat (--pid: one\n"
		"  member only); wait until SLOTS slots are held (members joined, the dead\n"
		"  freed).  JOB: a job name (job:NAME), or a cgroup path such as /a/b.\n"
		"TIERMALLOC_LIB overrides the library path; TIERMALLOC_CONF's run_dir is honoured.\n"
		"\nknobs (TIERMALLOC_CONF key:value; rw ones also as tier.<key> with ctl):\n");
	for (size_t i = 0; i < tier_nknobs; i++)
		fprintf(f, "  %-18s %-3s %s (default %s)\n", tier_knobs[i].name, tier_knobs[i].runtime ? "rw" : "",
			tier_knobs[i].doc, tier_knob_default_words(&tier_knobs[i]));
}

static void bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(tiermalloc --help for usage)\n");
	exit(2);
}

/* ------------------------------------------------------------ run */

static void conf_err(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "%s: %s\n", prog, line);
}

static int cmd_run(int argc, char **argv)
{
	const char *conf = getenv("TIERMALLOC_CONF");
	char extra[512] = "";
	int i = 0;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-c")) {
			if (i + 1 >= argc)
				bad_usage("-c needs CONF", NULL);
			conf = argv[++i];
		} else if (!strcmp(a, "--fast-limit") || !strncmp(a, "--fast-limit=", 13)) {
			const char *v = a[12] == '=' ? a + 13 : (i + 1 < argc ? argv[++i] : NULL);
			size_t z;
			if (!v || tier_size_parse(v, strlen(v), &z))
				bad_usage("--fast-limit needs a size such as 512M or 4G, not \"%s\"", v ? v : "");
			size_t n = strlen(extra);
			snprintf(extra + n, sizeof(extra) - n, "%sfast_limit:%s", n ? "," : "", v);
		} else if (!strcmp(a, "-s") || !strcmp(a, "--stats") || !strcmp(a, "-j") ||
			   !strcmp(a, "--stats=json") || !strcmp(a, "--stats=text")) {
			size_t n = strlen(extra);
			bool json = !strcmp(a, "-j") || !strcmp(a, "--stats=json");
			snprintf(extra + n, sizeof(extra) - n, "%sstats_print:%s", n ? "," : "", json ? "json" : "true");
		} else if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (a[0] == '-') {
			bad_usage("unknown option %s", a);
		} else {
			break;
		}
	}
	if (i >= argc)
		bad_usage("no PROGRAM to run%s", "");
	char full[4096];
	snprintf(full, sizeof(full), "%s%s%s", conf ? conf : "", conf && *conf && *extra ? "," : "", extra);
	if (conf || *extra) {
		/* the library would ignore a bad string as a whole: say so now */
		struct tier_settings s;
		tier_settings_default(&s);
		if (tier_conf_parse(full, &s, conf_err, NULL))
			die(2, "not running %s with a configuration that would be ignored", argv[i]);
		setenv("TIERMALLOC_CONF", full, 1);
	}
	const char *lib = getenv("TIERMALLOC_LIB");
	char def[PATH_MAX];
	if (!lib || !*lib) {
		/* the soname: a runtime install (Debian's libtiermalloc0
		 * without the -dev package) has no libtiermalloc.so link */
		snprintf(def, sizeof(def), "%s/libtiermalloc.so.0", TIERMALLOC_LIBDIR);
		lib = def;
	}
	if (access(lib, R_OK))
		die(127, "%s not found (set TIERMALLOC_LIB)", lib);
	const char *old = getenv("LD_PRELOAD");
	char pre[8192];
	snprintf(pre, sizeof(pre), "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "");
	setenv("LD_PRELOAD", pre, 1);
	execvp(argv[i], argv + i);
	die(errno == ENOENT ? 127 : 126, "%s: %s", argv[i], strerror(errno));
}

/* ------------------------------------------------------------ processes */


static void comm_of(long pid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	if (tier_read_file(path, buf, len) <= 0)
		snprintf(buf, len, "?");
	buf[strcspn(buf, "\n")] = '\0';
}

/* Whether /proc/PID/maps mentions `needle`; -1 when unreadable.  The
 * mapping's path into line_out, its address range into range (64 bytes). */
static int maps_has(long pid, const char *needle, char *line_out, size_t len, char *range)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	char line[4096];
	int found = 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle)) {
			found = 1;
			if (range)
				snprintf(range, 64, "%.*s", (int)strcspn(line, " "), line);
			if (line_out) {
				line[strcspn(line, "\n")] = '\0';
				char *p = strchr(line, '/');
				snprintf(line_out, len, "%s", p ? p : "");
			}
			break;
		}
	fclose(f);
	return found;
}

struct chan_ref {
	struct tier_chan *c;
	long pid;    /* as this command sees it */
	long ns_pid; /* as the process sees itself */
	char path[PATH_MAX];
	uint64_t deadline; /* of the request in flight */
	uint32_t id;
};

/* Map a channel file, checked: a regular file of ours, mode 0600-ish, of
 * the right size and magic, naming the process it claims. */
static const char *chan_map(const char *path, long pid, unsigned long long start, unsigned long long ns, bool rw,
			    struct tier_chan **out)
{
	/* /proc/PID/map_files/... is a link to follow; no other path is */
	bool link = !strncmp(path, "/proc/", 6) && strstr(path, "/map_files/");
	int fd = open(path, (rw ? O_RDWR : O_RDONLY) | (link ? 0 : O_NOFOLLOW) | O_CLOEXEC);
	if (fd < 0)
		return strerror(errno);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return "not a regular file";
	}
	if (st.st_uid != geteuid() && geteuid() != 0) {
		close(fd);
		return "owned by another user";
	}
	if (st.st_mode & 077) {
		close(fd);
		return "readable by others: not a channel tiermalloc made";
	}
	if ((size_t)st.st_size < TIER_CHAN_FILE_SIZE) {
		close(fd);
		return "too small";
	}
	void *p = mmap(NULL, TIER_CHAN_FILE_SIZE, PROT_READ | (rw ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return strerror(errno);
	struct tier_chan *c = p;
	atomic_thread_fence(memory_order_acquire);
	if (c->magic != TIER_CHAN_MAGIC || c->version != TIER_CHAN_VERSION || c->pid != pid || c->start != start ||
	    (ns && c->pidns != ns)) {
		munmap(p, TIER_CHAN_FILE_SIZE);
		return "not a channel of this version or of this process";
	}
	*out = c;
	return NULL;
}

static int own_rundir(char *path, size_t len)
{
	return tier_rundir(path, len);
}

/* PID's pid in its own (innermost) pid namespace: the last field of
 * NSpid in /proc/PID/status; PID itself when there is none. */
static long ns_pid_of(long pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	if (tier_read_file(path, buf, sizeof(buf)) <= 0)
		return pid;
	const char *l = strstr(buf, "\nNSpid:");
	if (!l)
		return pid;
	long last = pid, v;
	char *end;
	for (const char *p = l + 8; *p && *p != '\n'; p = end) {
		v = strtol(p, &end, 10);
		if (end == p)
			break;
		last = v;
	}
	return last;
}

/* Whether PID lives in another mount namespace than this command: its
 * files are then reached through /proc/PID/root. */
static bool other_mounts(long pid)
{
	char path[64];
	struct stat a, b;
	snprintf(path, sizeof(path), "/proc/%ld/ns/mnt", pid);
	return stat(path, &a) == 0 && stat("/proc/self/ns/mnt", &b) == 0 && a.st_ino != b.st_ino;
}

/* The channel of PID: found through the process's own mappings (whatever
 * its run_dir), else in our runtime directory.  With `wait`, waits up to
 * 3 s for a process that has tiermalloc loaded but no channel yet.
 * 0, or -1 with the reason in why. */
static int chan_find(long pid, bool wait, struct chan_ref *r, char *why, size_t len)
{
	char proc[64];
	struct stat st;
	snprintf(proc, sizeof(proc), "/proc/%ld", pid);
	if (pid <= 0 || stat(proc, &st) < 0)
		return snprintf(why, len, "%ld: no such process", pid), -1;
	if (st.st_uid != geteuid() && geteuid() != 0)
		return snprintf(why, len, "%ld: belongs to another user (uid %u): refused", pid, (unsigned)st.st_uid), -1;
	unsigned long long start = tier_proc_start_time(pid), ns = tier_pidns(pid);
	/* a process in another pid namespace (a container) named its channel
	 * by its own pid there */
	long nsp = ns_pid_of(pid);
	char suffix[96];
	if (ns)
		snprintf(suffix, sizeof(suffix), "/%ld-%llu-%llu" TIER_CHAN_SUFFIX, nsp, start, ns);
	else
		snprintf(suffix, sizeof(suffix), "/%ld-%llu" TIER_CHAN_SUFFIX, nsp, start);
	r->pid = pid;
	r->ns_pid = nsp;
	for (int tries = 0;; tries++) {
		char seen[PATH_MAX - 64], range[64]; /* room for /proc/PID/root before it */
		int m = maps_has(pid, suffix, seen, sizeof(seen), range);
		if (m < 0)
			return snprintf(why, len, "%ld: cannot read its maps (%s): refused", pid, strerror(errno)), -1;
		if (m == 0) {
			char dir[TIER_RUNDIR_PATH];
			if (own_rundir(dir, sizeof(dir)) >= 0)
				snprintf(r->path, sizeof(r->path), "%s%s", dir, suffix);
		} else if (other_mounts(pid)) {
			/* another mount namespace: maps prints its paths from our
			 * root where it can, else from its own; the mapping itself
			 * is the file (map_files: CAP_SYS_ADMIN), else its path
			 * under the process's root */
			snprintf(r->path, sizeof(r->path), "/proc/%ld/map_files/%s", pid, range);
			if (access(r->path, F_OK))
				snprintf(r->path, sizeof(r->path), "/proc/%ld/root%s", pid, seen);
		} else {
			snprintf(r->path, sizeof(r->path), "%s", seen);
		}
		const char *e = m == 0 && access(r->path, F_OK) ? "none" : chan_map(r->path, nsp, start, ns, true, &r->c);
		if (!e)
			return 0;
		int lib = maps_has(pid, "libtiermalloc", NULL, 0, NULL);
		if (strcmp(e, "none"))
			return snprintf(why, len, "%ld: %s: %s", pid, r->path, e), -1;
		if (lib != 1)
			return snprintf(why, len, "%ld: not a tiermalloc process (libtiermalloc is not loaded)", pid), -1;
		if (!wait || tries >= 30)
			return snprintf(why, len,
					"%ld: no control channel: tiering is off there (TIERMALLOC_CONF=ctl:true "
					"publishes it anyway), or its runtime directory is not usable",
					pid),
			       -1;
		struct timespec ts = {0, 100000000};
		nanosleep(&ts, NULL);
	}
}

static void chan_open(long pid, struct chan_ref *r)
{
	char why[PATH_MAX + 200];
	if (chan_find(pid, true, r, why, sizeof(why)))
		die(1, "%s", why);
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static bool snap_read(const struct tier_chan *c, struct tier_chan_snap *s)
{
	for (int i = 0; i < 1000; i++) {
		uint32_t a = atomic_load_explicit(&c->seq, memory_order_acquire);
		if (a & 1)
			continue;
		memcpy(s, (const void *)&c->snap, sizeof(*s));
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&c->seq, memory_order_relaxed) == a)
			return a != 0;
	}
	return false;
}

static void pause_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

/* One request, in two halves so that a command can ask many processes at
 * once: submit claims the slot and writes the request (EBUSY when another
 * command holds it past the deadline); answer waits for the reply, which
 * goes into a buffer of TIER_CHAN_REPLY_MAX + 1, and returns the status
 * (0 or an errno value; ETIMEDOUT when not answered). */
static int request_submit(struct chan_ref *r, uint32_t kind, uint32_t arg, const char *text, char *reply)
{
	struct tier_chan *c = r->c;
	struct tier_chan_snap s;
	uint64_t period = snap_read(c, &s) ? s.period_ms : 100;
	r->deadline = now_ns() + 3 * period * 1000000ull + 5000000000ull;
	/* a slot held longer than this was left by a client that died (a
	 * request waits up to a period or so for its answer) */
	uint64_t stale = 3 * period * 1000000ull > TIER_CHAN_STALE_NS ? 3 * period * 1000000ull : TIER_CHAN_STALE_NS;
	/* claim the slot */
	for (;;) {
		uint32_t st = atomic_load(&c->state);
		/* never a SUBMITTED one: the process may be serving it right now */
		if (st == TIER_CHAN_FREE ||
		    (st != TIER_CHAN_SUBMITTED && now_ns() > atomic_load(&c->state_ns) + stale)) {
			if (atomic_compare_exchange_strong(&c->state, &st, TIER_CHAN_CLAIMED))
				break;
			continue;
		}
		if (now_ns() > r->deadline) {
			snprintf(reply, 64, "the channel is busy (another tiermalloc command?)");
			return EBUSY;
		}
		pause_ms(5);
	}
	atomic_store(&c->state_ns, now_ns());
	size_t len = strlen(text);
	static uint32_t serial;
	r->id = (uint32_t)getpid() * 2654435761u + (uint32_t)now_ns() + ++serial;
	c->kind = kind;
	c->arg = arg;
	c->req_id = r->id;
	/* an oversized request goes as it is, truncated, with its real length:
	 * the process refuses it and says why */
	c->req_len = (uint32_t)(len > UINT32_MAX ? UINT32_MAX : len);
	memcpy(c->req, text, len < TIER_CHAN_REQ_MAX ? len + 1 : TIER_CHAN_REQ_MAX);
	atomic_store(&c->state_ns, now_ns());
	atomic_store_explicit(&c->state, TIER_CHAN_SUBMITTED, memory_order_release);
	return 0;
}

static int request_answer(struct chan_ref *r, char *reply, uint32_t *next)
{
	struct tier_chan *c = r->c;
	for (;;) {
		if (atomic_load_explicit(&c->state, memory_order_acquire) == TIER_CHAN_ANSWERED && c->ans_id == r->id)
			break;
		/* gone: the process exited, or it exec'd and made its channel
		 * again (our request erased with it) */
		if (now_ns() > r->deadline || tier_proc_start_time(r->pid) != c->start ||
		    __atomic_load_n(&c->req_id, __ATOMIC_ACQUIRE) != r->id) {
			/* the slot stays as it is: the process may still answer, and
			 * the answer is taken over as stale later */
			snprintf(reply, 64, "no answer");
			return ETIMEDOUT;
		}
		pause_ms(2);
	}
	int status = c->status;
	uint32_t n = c->reply_len < TIER_CHAN_REPLY_MAX ? c->reply_len : TIER_CHAN_REPLY_MAX;
	memcpy(reply, c->reply, n);
	reply[n] = '\0';
	if (next)
		*next = c->next;
	atomic_store(&c->state_ns, now_ns());
	atomic_store_explicit(&c->state, TIER_CHAN_FREE, memory_order_release);
	return status;
}

static int request(struct chan_ref *r, uint32_t kind, uint32_t arg, const char *text, char *reply, uint32_t *next)
{
	int e = request_submit(r, kind, arg, text, reply);
	return e ? e : request_answer(r, reply, next);
}

static long parse_pid(const char *s)
{
	char *end;
	long pid = s ? strtol(s, &end, 10) : 0;
	if (!s || !*s || *end || pid <= 0)
		bad_usage("PID expected, not \"%s\"", s ? s : "");
	return pid;
}

static char reply[TIER_CHAN_REPLY_MAX + 1];

/* ------------------------------------------------------------ ctl */

static int cmd_ctl(int argc, char **argv)
{
	if (argc < 2)
		bad_usage("ctl PID NAME[=VALUE]... expected%s", "");
	long pid = parse_pid(argv[0]);
	struct chan_ref r;
	chan_open(pid, &r);
	int rc = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--list") || !strcmp(argv[i], "-l")) {
			int e = request(&r, TIER_REQ_LIST, 0, "", reply, NULL);
			fputs(reply, stdout);
			if (e)
				rc = 1;
			continue;
		}
		int e = request(&r, TIER_REQ_CTL, 0, argv[i], reply, NULL);
		if (e) {
			fprintf(stderr, "%s: %ld: %s\n", prog, pid, reply);
			rc = 1;
		} else {
			printf("%s\n", reply);
		}
	}
	return rc;
}

/* ------------------------------------------------------------ stat */

static void print_summary(long pid, long ns_pid, const struct tier_chan_snap *s)
{
	char comm[64];
	comm_of(pid, comm, sizeof(comm));
	if (ns_pid != pid)
		printf("pid %ld is pid %ld in its own pid namespace\n", pid, ns_pid);
	double up = s->started_ns && s->time_ns > s->started_ns ? (double)(s->time_ns - s->started_ns) / 1e9 : 0;
	printf("pid %ld (%s): tiering %s, %u tiers, fast_limit %.1f MiB, background %.2f%% of a core "
	       "(cpu %.1f ms, kdamond %.1f ms, faults %.1f ms in %.0f s)\n",
	       pid, comm, s->active ? "on" : "off", s->ntiers, (double)s->fast_limit / 1048576.0,
	       s->bg_share * 100.0, (double)s->bg_cpu_ns / 1e6, (double)s->bg_kernel_ns / 1e6,
	       (double)s->bg_fault_ns / 1e6, up);
	for (uint32_t t = 0; t < s->ntiers && t < TIER_CHAN_TIERS; t++)
		printf("  tier %u (nodes %s): placed %.1f MiB, committed %.1f MiB\n", t, s->nodes[t],
		       (double)s->placed[t] / 1048576.0, (double)s->committed[t] / 1048576.0);
	printf("  promoted %.1f MiB (%.2f MiB/s), demoted %.1f MiB (%.2f MiB/s); fast-tier hit estimate %s",
	       (double)s->promoted_bytes / 1048576.0, s->promote_bps / 1048576.0,
	       (double)s->demoted_bytes / 1048576.0, s->demote_bps / 1048576.0, s->hit < 0 ? "-" : "");
	if (s->hit >= 0)
		printf("%.1f%%", s->hit * 100.0);
	printf("\n");
	printf("  heat histogram (MiB by accesses per page per period):\n");
	for (uint32_t t = 0; t < s->ntiers && t < TIER_CHAN_TIERS; t++) {
		printf("    tier %u:", t);
		for (int g = 0; g < TIER_CHAN_HEAT_GROUPS; g++) {
			if (!s->heat_pages[t][g])
				continue;
			if (g == 0)
				printf(" cold %.1f", (double)s->heat_pages[t][g] / 256.0);
			else
				printf(" >=2^%d %.1f", g - 13, (double)s->heat_pages[t][g] / 256.0);
		}
		printf("\n");
	}
}

static int stat_metrics(int argc, char **argv);

static int cmd_stat(int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		if (!strcmp(argv[i], "--openmetrics"))
			return stat_metrics(argc, argv);
	long pid = 0;
	bool json = false;
	double watch = 0;
	long count = -1;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j"))
			json = true;
		else if (!strcmp(argv[i], "--watch") || !strcmp(argv[i], "-w")) {
			char *end;
			watch = i + 1 < argc ? strtod(argv[++i], &end) : 0;
			if (!(watch > 0))
				bad_usage("--watch needs SECONDS%s", "");
		} else if (!strcmp(argv[i], "--count") || !strcmp(argv[i], "-n"))
			count = i + 1 < argc ? atol(argv[++i]) : 0;
		else if (!pid)
			pid = parse_pid(argv[i]);
		else
			bad_usage("unexpected argument %s", argv[i]);
	}
	if (!pid)
		bad_usage("stat PID expected%s", "");
	struct chan_ref r;
	chan_open(pid, &r);
	for (long n = 0;; n++) {
		struct tier_chan_snap s;
		int e = request(&r, TIER_REQ_STATS, json, "", reply, NULL);
		if (e && e != E2BIG) {
			if (tier_proc_start_time(pid) != r.c->start)
				die(1, "%ld: exited", pid);
			die(1, "%ld: %s", pid, reply);
		}
		bool have = snap_read(r.c, &s);
		if (!json && have)
			print_summary(pid, r.ns_pid, &s);
		if (json && have && reply[0] == '{') {
			/* the library's object, with what only the channel knows
			 * (rates over the last second, the hit estimate) beside it */
			printf("{\"pid\":%ld,\"live\":{\"periods\":%llu,\"promote_bytes_per_s\":%.0f,"
			       "\"demote_bytes_per_s\":%.0f,\"hit_estimate\":%.4f,\"bg_share\":%.5f},",
			       pid, (unsigned long long)s.periods, s.promote_bps, s.demote_bps, s.hit, s.bg_share);
			fputs(reply + 1, stdout);
		} else {
			fputs(reply, stdout);
		}
		fflush(stdout);
		if (!watch || (count > 0 && n + 1 >= count))
			break;
		pause_ms((long)(watch * 1000));
	}
	return 0;
}

/* ------------------------------------------------------------ top */

struct top_line {
	long pid;    /* as this command sees it */
	long ns_pid; /* as the process sees itself (another pid namespace) */
	struct tier_chan_snap s;
};

/* This user's processes (root: everyone's) in pid namespaces other than
 * this command's: containers, seen by their pid here. */
struct ns_proc {
	long pid;
	unsigned long long ns;
};

static int other_namespaces(struct ns_proc *out, int max)
{
	unsigned long long me = tier_pidns(0);
	DIR *d = opendir("/proc");
	if (!d || !me) {
		if (d)
			closedir(d);
		return 0;
	}
	int n = 0;
	struct dirent *e;
	while (n < max && (e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (pid <= 0 || *end)
			continue;
		char path[64];
		struct stat st;
		snprintf(path, sizeof(path), "/proc/%ld", pid);
		if (stat(path, &st) || (st.st_uid != geteuid() && geteuid() != 0))
			continue;
		unsigned long long ns = tier_pidns(pid);
		if (ns && ns != me)
			out[n++] = (struct ns_proc){pid, ns};
	}
	closedir(d);
	return n;
}

/* Every live channel: those of our runtime directory (stale ones of our
 * pid namespace removed; another namespace's, in a directory shared with
 * a container, left to it), and those of processes in other pid
 * namespaces, found through their mappings. */
static int scan(struct top_line *out, int max, int *cleaned)
{
	static struct ns_proc others[1024];
	int no = other_namespaces(others, 1024);
	unsigned long long me = tier_pidns(0);
	char dir[TIER_RUNDIR_PATH];
	int n = 0;
	DIR *d = own_rundir(dir, sizeof(dir)) >= 0 ? opendir(dir) : NULL;
	/* the second from clock_gettime, not time(2): time() reads the
	 * tick-updated second, a tick behind at each boundary (0.5% of reads
	 * here), and ctl.sh's check, which waits for "changed 6 s ago" by
	 * date(1)'s clock, then saw top leave the file */
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		long pid;
		unsigned long long st, ns;
		if (tier_chan_name_parse(e->d_name, &pid, &st, &ns) || (ns && ns != me))
			continue;
		char path[PATH_MAX], needle[300];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		snprintf(needle, sizeof(needle), "/%s", e->d_name);
		/* gone: dead, the pid reused (another start time), or no longer
		 * mapped (the process exec'd a program without tiermalloc); a
		 * file made in the last seconds may not be mapped yet */
		struct stat sb;
		bool dead = tier_proc_start_time(pid) != st;
		bool unmapped = !dead && maps_has(pid, needle, NULL, 0, NULL) == 0 && lstat(path, &sb) == 0 &&
				sb.st_ctime + 5 < now.tv_sec;
		if (dead || unmapped) {
			if (lstat(path, &sb) == 0 && sb.st_uid == geteuid() && unlink(path) == 0 && cleaned)
				(*cleaned)++;
			continue;
		}
		struct tier_chan *c;
		if (n >= max || chan_map(path, pid, st, ns, false, &c))
			continue;
		out[n].pid = out[n].ns_pid = pid;
		if (snap_read(c, &out[n].s))
			n++;
		munmap(c, TIER_CHAN_FILE_SIZE);
	}
	if (d)
		closedir(d);
	for (int k = 0; k < no && n < max; k++) {
		struct chan_ref r;
		char why[PATH_MAX + 200];
		if (chan_find(others[k].pid, false, &r, why, sizeof(why)))
			continue; /* not a tiermalloc process, or no channel */
		out[n].pid = others[k].pid;
		out[n].ns_pid = r.ns_pid;
		if (snap_read(r.c, &out[n].s))
			n++;
		munmap(r.c, TIER_CHAN_FILE_SIZE);
	}
	return n;
}

static int cmd_top(int argc, char **argv)
{
	bool once = false;
	double interval = 1.0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--once") || !strcmp(argv[i], "-1"))
			once = true;
		else if ((!strcmp(argv[i], "--interval") || !strcmp(argv[i], "-d")) && i + 1 < argc)
			interval = atof(argv[++i]);
		else
			bad_usage("top: unexpected argument %s", argv[i]);
	}
	if (!(interval > 0))
		interval = 1.0;
	static struct top_line lines[1024];
	for (;;) {
		int cleaned = 0;
		int n = scan(lines, 1024, &cleaned);
		if (!once)
			printf("\033[H\033[J");
		printf("%8s %-16s %10s %10s %10s %6s %9s %9s %6s %8s\n", "PID", "COMMAND", "FAST_MiB", "SLOW_MiB",
		       "LIMIT_MiB", "HIT%", "PROM_MB/s", "DEM_MB/s", "BG%", "NSPID");
		for (int i = 0; i < n; i++) {
			const struct tier_chan_snap *s = &lines[i].s;
			char comm[64], hit[16];
			comm_of(lines[i].pid, comm, sizeof(comm));
			uint64_t slow = 0;
			for (uint32_t t = 1; t < s->ntiers && t < TIER_CHAN_TIERS; t++)
				slow += s->committed[t];
			if (s->hit < 0)
				snprintf(hit, sizeof(hit), "-");
			else
				snprintf(hit, sizeof(hit), "%.1f", s->hit * 100.0);
			char nsp[24] = "-";
			if (lines[i].ns_pid != lines[i].pid)
				snprintf(nsp, sizeof(nsp), "%ld", lines[i].ns_pid);
			printf("%8ld %-16.16s %10.1f %10.1f %10.1f %6s %9.2f %9.2f %6.2f %8s\n", lines[i].pid, comm,
			       (double)s->committed[0] / 1048576.0, (double)slow / 1048576.0,
			       (double)s->fast_limit / 1048576.0, hit, s->promote_bps / 1048576.0,
			       s->demote_bps / 1048576.0, s->bg_share * 100.0, nsp);
		}
		if (cleaned)
			printf("(%d stale channel%s removed)\n", cleaned, cleaned > 1 ? "s" : "");
		fflush(stdout);
		if (once)
			return 0;
		pause_ms((long)(interval * 1000));
	}
}

/* ------------------------------------------------------------ metrics */

/* The metrics of PIDS (all of this user's tiermalloc processes when none
 * are named): every channel asked for the JSON statistics at once, then
 * the answers read.  Processes that cannot be read are named on stderr. */
static int metrics_collect(long *pids, int n, struct tier_metrics_proc *out, int *failed)
{
	static struct chan_ref refs[1024];
	static int sent[1024];
	static struct top_line lines[1024];
	char why[PATH_MAX + 200];
	if (!n) {
		n = scan(lines, 1024, NULL);
		for (int i = 0; i < n; i++)
			pids[i] = lines[i].pid;
	}
	int k = 0;
	for (int i = 0; i < n; i++) {
		sent[i] = -1;
		if (chan_find(pids[i], false, &refs[i], why, sizeof(why))) {
			fprintf(stderr, "%s: %s\n", prog, why);
			(*failed)++;
			continue;
		}
		sent[i] = request_submit(&refs[i], TIER_REQ_STATS, 1, "", reply);
		if (sent[i])
			fprintf(stderr, "%s: %ld: %s (its snapshot only)\n", prog, pids[i], reply);
	}
	for (int i = 0; i < n; i++) {
		if (sent[i] < 0)
			continue;
		struct tier_metrics_proc *p = &out[k];
		memset(p, 0, sizeof(*p));
		p->pid = pids[i];
		p->ns_pid = refs[i].ns_pid != pids[i] ? refs[i].ns_pid : 0;
		comm_of(p->pid, p->comm, sizeof(p->comm));
		int e = sent[i] ? sent[i] : request_answer(&refs[i], reply, NULL);
		if (e && tier_proc_start_time(p->pid) != refs[i].c->start) {
			munmap(refs[i].c, TIER_CHAN_FILE_SIZE);
			continue; /* exited meanwhile: not a failure */
		}
		/* the writer may be descheduled mid-snapshot: a few tries */
		bool have = false;
		for (int t = 0; t < 50 && !(have = snap_read(refs[i].c, &p->snap)); t++)
			pause_ms(2);
		if (!have) {
			fprintf(stderr, "%s: %ld: no snapshot yet\n", prog, p->pid);
			munmap(refs[i].c, TIER_CHAN_FILE_SIZE);
			(*failed)++;
			continue;
		}
		if (!e && tier_metrics_parse(reply, p))
			fprintf(stderr, "%s: %ld: statistics do not parse as JSON (its snapshot only)\n", prog, p->pid);
		else if (e && !sent[i])
			fprintf(stderr, "%s: %ld: %s (its snapshot only)\n", prog, p->pid, reply);
		munmap(refs[i].c, TIER_CHAN_FILE_SIZE);
		k++;
	}
	return k;
}

/* Write the metrics to PATH atomically: a temporary file beside it (not
 * named *.prom, so the textfile collector never reads it), then rename.
 * The signals that stop a watcher (systemd's SIGTERM, ^C, a hang-up) are
 * held until the rename is done, so a stop never leaves the temporary
 * file behind: it takes effect between two writes. */
static void metrics_textfile(const char *path, const struct tier_metrics_proc *procs, int n)
{
	sigset_t stop, old;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	sigprocmask(SIG_BLOCK, &stop, &old);
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", path, (long)getpid()) >= (int)sizeof(tmp))
		die(1, "%s: path too long", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		die(1, "%s: %s", tmp, strerror(errno));
	FILE *f = fdopen(fd, "w");
	if (!f)
		die(1, "%s: %s", tmp, strerror(errno));
	tier_metrics_write(f, procs, n);
	if (fflush(f) || fsync(fd) || ferror(f)) {
		int e = errno;
		fclose(f);
		unlink(tmp);
		die(1, "%s: %s", tmp, strerror(e));
	}
	fclose(f);
	if (rename(tmp, path)) {
		int e = errno;
		unlink(tmp);
		die(1, "%s: %s", path, strerror(e));
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static int stat_metrics(int argc, char **argv)
{
	static long pids[1024];
	static struct tier_metrics_proc procs[1024];
	const char *textfile = NULL;
	double watch = 0;
	int n = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--openmetrics"))
			continue;
		if (!strcmp(argv[i], "--textfile")) {
			if (i + 1 >= argc || !argv[i + 1][0])
				bad_usage("--textfile needs a PATH%s", "");
			textfile = argv[++i];
		} else if (!strcmp(argv[i], "--watch") || !strcmp(argv[i], "-w")) {
			watch = i + 1 < argc ? atof(argv[++i]) : 0;
			if (!(watch > 0))
				bad_usage("--watch needs SECONDS%s", "");
		} else if (n < 1024) {
			pids[n++] = parse_pid(argv[i]);
		} else {
			bad_usage("at most 1024 PIDs, not more (%s)", argv[i]);
		}
	}
	for (;;) {
		int failed = 0;
		long ask[1024];
		memcpy(ask, pids, sizeof(long) * (size_t)n);
		int k = metrics_collect(ask, n, procs, &failed);
		if (textfile)
			metrics_textfile(textfile, procs, k);
		else
			tier_metrics_write(stdout, procs, k);
		fflush(stdout);
		if (!watch)
			return failed ? 1 : 0;
		pause_ms((long)(watch * 1000));
	}
}

/* ------------------------------------------------------------ heat */

static int cmd_heat(int argc, char **argv)
{
	if (argc != 1)
		bad_usage("heat PID expected%s", "");
	long pid = parse_pid(argv[0]);
	struct chan_ref r;
	chan_open(pid, &r);
	printf("# start end tier heat moved_s_ago\n");
	uint32_t from = 0;
	for (int pages = 0; pages < 100000; pages++) {
		uint32_t next = 0;
		if (request(&r, TIER_REQ_HEAT, from, "", reply, &next))
			die(1, "%ld: %s", pid, reply);
		fputs(reply, stdout);
		if (!next)
			break;
		from = next;
	}
	return 0;
}

/* ------------------------------------------------------------ topology */

static int cmd_topology(void)
{
	tier_topology_read(&tier_topo);
	tier_topology_read_cxl(&tier_topo);
	tier_topology_classify(&tier_topo, tier_settings.fast_nodes, tier_settings.slow_nodes);
	if (tier_topo.warning[0])
		printf("warning: %s\n", tier_topo.warning);
	if (tier_topo.ntiers < 2)
		printf("tiering: off: %s\n", tier_topo.why_single);
	else
		printf("tiering: %d tiers, from %s\n", tier_topo.ntiers, tier_topo.method);
	for (int i = 0; i < tier_topo.ntiers; i++) {
		uint64_t total = 0, free_b = 0;
		for (int n = 0; n < TIER_MAX_NODES; n++)
			if (tier_topo.tier[i].nodes >> n & 1) {
				total += tier_topo.node[n].mem_total;
				free_b += tier_topo.node[n].mem_free;
			}
		printf("tier %d: nodes %s, %.0f MiB, %.0f MiB free\n  why: %s\n", i, tier_topo.tier[i].nodes_str,
		       (double)total / 1048576.0, (double)free_b / 1048576.0, tier_topo.tier[i].reason);
	}
	return 0;
}

/* ------------------------------------------------------------ knobs */

static void man_escape(const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\e", stdout);
		else if (*s == '-')
			fputs("\\-", stdout);
		else
			putchar(*s);
	}
}

static int cmd_knobs(int argc, char **argv)
{
	const char *mode = argc > 0 ? argv[0] : "";
	if (!strcmp(mode, "--markdown"))
		printf("| key | default | values | meaning |\n|---|---|---|---|\n");
	for (size_t i = 0; i < tier_nknobs; i++) {
		const struct tier_knob *k = &tier_knobs[i];
		if (!strcmp(mode, "--markdown")) {
			printf("| `%s` | %s | %s | %s", k->name, tier_knob_default_words(k), k->expect, k->doc);
			if (k->runtime)
				printf("; at run time `tier.%s`", k->name);
			printf(" |\n");
		} else if (!strcmp(mode, "--man")) {
			printf(".TP\n.BI %s: value\n", k->name);
			man_escape(k->doc);
			printf(".\nValue: ");
			man_escape(k->expect);
			printf(".\nDefault: ");
			man_escape(tier_knob_default_words(k));
			printf(".\n");
			if (k->runtime)
				printf("Writable at run time as\n.BR tier.%s .\n", k->name);
		} else {
			printf("%s\t%s\t%s\t%s\n", k->name, k->runtime ? "rw" : "r", tier_knob_default_words(k), k->doc);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ job */
static void job_ident(const char *arg, char *ident, size_t len)
{
	if (!strncmp(arg, "name:", 5) || !strncmp(arg, "cgroup:", 7))
		snprintf(ident, len, "%s", arg);
	else if (arg[0] == '/')
		snprintf(ident, len, "cgroup:%s", arg);
	else
		snprintf(ident, len, "name:%s", arg);
}

static int job_dir(char *dir, size_t len)
{
	int fd = own_rundir(dir, len);
	if (fd < 0)
		die(1, "no runtime directory (see \"Runtime directory\" in the README)");
	return fd;
}

static void job_map(const char *ident, struct tier_ledger_map *m)
{
	char dir[TIER_RUNDIR_PATH], why[200];
	int fd = job_dir(dir, sizeof(dir));
	if (tier_ledger_open(fd, dir, ident, false, m, why, sizeof(why))) {
		if (errno == ENOENT && access(m->path, F_OK))
			die(1, "job %s: no such job of this user (no ledger %s)", ident, m->path);
		die(1, "job %s: ledger %s: %s", ident, m->path, why);
	}
}

static uint64_t proc_start(long pid)
{
	return tier_ledger_start_of(pid);
}

/* The live members: slot index, pid and publication. */
struct job_member {
	int slot;
	long pid;
	struct tier_ledger_pub pub;
};

static int job_members(struct tier_ledger *l, struct job_member *out)
{
	int n = 0;
	for (int i = 0; i < TIER_LEDGER_SLOTS; i++) {
		long pid;
		if (!tier_ledger_read(&l->slot[i], &pid, &out[n].pub))
			continue;
		if (!tier_ledger_alive(pid, &out[n].pub, proc_start))
			continue; /* gone; a member frees the slot within a second */
		out[n].slot = i;
		out[n].pid = pid;
		n++;
	}
	return n;
}

static void job_print(const char *ident, struct tier_ledger_map *m)
{
	struct job_member mem[TIER_LEDGER_SLOTS];
	int n = job_members(m->l, mem);
	uint64_t budget = 0, fast = 0;
	for (int i = 0; i < n; i++) {
		if (mem[i].pub.budget && (!budget || mem[i].pub.budget < budget))
			budget = mem[i].pub.budget;
		fast += mem[i].pub.fast_bytes;
	}
	printf("job %s: ledger %s\n", ident, m->path);
	int held = 0;
	for (int i = 0; i < TIER_LEDGER_SLOTS; i++)
		held += __atomic_load_n(&m->l->slot[i].owner, __ATOMIC_ACQUIRE) != 0;
	printf("  members %d, slots held %d, budget %llu bytes (%llu MiB), fast %llu bytes (%llu MiB)\n", n, held,
	       (unsigned long long)budget, (unsigned long long)(budget >> 20), (unsigned long long)fast,
	       (unsigned long long)(fast >> 20));
	for (int i = 0; i < n; i++) {
		char comm[64] = "another pid namespace";
		if (tier_ledger_same_ns(&mem[i].pub))
			comm_of(mem[i].pid, comm, sizeof(comm));
		printf("  pid %ld (%s): fast %llu bytes, share %llu, fast_limit %llu\n", mem[i].pid, comm,
		       (unsigned long long)mem[i].pub.fast_bytes, (unsigned long long)mem[i].pub.share,
		       (unsigned long long)mem[i].pub.limit);
	}
}

static int job_list_one(const char *name, void *arg)
{
	(void)arg;
	size_t n = strlen(name);
	if (strncmp(name, "job-", 4) || n < 11 || strcmp(name + n - 7, ".ledger"))
		return 0;
	char dir[TIER_RUNDIR_PATH], path[TIER_RUNDIR_PATH + 300];
	job_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	/* the identity is inside: read it, then open by it (all checks) */
	struct tier_ledger hdr;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t got = fd >= 0 ? pread(fd, &hdr, offsetof(struct tier_ledger, slot), 0) : -1;
	if (fd >= 0)
		close(fd);
	if (got != (ssize_t)offsetof(struct tier_ledger, slot) || !memchr(hdr.ident, '\0', sizeof(hdr.ident))) {
		printf("%s: unreadable or not a ledger\n", path);
		return 0;
	}
	struct tier_ledger_map m;
	char why[200];
	int dfd = own_rundir(dir, sizeof(dir));
	if (tier_ledger_open(dfd, dir, hdr.ident, false, &m, why, sizeof(why))) {
		printf("%s: refused: %s\n", path, why);
		return 0;
	}
	job_print(hdr.ident, &m);
	tier_ledger_close(&m);
	return 0;
}

static int cmd_job(int argc, char **argv)
{
	const char *sub = argc > 0 ? argv[0] : "list";
	char ident[TIER_LEDGER_IDENT];
	struct tier_ledger_map m;
	if (!strcmp(sub, "list")) {
		if (argc > 1)
			bad_usage("job list: unexpected argument %s", argv[1]);
		char dir[TIER_RUNDIR_PATH];
		job_dir(dir, sizeof(dir));
		if (tier_dir_each(dir, job_list_one, NULL) < 0)
			die(1, "%s: %s", dir, strerror(errno));
		return 0;
	}
	if (!strcmp(sub, "show")) {
		double watch = 0, interval = 1;
		for (int i = 2; i < argc; i++) {
			if ((!strcmp(argv[i], "--watch") || !strcmp(argv[i], "-w")) && i + 1 < argc)
				watch = atof(argv[++i]);
			else if ((!strcmp(argv[i], "--interval") || !strcmp(argv[i], "-d")) && i + 1 < argc)
				interval = atof(argv[++i]);
			else
				bad_usage("job show: unexpected argument %s", argv[i]);
		}
		if (argc < 2 || !(interval > 0) || watch < 0)
			bad_usage("job show JOB [--watch SECONDS [--interval SECONDS]] expected%s", "");
		job_ident(argv[1], ident, sizeof(ident));
		job_map(ident, &m);
		uint64_t until = now_ns() + (uint64_t)(watch * 1e9);
		for (;;) {
			job_print(ident, &m);
			fflush(stdout);
			if (now_ns() >= until)
				break;
			pause_ms((long)(interval * 1000));
		}
		return 0;
	}
	if (!strcmp(sub, "wait")) {
		/* until exactly N slots are held (members joined, or the slots
		 * of the dead freed by the others) */
		if (argc < 3)
			bad_usage("job wait JOB SLOTS [--timeout SECONDS] expected%s", "");
		int want = atoi(argv[2]);
		double timeout = 10;
		if (argc == 5 && !strcmp(argv[3], "--timeout"))
			timeout = atof(argv[4]);
		else if (argc != 3)
			bad_usage("job wait: unexpected argument %s", argv[3]);
		job_ident(argv[1], ident, sizeof(ident));
		uint64_t t0 = now_ns(), until = t0 + (uint64_t)(timeout * 1e9);
		char dir[TIER_RUNDIR_PATH], why[200];
		int fd = job_dir(dir, sizeof(dir));
		while (tier_ledger_open(fd, dir, ident, false, &m, why, sizeof(why))) {
			if (now_ns() >= until)
				die(1, "job %s: no ledger after %.1f s: %s", ident, timeout, why);
			pause_ms(10);
		}
		for (;;) {
			int held = 0;
			for (int i = 0; i < TIER_LEDGER_SLOTS; i++)
				held += __atomic_load_n(&m.l->slot[i].owner, __ATOMIC_ACQUIRE) != 0;
			if (held == want) {
				printf("%d slots held after %.3f s\n", held, (double)(now_ns() - t0) / 1e9);
				return 0;
			}
			if (now_ns() >= until) {
				printf("%d slots held, not %d, after %.1f s\n", held, want, timeout);
				return 1;
			}
			pause_ms(10);
		}
	}
	bool promote = !strcmp(sub, "promote");
	if (!promote && strcmp(sub, "demote"))
		bad_usage("job: unknown command %s (list, show, demote, promote)", sub);
	if (argc < 3)
		bad_usage("job demote|promote JOB SIZE expected%s", "");
	size_t bytes;
	if (tier_size_parse(argv[2], strlen(argv[2]), &bytes) || !bytes)
		bad_usage("job: SIZE such as 64M expected, not \"%s\"", argv[2]);
	long only = 0;
	double wait_s = 10;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--pid") && i + 1 < argc)
			only = parse_pid(argv[++i]);
		else if (!strcmp(argv[i], "--wait") && i + 1 < argc)
			wait_s = atof(argv[++i]);
		else
			bad_usage("job: unexpected argument %s", argv[i]);
	}
	job_ident(argv[1], ident, sizeof(ident));
	job_map(ident, &m);
	struct job_member mem[TIER_LEDGER_SLOTS];
	struct tier_job_member h[TIER_LEDGER_SLOTS];
	uint64_t part[TIER_LEDGER_SLOTS], seq[TIER_LEDGER_SLOTS];
	int n = job_members(m.l, mem), k = 0;
	if (only) {
		for (int i = 0; i < n; i++)
			if (mem[i].pid == only)
				mem[k++] = mem[i];
		if (!k)
			die(1, "job %s: pid %ld is not a member", ident, only);
		n = k;
	}
	if (!n)
		die(1, "job %s: no live members", ident);
	int minb = 0;
	for (int i = 0; i < n; i++) {
		h[i] = mem[i].pub.hist;
		if ((int)mem[i].pub.min_bucket > minb)
			minb = (int)mem[i].pub.min_bucket;
	}
	uint64_t pages = (bytes + 4095) >> 12;
	uint64_t placed = tier_job_split(h, n, pages, promote, minb, part);
	if (only && placed < pages)
		part[0] = pages; /* one member: let it move what it finds */
	for (int i = 0; i < n; i++)
		seq[i] = part[i] ? tier_ledger_request(&m.l->slot[mem[i].slot], promote ? TIER_LEDGER_PROMOTE : TIER_LEDGER_DEMOTE,
						       part[i] << 12) : 0;
	/* wait for the members to apply their parts (each within a period) */
	uint64_t until = now_ns() + (uint64_t)(wait_s * 1e9), total = 0;
	int pending = 0;
	for (int i = 0; i < n; i++) {
		if (!seq[i])
			continue;
		struct tier_ledger_slot *s = &m.l->slot[mem[i].slot];
		while (__atomic_load_n(&s->done_seq, __ATOMIC_ACQUIRE) != seq[i] && now_ns() < until &&
		       __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE) == (uint64_t)mem[i].pid)
			pause_ms(20);
		if (__atomic_load_n(&s->done_seq, __ATOMIC_ACQUIRE) == seq[i]) {
			uint64_t moved = __atomic_load_n(&s->done_moved, __ATOMIC_RELAXED);
			total += moved;
			printf("pid %ld: asked %llu bytes, moved %llu\n", mem[i].pid,
			       (unsigned long long)(part[i] << 12), (unsigned long long)moved);
		} else {
			printf("pid %ld: asked %llu bytes, no answer\n", mem[i].pid, (unsigned long long)(part[i] << 12));
			pending++;
		}
	}
	printf("%s: asked %zu bytes, the job's histograms placed %llu, moved %llu\n", promote ? "promote" : "demote",
	       bytes, (unsigned long long)(placed << 12), (unsigned long long)total);
	return pending ? 1 : 0;
}

int main(int argc, char **argv)
{
	tier_settings_default(&tier_settings);
	tier_conf_load(&tier_settings);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *c = argv[1];
	if (!strcmp(c, "-h") || !strcmp(c, "--help") || !strcmp(c, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(c, "--version") || !strcmp(c, "-V")) {
		printf("tiermalloc %s\n", TIERMALLOC_VERSION_STR);
		return 0;
	}
	if (!strcmp(c, "run"))
		return cmd_run(argc - 2, argv + 2);
	if (!strcmp(c, "stat"))
		return cmd_stat(argc - 2, argv + 2);
	if (!strcmp(c, "top"))
		return cmd_top(argc - 2, argv + 2);
	if (!strcmp(c, "ctl"))
		return cmd_ctl(argc - 2, argv + 2);
	if (!strcmp(c, "topology"))
		return cmd_topology();
	if (!strcmp(c, "heat"))
		return cmd_heat(argc - 2, argv + 2);
	if (!strcmp(c, "knobs"))
		return cmd_knobs(argc - 2, argv + 2);
	if (!strcmp(c, "job"))
		return cmd_job(argc - 2, argv + 2);
	/* the wrapper stays the default: tiermalloc [-c CONF] [-s] PROGRAM */
	return cmd_run(argc - 1, argv + 1);
}
