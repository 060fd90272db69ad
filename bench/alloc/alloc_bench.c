/* Allocator workloads for bench/alloc/run.py.  Plain malloc/free calls, so
 * the allocator is chosen by LD_PRELOAD.  Prints one line:
 *   <workload> <seconds> <peak RSS KiB> <checksum>
 * The checksum depends only on the workload, so a wrong allocator result
 * shows up as a mismatch between allocators. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include "../common.h"

/* Keep `window` live blocks; replace a random one each step.  Sizes are
 * uniform in [lo, hi]; the first and last 64 bytes are written and read. */
static uint64_t churn(uint64_t seed, long steps, int window, size_t lo, size_t hi)
{
	unsigned char **live = calloc((size_t)window, sizeof(*live));
	size_t *len = calloc((size_t)window, sizeof(*len));
	uint64_t s = seed, sum = 0;
	for (long i = 0; i < steps; i++) {
		int k = (int)(rng(&s) % (uint64_t)window);
		if (live[k]) {
			sum += live[k][0] + live[k][len[k] - 1];
			free(live[k]);
		}
		size_t n = lo + rng(&s) % (hi - lo + 1);
		live[k] = malloc(n);
		len[k] = n;
		memset(live[k], (int)(i & 0xff), n < 64 ? n : 64);
		live[k][n - 1] = (unsigned char)i;
	}
	for (int k = 0; k < window; k++)
		free(live[k]);
	free(live);
	free(len);
	return sum;
}

struct targ {
	uint64_t seed, sum;
	long steps;
	int window;
	size_t lo, hi;
};

static void *churn_thread(void *p)
{
	struct targ *a = p;
	a->sum = churn(a->seed, a->steps, a->window, a->lo, a->hi);
	return NULL;
}

static uint64_t parallel_churn(int threads, long steps, int window, size_t lo, size_t hi)
{
	pthread_t th[16];
	struct targ a[16];
	uint64_t sum = 0;
	for (int i = 0; i < threads; i++) {
		a[i] = (struct targ){.seed = 0x1234567ull * (uint64_t)(i + 1), .steps = steps,
				     .window = window, .lo = lo, .hi = hi};
		pthread_create(&th[i], NULL, churn_thread, &a[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		sum += a[i].sum;
	}
	return sum;
}

/* Producer/consumer: every block allocated by one thread is freed by the
 * other.  Blocks travel in batches through a mutex-protected queue. */
#define BATCH 256
#define QMAX 64
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned char **q[QMAX];
	int n;
	bool done;
} xq = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, false};

static void *producer(void *p)
{
	long batches = (long)(intptr_t)p;
	uint64_t s = 99;
	for (long i = 0; i < batches; i++) {
		unsigned char **b = malloc(BATCH * sizeof(*b));
		for (int k = 0; k < BATCH; k++) {
			size_t sz = 16 + rng(&s) % 2048;
			b[k] = malloc(sz);
			memset(b[k], (int)(sz & 0xff), sz < 64 ? sz : 64);
		}
		pthread_mutex_lock(&xq.lock);
		while (xq.n == QMAX)
			pthread_cond_wait(&xq.cond, &xq.lock);
		xq.q[xq.n++] = b;
		pthread_cond_broadcast(&xq.cond);
		pthread_mutex_unlock(&xq.lock);
	}
	pthread_mutex_lock(&xq.lock);
	xq.done = true;
	pthread_cond_broadcast(&xq.cond);
	pthread_mutex_unlock(&xq.lock);
	return NULL;
}

static uint64_t xsum;

static void *consumer(void *p)
{
	(void)p;
	for (;;) {
		pthread_mutex_lock(&xq.lock);
		while (xq.n == 0 && !xq.done)
			pthread_cond_wait(&xq.cond, &xq.lock);
		if (xq.n == 0) {
			pthread_mutex_unlock(&xq.lock);
			return NULL;
		}
		unsigned char **b = xq.q[--xq.n];
		pthread_cond_broadcast(&xq.cond);
		pthread_mutex_unlock(&xq.lock);
		for (int k = 0; k < BATCH; k++) {
			xsum += b[k][0];
			free(b[k]);
		}
		free(b);
	}
}

static uint64_t cross_thread(long batches)
{
	pthread_t a, b;
	pthread_create(&b, NULL, consumer, NULL);
	pthread_create(&a, NULL, producer, (void *)(intptr_t)batches);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return xsum;
}

/* Growing buffers the way a string builder or vector does. */
static uint64_t realloc_growth(long rounds)
{
	uint64_t sum = 0, s = 5;
	for (long r = 0; r < rounds; r++) {
		size_t cap = 16, n = 0, target = 1000 + rng(&s) % 2000000;
		unsigned char *b = malloc(cap);
		while (n < target) {
			size_t add = 1 + rng(&s) % 200;
			if (n + add > cap) {
				cap = cap * 3 / 2 + add;
				b = realloc(b, cap);
			}
			memset(b + n, (int)add, add);
			n += add;
		}
		sum += b[n / 2];
		free(b);
	}
	return sum;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s small|medium|large|mt-small|mt-medium|cross-thread|realloc\n",
			argv[0]);
		return 2;
	}
	const char *w = argv[1];
	double t0 = now();
	uint64_t sum;
	/* live sets of tens to hundreds of MiB, as in a server's heap */
	if (!strcmp(w, "small"))
		sum = churn(1, 20000000, 400000, 8, 256);
	else if (!strcmp(w, "medium"))
		sum = churn(2, 3000000, 8192, 512, 32768);
	else if (!strcmp(w, "large"))
		sum = churn(3, 100000, 96, 65536, 4 << 20);
	else if (!strcmp(w, "mt-small"))
		sum = parallel_churn(2, 10000000, 200000, 8, 256);
	else if (!strcmp(w, "mt-medium"))
		sum = parallel_churn(2, 1500000, 4096, 512, 32768);
	else if (!strcmp(w, "cross-thread"))
		sum = cross_thread(20000);
	else if (!strcmp(w, "realloc"))
		sum = realloc_growth(1500);
	else {
		fprintf(stderr, "unknown workload %s\n", w);
		return 2;
	}
	double t = now() - t0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("%s %.4f %ld %llu\n", w, t, ru.ru_maxrss, (unsigned long long)sum);
	return 0;
}
