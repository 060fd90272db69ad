/* The re-entry pool (src/sigpool.c) on its own: geometry, alignment, reuse,
 * exhaustion, frees from other threads, and re-entry from a signal handler
 * that interrupts the pool itself. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "../tap.h"
#include "sigpool.h"

/* 4 KiB per class: classes 16 B .. 4 KiB hold 256 .. 1 blocks, larger none */
static struct tier_sigpool small;

static size_t total_blocks(void)
{
	size_t n = 0;
	for (unsigned c = 0; c < TIER_SIGPOOL_CLASSES; c++)
		if (c + TIER_SIGPOOL_MIN_SHIFT <= 12)
			n += (size_t)1 << (12 - c - TIER_SIGPOOL_MIN_SHIFT);
	return n;
}

static void geometry(void)
{
	tier_sigpool_init(&small, 12);
	int local;
	ok(!tier_sigpool_owns(&small, NULL) && !tier_sigpool_owns(&small, &local) &&
		   !tier_sigpool_owns(&small, &small),
	   "before the first block nothing is owned (NULL, stack, data)");
	void *a = tier_sigpool_alloc(&small, 0, 0), *b = tier_sigpool_alloc(&small, 0, 0);
	ok(a && b && a != b && tier_sigpool_owns(&small, a) && tier_sigpool_owns(&small, b),
	   "size 0 twice: two distinct blocks of the pool");
	ok(tier_sigpool_usable(&small, a) == 16 && (uintptr_t)a % 16 == 0, "a 16-byte class, 16-aligned");
	ok(!tier_sigpool_owns(&small, (char *)atomic_load(&small.base) + small.span) &&
		   tier_sigpool_owns(&small, (char *)atomic_load(&small.base) + small.span - 1),
	   "owns() covers exactly [base, base + span)");
	tier_sigpool_free(&small, a);
	tier_sigpool_free(&small, b);

	int bad = 0, n = 0;
	for (size_t size = 0; size <= 4096; size = size * 3 / 2 + 1)
		for (size_t al = 0; al <= 4096; al = al ? al * 2 : 16) {
			unsigned char *p = tier_sigpool_alloc(&small, size, al);
			n++;
			size_t u = p ? tier_sigpool_usable(&small, p) : 0;
			if (!p || (al && (uintptr_t)p % al) || (uintptr_t)p % 16 || u < size || u < al) {
				bad++;
				continue;
			}
			memset(p, 0xa5, size);
			tier_sigpool_free(&small, p);
		}
	ok(bad == 0, "%d size/alignment pairs up to 4 KiB: aligned, usable >= size (%d wrong)", n, bad);
	ok(atomic_load(&small.in_use) == 0, "all freed: 0 bytes in use (%zu)", atomic_load(&small.in_use));

	errno = 0;
	ok(!tier_sigpool_alloc(&small, 4097, 0) && errno == ENOMEM, "more than the largest class: ENOMEM");
	errno = 0;
	ok(!tier_sigpool_alloc(&small, 16, 8192) && errno == ENOMEM, "an alignment no class holds: ENOMEM");
	errno = 0;
	ok(!tier_sigpool_alloc(&small, (size_t)1 << 21, 0) && errno == ENOMEM,
	   "more than 1 MiB: ENOMEM");
}

static void reuse_and_exhaustion(void)
{
	tier_sigpool_init(&small, 12);
	char *a = tier_sigpool_alloc(&small, 100, 0);
	tier_sigpool_free(&small, a);
	char *b = tier_sigpool_alloc(&small, 128, 0);
	ok(a && b == a, "a freed block is served again for its class");
	tier_sigpool_free(&small, b + 16);
	ok(atomic_load(&small.in_use) == 128, "a pointer inside a block is not taken as a free (%zu in use)",
	   atomic_load(&small.in_use));
	tier_sigpool_free(&small, b);

	/* 16-byte requests use every class in turn once the smaller ones are full */
	size_t want = total_blocks(), got = 0;
	static void *blocks[4096];
	uint64_t failed0 = atomic_load(&small.failed);
	errno = 0;
	for (;;) {
		void *p = tier_sigpool_alloc(&small, 16, 0);
		if (!p)
			break;
		memset(p, (int)(got & 0xff), 16);
		blocks[got++] = p;
	}
	ok(got == want && errno == ENOMEM, "exhaustion after %zu blocks (all %zu, every class): ENOMEM", got,
	   want);
	ok(atomic_load(&small.failed) == failed0 + 1, "the refusal is counted");
	ok(atomic_load(&small.in_use) == 9 * 4096, "in use: every 4 KiB region (%zu bytes)",
	   atomic_load(&small.in_use));
	size_t wrong = 0;
	for (size_t i = 0; i < got; i++)
		for (int k = 0; k < 16; k++)
			wrong += ((unsigned char *)blocks[i])[k] != (unsigned char)(i & 0xff);
	ok(wrong == 0, "no two blocks overlap (%zu bytes overwritten)", wrong);
	for (size_t i = 0; i < got; i++)
		tier_sigpool_free(&small, blocks[i]);
	ok(atomic_load(&small.in_use) == 0, "all returned");
	void *again = tier_sigpool_alloc(&small, 4096, 4096);
	ok(again && (uintptr_t)again % 4096 == 0, "after the frees the pool serves again");
	tier_sigpool_free(&small, again);
}

/* ------------------------------------------------------ threads, cross frees */
static struct tier_sigpool big;
static void *_Atomic mailbox[64];
static _Atomic long corrupt, cross;

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ULL;
	return x ^ (x >> 29);
}

/* A block starts with its size and a stamp; the rest repeats the stamp. */
static void *take(struct tier_sigpool *sp, uint64_t stamp, size_t size)
{
	uint64_t *p = tier_sigpool_alloc(sp, size, 0);
	if (!p)
		return NULL;
	size_t n = size / 8;
	p[0] = n;
	for (size_t i = 1; i < n; i++)
		p[i] = stamp;
	return p;
}

static void give(struct tier_sigpool *sp, uint64_t *p)
{
	for (size_t i = 1; i < p[0]; i++)
		if (p[i] != p[1]) {
			atomic_fetch_add(&corrupt, 1);
			break;
		}
	tier_sigpool_free(sp, p);
}

static void *worker(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg, r = id;
	void *mine[32] = {0};
	for (int it = 0; it < 200000; it++) {
		r = mix(r + 1);
		int slot = (int)(r % 32);
		if (mine[slot])
			give(&big, mine[slot]);
		size_t size = 16 + (size_t)(r >> 40) % 3000;
		mine[slot] = take(&big, r, size & ~(size_t)7);
		if (it % 8 == 0 && mine[slot]) { /* hand one to whichever thread looks next */
			void *old = atomic_exchange(&mailbox[r % 64], mine[slot]);
			mine[slot] = NULL;
			if (old) {
				give(&big, old);
				atomic_fetch_add(&cross, 1);
			}
		}
	}
	for (int i = 0; i < 32; i++)
		if (mine[i])
			give(&big, mine[i]);
	return NULL;
}

static void threads(void)
{
	tier_sigpool_init(&big, TIER_SIGPOOL_REGION_SHIFT);
	pthread_t t[4];
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 64; i++) {
		void *p = atomic_exchange(&mailbox[i], NULL);
		if (p)
			give(&big, p);
	}
	ok(atomic_load(&corrupt) == 0, "4 threads, 800000 allocations and frees: no block shared (%ld corrupt)",
	   atomic_load(&corrupt));
	ok(atomic_load(&cross) > 1000, "%ld blocks freed by another thread", atomic_load(&cross));
	ok(atomic_load(&big.in_use) == 0 && atomic_load(&big.served) == atomic_load(&big.frees),
	   "all returned: served %llu, freed %llu, %zu bytes in use",
	   (unsigned long long)atomic_load(&big.served), (unsigned long long)atomic_load(&big.frees),
	   atomic_load(&big.in_use));
}

/* ------------------------------------------- a handler that interrupts it */
static _Atomic long handled, handler_fail;

static void on_alarm(int sig)
{
	(void)sig;
	int saved = errno;
	uint64_t s = mix((uint64_t)atomic_load(&handled));
	void *a = take(&big, s, 16 + s % 512 * 8), *b = take(&big, s + 1, 4096);
	if (!a || !b)
		atomic_fetch_add(&handler_fail, 1);
	if (a)
		give(&big, a);
	if (b)
		give(&big, b);
	atomic_fetch_add(&handled, 1);
	errno = saved;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void handler(void)
{
	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 500}, {0, 500}};
	setitimer(ITIMER_REAL, &it, NULL);
	uint64_t r = 7, loops = 0;
	void *mine[16] = {0};
	for (double end = now() + 1.0; now() < end || atomic_load(&handled) < 50; loops++) {
		r = mix(r);
		int slot = (int)(r % 16);
		if (mine[slot])
			give(&big, mine[slot]);
		mine[slot] = take(&big, r, 16 + (r >> 50) % 256 * 8);
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	for (int i = 0; i < 16; i++)
		if (mine[i])
			give(&big, mine[i]);
	ok(atomic_load(&handled) >= 50 && atomic_load(&handler_fail) == 0 && atomic_load(&corrupt) == 0,
	   "a 2 kHz handler allocating from the pool it interrupted: %ld handled, %ld failed, "
	   "%ld corrupt, %llu loops",
	   atomic_load(&handled), atomic_load(&handler_fail), atomic_load(&corrupt),
	   (unsigned long long)loops);
	ok(atomic_load(&big.in_use) == 0, "all returned (%zu bytes in use)", atomic_load(&big.in_use));
}

int main(void)
{
	geometry();
	reuse_and_exhaustion();
	threads();
	handler();
	return done();
}
