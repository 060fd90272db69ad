#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ledger.h"
#include "sysfs.h"
#include "tier.h"

#define LD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

void tier_ledger_name(const char *ident, char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)ident; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	snprintf(name, len, "job-%016llx.ledger", (unsigned long long)h);
}

const char *tier_ledger_check(const struct tier_ledger *l, const char *ident, unsigned uid)
{
	if (__atomic_load_n(&l->magic, __ATOMIC_ACQUIRE) != TIER_LEDGER_MAGIC)
		return "wrong magic (not a tiermalloc ledger, or corrupt)";
	if (l->version != TIER_LEDGER_VERSION)
		return "wrong version (written by another tiermalloc)";
	if (l->size != sizeof(*l) || l->nslots != TIER_LEDGER_SLOTS || l->nbuckets != TIER_JOB_BUCKETS)
		return "wrong layout";
	if (l->uid != uid)
		return "made for another user";
	if (strncmp(l->ident, ident, sizeof(l->ident)) || !memchr(l->ident, '\0', sizeof(l->ident)))
		return "belongs to another job";
	return NULL;
}

static int refuse(char *why, size_t wlen, const char *fmt, const char *a)
{
	snprintf(why, wlen, fmt, a);
	return -1;
}

int tier_ledger_open(int dirfd, const char *dir, const char *ident, bool create,
                     struct tier_ledger_map *m, char *why, size_t wlen)
{
	char name[64];
	tier_ledger_name(ident, name, sizeof(name));
	snprintf(m->path, sizeof(m->path), "%s/%s", dir, name);
	m->l = NULL;
	if (strlen(ident) >= TIER_LEDGER_IDENT)
		return refuse(why, wlen, "%s", "job identity too long");
	bool made = false;
	int fd = openat(dirfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT && create) {
		fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		made = fd >= 0;
		if (fd < 0 && errno == EEXIST) /* another member made it first */
			fd = openat(dirfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	}
	if (fd < 0) {
		if (errno == ELOOP)
			return refuse(why, wlen, "%s", "it is a symlink");
		return refuse(why, wlen, "%s", strerror(errno));
	}
	struct stat st;
	unsigned uid = (unsigned)geteuid();
	if (made && (fchmod(fd, 0600) < 0 || ftruncate(fd, (off_t)sizeof(struct tier_ledger)) < 0)) {
		int e = errno;
		unlinkat(dirfd, name, 0);
		close(fd);
		return refuse(why, wlen, "%s", strerror(e));
	}
	const char *bad = NULL;
	/* a member that made it a moment ago may not have sized it yet
	 * (O_EXCL create, then fchmod and ftruncate): give it that moment,
	 * or two members starting together would refuse each other */
	for (int i = 0; !made && i < 50 && fstat(fd, &st) == 0 && st.st_size == 0; i++) {
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
	}
	if (fstat(fd, &st) < 0)
		bad = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		bad = "not a regular file";
	else if (st.st_uid != uid)
		bad = "owned by another user";
	else if ((st.st_mode & 07777) != 0600)
		bad = "mode is not 0600";
	else if (st.st_nlink != 1)
		bad = "has other links";
	else if (st.st_size != (off_t)sizeof(struct tier_ledger))
		bad = "wrong size";
	if (bad) {
		close(fd);
		return refuse(why, wlen, "%s", bad);
	}
	void *p = mmap(NULL, sizeof(struct tier_ledger), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (p == MAP_FAILED)
		return refuse(why, wlen, "%s", strerror(e));
	struct tier_ledger *l = p;
	if (made) {
		l->version = TIER_LEDGER_VERSION;
		l->size = sizeof(*l);
		l->nslots = TIER_LEDGER_SLOTS;
		l->nbuckets = TIER_JOB_BUCKETS;
		l->uid = uid;
		snprintf(l->ident, sizeof(l->ident), "%s", ident);
		__atomic_store_n(&l->magic, TIER_LEDGER_MAGIC, __ATOMIC_RELEASE);
	}
	/* a member that is creating it right now: give it a moment */
	for (int i = 0; i < 50 && !__atomic_load_n(&l->magic, __ATOMIC_ACQUIRE); i++) {
		bool blank = !l->version && !l->size && !l->ident[0];
		if (!blank)
			break;
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
	}
	bad = tier_ledger_check(l, ident, uid);
	if (bad) {
		munmap(p, sizeof(*l));
		return refuse(why, wlen, "%s", bad);
	}
	m->l = l;
	return 0;
}

void tier_ledger_close(struct tier_ledger_map *m)
{
	if (m->l)
		munmap(m->l, sizeof(*m->l));
	m->l = NULL;
}

int tier_ledger_claim(struct tier_ledger *l, long pid, uint64_t start)
{
	for (int i = 0; i < TIER_LEDGER_SLOTS; i++) {
		struct tier_ledger_slot *s = &l->slot[i];
		uint64_t zero = 0;
		if (!__atomic_compare_exchange_n(&s->owner, &zero, (uint64_t)pid, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		/* a fresh slot: no publication yet, no request left over */
		uint64_t q = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		ST(&s->seq, q | 1);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		memset(&s->pub, 0, sizeof(s->pub)); /* plain: seq is odd */
		s->pub.start = start;
		s->pub.pidns = tier_pidns(0);
		s->pub.updated_ns = tier_clock_ns(CLOCK_BOOTTIME);
		__atomic_store_n(&s->seq, (q | 1) + 1, __ATOMIC_RELEASE);
		uint64_t r = __atomic_load_n(&s->req_seq, __ATOMIC_ACQUIRE) & ~1ull;
		ST(&s->done_moved, 0);
		__atomic_store_n(&s->done_seq, r, __ATOMIC_RELEASE);
		return i;
	}
	return -1;
}

void tier_ledger_release(struct tier_ledger *l, int i, long pid)
{
	if (i < 0 || i >= TIER_LEDGER_SLOTS)
		return;
	uint64_t want = (uint64_t)pid;
	__atomic_compare_exchange_n(&l->slot[i].owner, &want, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

void tier_ledger_publish(struct tier_ledger_slot *s, const struct tier_ledger_pub *p)
{
	uint64_t q = __atomic_load_n(&s->seq, __ATOMIC_RELAXED) | 1;
	ST(&s->seq, q);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	const uint64_t *src = (const uint64_t *)p;
	uint64_t *dst = (uint64_t *)&s->pub;
	for (size_t k = 0; k < sizeof(*p) / 8; k++)
		ST(&dst[k], src[k]);
	ST(&s->pub.pidns, tier_pidns(0));
	__atomic_store_n(&s->seq, q + 1, __ATOMIC_RELEASE);
}

bool tier_ledger_read(const struct tier_ledger_slot *s, long *pid, struct tier_ledger_pub *p)
{
	for (int tries = 0; tries < 100; tries++) {
		uint64_t owner = __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE);
		if (!owner)
			return false;
		uint64_t q = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		if (q & 1) {
			sched_yield();
			continue;
		}
		const uint64_t *src = (const uint64_t *)&s->pub;
		uint64_t *dst = (uint64_t *)p;
		for (size_t k = 0; k < sizeof(*p) / 8; k++)
			dst[k] = LD(&src[k]);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (LD(&s->seq) == q && LD(&s->owner) == owner) {
			*pid = (long)owner;
			return p->start != 0;
		}
	}
	return false;
}

bool tier_ledger_same_ns(const struct tier_ledger_pub *p)
{
	/* 0: published where /proc/self/ns could not be read */
	return !p->pidns || p->pidns == tier_pidns(0);
}

bool tier_ledger_alive(long pid, const struct tier_ledger_pub *p, uint64_t (*start_of)(long pid))
{
	if (!tier_ledger_same_ns(p))
		return tier_clock_ns(CLOCK_BOOTTIME) - p->updated_ns < TIER_LEDGER_FOREIGN_NS;
	uint64_t now = pid > 0 ? start_of(pid) : 0;
	/* start 0: claimed, not published yet; alive while the pid is */
	return now != 0 && (p->start == 0 || now == p->start);
}

int tier_ledger_reap(struct tier_ledger *l, long self, uint64_t (*start_of)(long pid))
{
	int n = 0;
	for (int i = 0; i < TIER_LEDGER_SLOTS; i++) {
		struct tier_ledger_slot *s = &l->slot[i];
		uint64_t owner = __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE);
		if (!owner)
			continue;
		/* unlocked reads: a torn one errs on alive or is judged again
		 * within a second */
		struct tier_ledger_pub p = {.start = LD(&s->pub.start), .updated_ns = LD(&s->pub.updated_ns),
					    .pidns = LD(&s->pub.pidns)};
		bool same = tier_ledger_same_ns(&p);
		if ((long)owner == self && same)
			continue;
		if (tier_ledger_alive((long)owner, &p, start_of))
			continue;
		/* only the owner we judged: a new one is not freed */
		if (__atomic_compare_exchange_n(&s->owner, &owner, 0, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			n++;
	}
	return n;
}

uint64_t tier_ledger_request(struct tier_ledger_slot *s, uint32_t kind, uint64_t bytes)
{
	for (;;) {
		uint64_t q = __atomic_load_n(&s->req_seq, __ATOMIC_ACQUIRE);
		if (q & 1) { /* another request is being written */
			sched_yield();
			continue;
		}
		if (!__atomic_compare_exchange_n(&s->req_seq, &q, q + 1, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		ST(&s->req_kind, kind);
		ST(&s->req_bytes, bytes);
		__atomic_store_n(&s->req_seq, q + 2, __ATOMIC_RELEASE);
		return q + 2;
	}
}

bool tier_ledger_pending(struct tier_ledger_slot *s, uint32_t *kind, uint64_t *bytes, uint64_t *seq)
{
	uint64_t q = __atomic_load_n(&s->req_seq, __ATOMIC_ACQUIRE);
	if ((q & 1) || q == __atomic_load_n(&s->done_seq, __ATOMIC_ACQUIRE))
		return false;
	*kind = (uint32_t)LD(&s->req_kind);
	*bytes = LD(&s->req_bytes);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (LD(&s->req_seq) != q)
		return false;
	*seq = q;
	return true;
}

void tier_ledger_done(struct tier_ledger_slot *s, uint64_t seq, uint64_t moved)
{
	ST(&s->done_moved, moved);
	__atomic_store_n(&s->done_seq, seq, __ATOMIC_RELEASE);
}

uint64_t tier_ledger_start_of(long pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (pid <= 0 || tier_read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	const char *p = strrchr(buf, ')'); /* comm may hold spaces and ')' */
	if (!p || p[1] != ' ')
		return 0;
	/* a zombie holds no memory: its parent has not reaped it yet */
	if (p[2] == 'Z' || p[2] == 'X' || p[2] == 'x')
		return 0;
	return tier_proc_start_time(pid);
}
