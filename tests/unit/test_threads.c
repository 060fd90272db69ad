/* A multi-threaded alloc/free storm: threads come and go, blocks of all
 * sizes are freed by other threads, every block's pattern is checked, and
 * the registry must mirror jemalloc's extents exactly afterwards. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "../tap.h"
#include "tiermalloc.h"

#define THREADS 6
#define ROUNDS 4
#define OPS 30000
#define QCAP 4096

struct msg {
	unsigned char *p;
	size_t n;
};

/* One mailbox per thread: others drop blocks in, the owner frees them. */
static struct box {
	pthread_mutex_t lock;
	struct msg q[QCAP];
	int n;
} boxes[THREADS];

static _Atomic long bad_bytes, cross_frees, allocs;

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fill(unsigned char *p, size_t n)
{
	unsigned char v = (unsigned char)((uintptr_t)p >> 4 ^ n);
	size_t step = n > 4096 ? 509 : 1;
	for (size_t i = 0; i < n; i += step)
		p[i] = v;
	p[n - 1] = v;
}

static void check_free(struct msg m)
{
	unsigned char v = (unsigned char)((uintptr_t)m.p >> 4 ^ m.n);
	size_t step = m.n > 4096 ? 509 : 1;
	for (size_t i = 0; i < m.n; i += step)
		if (m.p[i] != v)
			atomic_fetch_add(&bad_bytes, 1);
	if (m.p[m.n - 1] != v)
		atomic_fetch_add(&bad_bytes, 1);
	free(m.p);
}

static void drain(int self)
{
	struct box *b = &boxes[self];
	pthread_mutex_lock(&b->lock);
	int n = b->n;
	struct msg local[QCAP];
	memcpy(local, b->q, (size_t)n * sizeof(struct msg));
	b->n = 0;
	pthread_mutex_unlock(&b->lock);
	for (int i = 0; i < n; i++)
		check_free(local[i]);
	atomic_fetch_add(&cross_frees, n);
}

static void *worker(void *arg)
{
	int self = (int)(intptr_t)arg;
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(self + 1);
	struct msg live[256] = {{0}};
	for (int op = 0; op < OPS; op++) {
		int slot = (int)(rng(&s) % 256);
		if (live[slot].p) {
			if (rng(&s) & 1) { /* hand it to another thread */
				struct box *b = &boxes[rng(&s) % THREADS];
				pthread_mutex_lock(&b->lock);
				if (b->n < QCAP) {
					b->q[b->n++] = live[slot];
					live[slot].p = NULL;
				}
				pthread_mutex_unlock(&b->lock);
			}
			if (live[slot].p) {
				check_free(live[slot]);
				live[slot].p = NULL;
			}
		}
		uint64_t r = rng(&s) % 1000;
		size_t n = r < 900 ? 1 + rng(&s) % 512           /* small */
			   : r < 990 ? 4096 + rng(&s) % (256 << 10) /* large */
				     : (1 + rng(&s) % 12) << 20;    /* huge */
		live[slot].p = (r & 1) ? malloc(n) : calloc(1, n);
		live[slot].n = n;
		if (live[slot].p) {
			fill(live[slot].p, n);
			atomic_fetch_add(&allocs, 1);
		}
		if (r % 7 == 0 && live[slot].p) { /* grow by realloc */
			size_t m = n * 2 + 1;
			unsigned char *q = realloc(live[slot].p, m);
			if (q) {
				unsigned char v = (unsigned char)((uintptr_t)live[slot].p >> 4 ^ n);
				if (q[n - 1] != v)
					atomic_fetch_add(&bad_bytes, 1);
				live[slot].p = q;
				live[slot].n = m;
				fill(q, m);
			}
		}
		if ((op & 255) == 0)
			drain(self);
	}
	for (int i = 0; i < 256; i++)
		if (live[i].p)
			check_free(live[i]);
	drain(self);
	return NULL;
}

int main(int argc, char **argv)
{
	(void)argc;
	/* these check the hooks: on a one-tier host they are off by default */
	tap_rerun_with(argv, "TIERMALLOC_CONF", "always_hook:true");
	for (int i = 0; i < THREADS; i++)
		pthread_mutex_init(&boxes[i].lock, NULL);
	for (int round = 0; round < ROUNDS; round++) {
		pthread_t th[THREADS];
		for (int i = 0; i < THREADS; i++)
			pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
		for (int i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
		for (int i = 0; i < THREADS; i++)
			drain(i);
	}
	ok(atomic_load(&allocs) > THREADS * ROUNDS * OPS / 2, "%ld allocations", atomic_load(&allocs));
	ok(atomic_load(&cross_frees) > 1000, "%ld blocks freed by another thread",
	   atomic_load(&cross_frees));
	ok(atomic_load(&bad_bytes) == 0, "no corrupted bytes (%ld)", atomic_load(&bad_bytes));
	size_t bad = 1, ext = 0, len = sizeof(size_t);
	tier_mallctl("debug.check", &bad, &len, NULL, 0);
	tier_mallctl("stats.extents", &ext, &len, NULL, 0);
	ok(bad == 0, "registry exact after the storm (%zu inconsistencies, %zu extents)", bad, ext);
	return done();
}
