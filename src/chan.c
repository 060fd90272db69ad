/* The control channel, process side (protocol in chan.h).  Everything
 * here runs on the background thread between periods, with no lock of
 * ours held: a request is served as if a thread of the program had called
 * tier_mallctl.  Nothing here runs in a hook or a signal handler. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define TIER_CHAN_PROCESS
#include "../include/tiermalloc.h"
#include "bg.h"
#include "chan.h"
#include "ctl.h"
#include "knobs.h"
#include "topology.h"
#include "migrate.h"
#include "monitor.h"
#include "place.h"
#include "registry.h"
#include "rundir.h"
#include "sysfs.h"
#include "tiering.h"

TIER_BOOT_DATA static struct tier_chan *ch;
TIER_BOOT_DATA static pid_t owner;           /* the process that made ch (not a forked child) */
static char name[96];
static int fd_ = -1;          /* kept open: fstat each period (see tier_chan_tick) */
static dev_t dev_;
static ino_t ino_;
static bool given_up;
/* rates: the counters about a second ago */
static uint64_t rate_t, rate_prom, rate_dem;

/* /proc/PID/stat field 22 (start time in clock ticks since boot): a pid
 * reused by another process has another start time. */

/* Channels of processes that are gone (SIGKILL leaves them behind). */
static void sweep(int dir)
{
	int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *e;
	/* bounded: thousands of live channels must not make a start slow;
	 * the command's top cleans the rest */
	int budget = 256;
	unsigned long long me = tier_pidns(0);
	while (budget-- > 0 && (e = readdir(d))) {
		long pid;
		unsigned long long st, ns;
		if (tier_chan_name_parse(e->d_name, &pid, &st, &ns))
			continue;
		/* a pid means something only in its own namespace: another's
		 * channels (a shared runtime directory) are left to it */
		if ((ns && ns != me) || pid == getpid())
			continue;
		if (tier_proc_start_time(pid) != st) /* dead, or the pid now belongs to another process */
			unlinkat(dir, e->d_name, 0);
	}
	closedir(d);
}

static void create(void)
{
	char path[TIER_RUNDIR_PATH];
	int dir = tier_rundir(path, sizeof(path));
	if (dir < 0) {
		given_up = true;
		if (tier_settings.verbose)
			tier_log("control channel off: no runtime directory");
		return;
	}
	sweep(dir);
	long pid = getpid();
	unsigned long long st = tier_proc_start_time(pid), ns = tier_pidns(0);
	if (ns)
		snprintf(name, sizeof(name), "%ld-%llu-%llu" TIER_CHAN_SUFFIX, pid, st, ns);
	else /* no /proc/self/ns: the name of version 1 */
		snprintf(name, sizeof(name), "%ld-%llu" TIER_CHAN_SUFFIX, pid, st);
	/* an existing file of this name is ours: left by this very process
	 * before an exec (a shell that execs its program, both preloaded).
	 * One of the right size is kept and cleared through the mapping: a
	 * command may have it mapped, and truncating it would turn the
	 * command's next read into SIGBUS. */
	int fd = openat(dir, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	struct stat sb;
	bool reuse = false, fine = fd >= 0 && fstat(fd, &sb) == 0;
	if (fine)
		reuse = sb.st_size == (off_t)TIER_CHAN_FILE_SIZE;
	if (!fine || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() || fchmod(fd, 0600) < 0 ||
	    (!reuse && (ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)TIER_CHAN_FILE_SIZE) < 0))) {
		if (tier_settings.verbose)
			tier_log("control channel off: %s/%s: %s", path, name, strerror(errno));
		if (fd >= 0)
			close(fd);
		given_up = true;
		return;
	}
	void *p = mmap(NULL, TIER_CHAN_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		unlinkat(dir, name, 0);
		given_up = true;
		return;
	}
	fd_ = fd;
	dev_ = sb.st_dev;
	ino_ = sb.st_ino;
	struct tier_chan *c = p;
	if (reuse) {
		/* not a channel while it is cleared: a reader checks the magic */
		__atomic_store_n(&c->magic, 0, __ATOMIC_RELEASE);
		memset((char *)p + sizeof(c->magic), 0, TIER_CHAN_FILE_SIZE - sizeof(c->magic));
	}
	c->version = TIER_CHAN_VERSION;
	c->size = (uint32_t)TIER_CHAN_FILE_SIZE;
	c->pid = (int32_t)pid;
	c->uid = (uint32_t)geteuid();
	c->start = st;
	c->pidns = ns;
	atomic_store(&c->state, TIER_CHAN_FREE);
	atomic_store(&c->state_ns, tier_clock_ns(CLOCK_MONOTONIC));
	/* the magic last: a reader that sees it sees the rest */
	atomic_thread_fence(memory_order_release);
	c->magic = TIER_CHAN_MAGIC;
	ch = c;
	owner = (pid_t)pid;
	if (tier_settings.verbose)
		tier_log("control channel %s/%s", path, name);
}

/* The monitor's per-tier heat histograms, coarsened; returns the share of
 * the measured heat (pages x heat) held by tier 0: what the fast tier's
 * hit ratio would be if accesses went where the heat says (-1: nothing
 * measured). */
static double heat_read(struct tier_chan_snap *s)
{
	double mass[TIER_MAX_TIERS] = {0}, all = 0;
	tier_balance_lock();
	for (int t = 0; t < tier_topo.ntiers && t < TIER_CHAN_TIERS; t++) {
		const struct tier_hist *h = tier_monitor_hist(t);
		if (!h)
			break;
		for (int k = 0; k < TIER_HIST_BUCKETS; k++) {
			/* TIER_HIST_STEPS buckets per doubling: group by doubling */
			int g = k ? 1 + (k - 1) / TIER_HIST_STEPS : 0;
			s->heat_pages[t][g < TIER_CHAN_HEAT_GROUPS ? g : TIER_CHAN_HEAT_GROUPS - 1] += h->pages[k];
			if (k)
				mass[t] += (double)h->pages[k] * tier_hist_mid(k);
		}
		all += mass[t];
	}
	tier_balance_unlock();
	return all > 0 ? mass[0] / all : -1.0;
}

static void publish(void)
{
	struct tier_chan_snap s;
	memset(&s, 0, sizeof(s));
	s.time_ns = tier_clock_ns(CLOCK_MONOTONIC);
	s.started_ns = atomic_load(&tier_bg_stats.started_ns);
	s.periods = atomic_load(&tier_bg_stats.periods);
	s.period_ms = tier_settings.period_ms;
	s.ntiers = (uint32_t)tier_topo.ntiers;
	s.active = atomic_load(&tier_place.active);
	s.fast_limit = atomic_load(&tier_place.fast_limit);
	for (int t = 0; t < tier_topo.ntiers && t < TIER_CHAN_TIERS; t++) {
		s.placed[t] = atomic_load(&tier_place_stats.used[t]);
		s.committed[t] = atomic_load(&tier_place_stats.committed[t]);
		snprintf(s.nodes[t], sizeof(s.nodes[t]), "%s", tier_topo.tier[t].nodes_str);
	}
	s.mapped = atomic_load(&tier_reg_stats.mapped);
	s.promoted_bytes = atomic_load(&tier_migrate_stats.promoted_bytes);
	s.demoted_bytes = atomic_load(&tier_migrate_stats.demoted_bytes);
	s.promoted_blocks = atomic_load(&tier_migrate_stats.promoted_blocks);
	s.demoted_blocks = atomic_load(&tier_migrate_stats.demoted_blocks);
	if (!rate_t) {
		rate_t = s.time_ns;
		rate_prom = s.promoted_bytes;
		rate_dem = s.demoted_bytes;
	}
	double dt = (double)(s.time_ns - rate_t) / 1e9;
	static double pbps, dbps;
	if (dt >= 1.0) {
		pbps = (double)(s.promoted_bytes - rate_prom) / dt;
		dbps = (double)(s.demoted_bytes - rate_dem) / dt;
		rate_t = s.time_ns;
		rate_prom = s.promoted_bytes;
		rate_dem = s.demoted_bytes;
	}
	s.promote_bps = pbps;
	s.demote_bps = dbps;
	s.bg_cpu_ns = atomic_load(&tier_bg_stats.cpu_ns);
	s.bg_kernel_ns = atomic_load(&tier_bg_stats.kernel_ns);
	s.bg_fault_ns = atomic_load(&tier_bg_stats.fault_ns);
	s.bg_share = atomic_load(&tier_bg_stats.share);
	s.hit = heat_read(&s);

	/* seqlock: odd while the copy is torn */
	uint32_t q = atomic_load_explicit(&ch->seq, memory_order_relaxed);
	atomic_store_explicit(&ch->seq, q + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	memcpy(&ch->snap, &s, sizeof(s));
	atomic_store_explicit(&ch->seq, q + 2, memory_order_release);
}

struct sink {
	char *buf;
	size_t cap, n;
	bool truncated;
};

static void sink_put(void *ctx, const char *s)
{
	struct sink *k = ctx;
	size_t len = strlen(s);
	if (k->n + len >= k->cap) {
		len = k->cap - 1 - k->n;
		k->truncated = true;
	}
	memcpy(k->buf + k->n, s, len);
	k->n += len;
	k->buf[k->n] = '\0';
}

/* "NAME rw|r TYPE", and for stats " json:PATH" (the same value in the
 * JSON stats) */
static void list_one(void *ctx, const char *n, enum tier_ctl_type t, bool w, const char *json)
{
	char line[240];
	snprintf(line, sizeof(line), "%s %s %s%s%s\n", n, w ? "rw" : "r", tier_ctl_type_name(t),
		 json ? " json:" : "", json ? json : "");
	sink_put(ctx, line);
}

/* Blocks from index `from` (in registration order): one line each. */
static uint32_t heat_page(struct sink *k, uint32_t from)
{
	uint32_t idx = 0, next = 0;
	uint64_t now = atomic_load(&tier_bg_stats.periods);
	double per_s = tier_settings.period_ms / 1000.0;
	tier_balance_lock();
	rcu_read_lock();
	struct tier_mapping *m;
	tier_registry_for_each(m)
	{
		if (m->gone)
			continue;
		if (idx + m->nblocks <= from) {
			idx += m->nblocks;
			continue;
		}
		for (uint32_t b = 0; b < m->nblocks; b++, idx++) {
			if (idx < from)
				continue;
			struct tier_block *blk = &m->blocks[b];
			int tier = TIER_BS_TIER(atomic_load(&blk->state));
			if (tier < 0)
				continue;
			if (k->cap - k->n < 128) {
				next = idx;
				goto out;
			}
			char ago[32];
			if (blk->moved_epoch && blk->moved_epoch <= now)
				snprintf(ago, sizeof(ago), "%.1f", (double)(now - blk->moved_epoch) * per_s);
			else
				snprintf(ago, sizeof(ago), "-");
			uintptr_t a = tier_block_addr(m, b);
			k->n += (size_t)snprintf(k->buf + k->n, k->cap - k->n, "0x%lx 0x%lx %d %.4f %s\n",
						 (unsigned long)a, (unsigned long)(a + TIER_BLOCK), tier,
						 (double)blk->heat, ago);
		}
	}
out:
	rcu_read_unlock();
	tier_balance_unlock();
	return next;
}

#define REFUSE(...)                                                                  \
	do {                                                                         \
		status = EINVAL;                                                     \
		snprintf(ch->reply, TIER_CHAN_REPLY_MAX, "EINVAL: " __VA_ARGS__);    \
		goto answer;                                                         \
	} while (0)

static void serve(void)
{
	uint32_t st = atomic_load_explicit(&ch->state, memory_order_acquire);
	uint64_t now = tier_clock_ns(CLOCK_MONOTONIC);
	if (st == TIER_CHAN_CLAIMED || st == TIER_CHAN_ANSWERED) {
		/* a client that died holding the slot */
		uint64_t since = atomic_load(&ch->state_ns);
		if (now > since + TIER_CHAN_STALE_NS &&
		    atomic_compare_exchange_strong(&ch->state, &st, TIER_CHAN_FREE))
			atomic_store(&ch->state_ns, now);
		return;
	}
	if (st != TIER_CHAN_SUBMITTED)
		return;
	/* one copy of what the client wrote: it cannot change under us */
	uint32_t kind = ch->kind, arg = ch->arg, len = ch->req_len, id = ch->req_id;
	char req[TIER_CHAN_REQ_MAX];
	int status = 0;
	uint32_t next = 0;
	struct sink k = {ch->reply, TIER_CHAN_REPLY_MAX, 0, false};
	ch->reply[0] = '\0';
	if (len >= TIER_CHAN_REQ_MAX)
		REFUSE("request of %u bytes refused: at most %d", len, TIER_CHAN_REQ_MAX - 1);
	memcpy(req, ch->req, len);
	req[len] = '\0';
	if (strlen(req) != len)
		REFUSE("malformed request: a NUL inside");
	switch (kind) {
	case TIER_REQ_CTL:
		status = tier_ctl_text(req, ch->reply, TIER_CHAN_REPLY_MAX);
		break;
	case TIER_REQ_LIST:
		tier_ctl_names(list_one, &k);
		break;
	case TIER_REQ_STATS:
		if (arg > 1)
			REFUSE("stats: arg %u (0 text, 1 JSON)", arg);
		tier_stats_print(sink_put, &k, arg ? "J" : "");
		break;
	case TIER_REQ_HEAT:
		next = heat_page(&k, arg);
		break;
	default:
		REFUSE("unknown request kind %u", kind);
	}
	if (k.truncated)
		status = E2BIG;
answer:
	ch->status = status;
	ch->ans_id = id;
	ch->reply_len = (uint32_t)strnlen(ch->reply, TIER_CHAN_REPLY_MAX);
	ch->next = next;
	atomic_store(&ch->state_ns, tier_clock_ns(CLOCK_MONOTONIC));
	atomic_store_explicit(&ch->state, TIER_CHAN_ANSWERED, memory_order_release);
}

/* Drop the mapping (not the file). */
static void drop(void)
{
	if (ch)
		munmap(ch, TIER_CHAN_FILE_SIZE);
	ch = NULL;
	if (fd_ >= 0)
		close(fd_);
	fd_ = -1;
}

void tier_chan_tick(void)
{
	if (ch && fd_ >= 0) {
		/* a file truncated under us would turn our next write into
		 * SIGBUS, and one removed (by hand) hides us from the command:
		 * either way, make a fresh one */
		struct stat sb;
		if (fstat(fd_, &sb) < 0 || sb.st_dev != dev_ || sb.st_ino != ino_) {
			/* the program closed our descriptor (daemons close them
			 * all): the number is not ours any more, the mapping is */
			fd_ = -1;
		} else if (sb.st_size < (off_t)TIER_CHAN_FILE_SIZE || sb.st_nlink == 0) {
			if (sb.st_nlink)
				unlinkat(tier_rundir(NULL, 0), name, 0);
			drop();
		}
	}
	if (!ch) {
		if (given_up || !(tier_settings.ctl || atomic_load(&tier_place.active)))
			return;
		create();
		if (!ch)
			return;
	}
	publish();
	serve();
}

TIER_STARTUP void tier_chan_close(void)
{
	if (!ch)
		return;
	if (owner == getpid())
		unlinkat(tier_rundir(NULL, 0), name, 0);
	drop();
}

void tier_chan_after_fork_child(void)
{
	/* the mapping is shared with the parent: drop it, keep the file */
	drop();
	given_up = false;
	rate_t = 0;
}
