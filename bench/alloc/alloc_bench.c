/* Allocator workloads for bench/alloc/run.py.  Plain malloc/free calls, so
 * the allocator is chosen by LD_PRELOAD.  Prints one line:
 *   <workload> <seconds> <peak RSS KiB> <minor faults> <checksum>
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

/* Larson-style server churn: each thread replaces random blocks of a slot
 * array, and after every round the arrays rotate between the threads, so
 * most blocks are freed by a thread other than the one that allocated
 * them, as request buffers in a server handed from thread to thread. */
#define LARSON_T 2
static struct {
	pthread_barrier_t bar;
	unsigned char **slots[LARSON_T];
	long rounds, per_round;
	int nslots;
} lar;

static void *larson_thread(void *p)
{
	int id = (int)(intptr_t)p;
	uint64_t s = 0xabcdefull + (uint64_t)id, sum = 0;
	for (long r = 0; r < lar.rounds; r++) {
		unsigned char **sl = lar.slots[(id + r) % LARSON_T];
		for (long i = 0; i < lar.per_round; i++) {
			int k = (int)(rng(&s) % (uint64_t)lar.nslots);
			if (sl[k]) {
				sum += sl[k][0];
				free(sl[k]);
			}
			size_t n = 16 + rng(&s) % 1009;
			sl[k] = malloc(n);
			sl[k][0] = (unsigned char)n;
			sl[k][n - 1] = 1;
		}
		pthread_barrier_wait(&lar.bar);
	}
	return (void *)(uintptr_t)sum;
}

static uint64_t larson(long rounds, long per_round, int nslots)
{
	pthread_t th[LARSON_T];
	uint64_t sum = 0;
	lar.rounds = rounds;
	lar.per_round = per_round;
	lar.nslots = nslots;
	pthread_barrier_init(&lar.bar, NULL, LARSON_T);
	for (int i = 0; i < LARSON_T; i++)
		lar.slots[i] = calloc((size_t)nslots, sizeof(*lar.slots[i]));
	for (int i = 0; i < LARSON_T; i++)
		pthread_create(&th[i], NULL, larson_thread, (void *)(intptr_t)i);
	for (int i = 0; i < LARSON_T; i++) {
		void *r;
		pthread_join(th[i], &r);
		sum += (uint64_t)(uintptr_t)r;
	}
	for (int i = 0; i < LARSON_T; i++) {
		for (int k = 0; k < nslots; k++)
			free(lar.slots[i][k]);
		free(lar.slots[i]);
	}
	pthread_barrier_destroy(&lar.bar);
	return sum;
}

/* Fragmentation: fill with small blocks of mixed sizes, free seven in
 * eight scattered through the heap, then allocate as many bytes again in
 * larger blocks.  Peak RSS tells how much of the freed space the
 * allocator could reuse for other size classes. */
static uint64_t fragment(long n)
{
	unsigned char **b = malloc((size_t)n * sizeof(*b));
	uint16_t *len = malloc((size_t)n * sizeof(*len));
	uint64_t s = 17, sum = 0;
	size_t freed = 0;
	for (long i = 0; i < n; i++) {
		len[i] = (uint16_t)(16 + rng(&s) % 497);
		b[i] = malloc(len[i]);
		memset(b[i], (int)(len[i] & 0xff), len[i]);
	}
	for (long i = 0; i < n; i++)
		if (i % 8) {
			sum += b[i][len[i] - 1];
			freed += len[i];
			free(b[i]);
			b[i] = NULL;
		}
	long m = (long)(freed / 2048) + 1; /* the freed bytes again, in 2 KiB blocks */
	unsigned char **c = malloc((size_t)m * sizeof(*c));
	for (long i = 0; i < m; i++) {
		c[i] = malloc(2048);
		memset(c[i], (int)i, 2048);
	}
	for (long i = 0; i < m; i++) {
		sum += c[i][i % 2048];
		free(c[i]);
	}
	for (long i = 0; i < n; i++)
		free(b[i]);
	free(b);
	free(c);
	free(len);
	return sum;
}

/* Large-buffer churn: buffers of 5-25 MiB allocated, every page touched,
 * and freed, in a loop by a few threads (issue 11, part 6: where an
 * allocator that returns them to the system at once faults every page
 * again on each reuse). */
struct bigarg {
	long iters;
	uint64_t seed, sum;
};

static void *big_thread(void *p)
{
	struct bigarg *a = p;
	for (long i = 0; i < a->iters; i++) {
		size_t n = (5ul << 20) + rng(&a->seed) % (20ul << 20);
		unsigned char *b = malloc(n);
		for (size_t k = 0; k < n; k += 4096)
			b[k] = (unsigned char)(k >> 12);
		/* bytes written above: the rest of a reused buffer is what
		 * an earlier one left there, which differs by allocator */
		a->sum += b[n / 2 & ~4095ul] + b[(n - 1) & ~4095ul];
		free(b);
	}
	return NULL;
}

static uint64_t big_churn(int threads, long iters)
{
	pthread_t th[8];
	struct bigarg a[8];
	uint64_t sum = 0;
	for (int i = 0; i < threads; i++) {
		a[i] = (struct bigarg){.iters = iters, .seed = 0x5151ull * (uint64_t)(i + 1)};
		pthread_create(&th[i], NULL, big_thread, &a[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		sum += a[i].sum;
	}
	return sum;
}

/* Random large buffers (mimalloc-bench's malloc-large shape): 20 slots;
 * each step allocates a buffer of a random size in [lo, hi], touches every
 * page, and only then frees the one it replaces, so the new buffer cannot
 * take the old one's place. */
static uint64_t big_random(long steps, size_t lo, size_t hi)
{
	enum { SLOTS = 20 };
	unsigned char *slot[SLOTS] = {0};
	size_t len[SLOTS] = {0};
	uint64_t s = 42, sum = 0;
	for (long i = 0; i < steps; i++) {
		int k = (int)(rng(&s) % SLOTS);
		size_t n = lo + rng(&s) % (hi - lo + 1);
		unsigned char *b = malloc(n);
		for (size_t o = 0; o < n; o += 4096)
			b[o] = (unsigned char)i;
		b[n - 1] = (unsigned char)(i >> 8);
		if (slot[k])
			sum += slot[k][0] + slot[k][len[k] - 1];
		free(slot[k]);
		slot[k] = b;
		len[k] = n;
	}
	for (int k = 0; k < SLOTS; k++)
		free(slot[k]);
	return sum;
}

/* rpmalloc's rptest shape: threads in a ring each allocate batches of
 * mixed small and medium blocks, keep some a while, and hand the rest to
 * the next thread, which frees them: most frees are remote, and blocks
 * live across many of the owner's operations. */
#define RP_T 4
#define RP_BATCH 64
#define RP_KEEP 1024
struct rp_box {
	pthread_mutex_t lock;
	unsigned char **q[RP_T * 4];
	int n;
};
static struct rp_box rp_box[RP_T];
static long sc_rp_rounds;

static void *rp_thread(void *p)
{
	int id = (int)(intptr_t)p;
	long rounds = sc_rp_rounds;
	uint64_t s = 0x77ull * (uint64_t)(id + 1), sum = 0;
	unsigned char *keep[RP_KEEP] = {0};
	struct rp_box *out = &rp_box[(id + 1) % RP_T], *in = &rp_box[id];
	for (long r = 0; r < rounds; r++) {
		unsigned char **b = malloc(RP_BATCH * sizeof(*b));
		for (int k = 0; k < RP_BATCH; k++) {
			/* mostly small, some up to 16 KiB */
			size_t n = rng(&s) % 8 ? 16 + rng(&s) % 496 : 512 + rng(&s) % 16384;
			b[k] = malloc(n);
			b[k][0] = (unsigned char)n;
			int j = (int)(rng(&s) % RP_KEEP);
			if (rng(&s) % 4 == 0) { /* kept a while: swapped with an older one */
				unsigned char *t = keep[j];
				keep[j] = b[k];
				b[k] = t;
			}
		}
		pthread_mutex_lock(&out->lock);
		bool sent = out->n < (int)(sizeof(out->q) / sizeof(out->q[0]));
		if (sent)
			out->q[out->n++] = b;
		pthread_mutex_unlock(&out->lock);
		if (!sent) { /* next thread is behind: free our own batch */
			for (int k = 0; k < RP_BATCH; k++) {
				if (b[k])
					sum += b[k][0];
				free(b[k]);
			}
			free(b);
		}
		pthread_mutex_lock(&in->lock);
		unsigned char **got = in->n ? in->q[--in->n] : NULL;
		pthread_mutex_unlock(&in->lock);
		if (got) {
			for (int k = 0; k < RP_BATCH; k++) {
				if (got[k])
					sum += got[k][0];
				free(got[k]);
			}
			free(got);
		}
	}
	for (int j = 0; j < RP_KEEP; j++)
		if (keep[j]) {
			sum += keep[j][0];
			free(keep[j]);
		}
	return (void *)(uintptr_t)sum;
}

static uint64_t rptest(long rounds)
{
	pthread_t th[RP_T];
	uint64_t sum = 0;
	sc_rp_rounds = rounds;
	for (int i = 0; i < RP_T; i++)
		pthread_mutex_init(&rp_box[i].lock, NULL);
	for (int i = 0; i < RP_T; i++)
		pthread_create(&th[i], NULL, rp_thread, (void *)(intptr_t)i);
	for (int i = 0; i < RP_T; i++) {
		void *r;
		pthread_join(th[i], &r);
		sum += (uint64_t)(uintptr_t)r;
	}
	/* what is left in the boxes: every block is summed once, whoever
	 * frees it, so the sum does not depend on the timing */
	for (int i = 0; i < RP_T; i++)
		while (rp_box[i].n) {
			unsigned char **b = rp_box[i].q[--rp_box[i].n];
			for (int k = 0; k < RP_BATCH; k++) {
				if (b[k])
					sum += b[k][0];
				free(b[k]);
			}
			free(b);
		}
	return sum;
}

/* Thread churn: short-lived threads, a few at a time, each making and
 * freeing a few thousand small blocks, as a server that starts a thread
 * per request: a thread's first allocation and its exit (the allocator's
 * per-thread set-up and flush) on every one. */
static void *tc_thread(void *p)
{
	uint64_t s = (uint64_t)(uintptr_t)p, sum = 0;
	unsigned char *b[256];
	for (int r = 0; r < 8; r++) {
		for (int k = 0; k < 256; k++) {
			size_t n = 16 + rng(&s) % 1000;
			b[k] = malloc(n);
			b[k][0] = (unsigned char)n;
		}
		for (int k = 0; k < 256; k++) {
			sum += b[k][0];
			free(b[k]);
		}
	}
	return (void *)(uintptr_t)sum;
}

static uint64_t thread_churn(long waves)
{
	enum { WAVE = 4 };
	uint64_t sum = 0;
	for (long w = 0; w < waves; w++) {
		pthread_t th[WAVE];
		for (int i = 0; i < WAVE; i++)
			pthread_create(&th[i], NULL, tc_thread, (void *)(uintptr_t)(w * WAVE + i + 1));
		for (int i = 0; i < WAVE; i++) {
			void *r;
			pthread_join(th[i], &r);
			sum += (uint64_t)(uintptr_t)r;
		}
	}
	return sum;
}

/* The fast path alone: malloc and free of one small block in a tight
 * loop (what an interposer adds in front of the allocator's entry points
 * shows here, ~1 ns a pair). */
static uint64_t tight(long n)
{
	uint64_t sum = 0;
	for (long i = 0; i < n; i++) {
		unsigned char *volatile p = malloc(32);
		sum += (uintptr_t)p & 16;
		free(p);
	}
	return sum ? 1 : 1; /* addresses differ by allocator */
}

/* ALLOC_SCALE (default 1) scales every step count: bench/run --quick runs
 * each workload for a fraction of a second. */
static long sc(long n)
{
	static double f = -1;
	if (f < 0) {
		const char *e = getenv("ALLOC_SCALE");
		f = e ? atof(e) : 1;
		if (!(f > 0 && f <= 100))
			f = 1;
	}
	long r = (long)((double)n * f);
	return r > 0 ? r : 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s small|medium|large|mt-small|mt-medium|cross-thread|realloc|larson|fragment|big-churn|big-random|big-mixed|rptest|thread-churn|tight|large-churn [buffers per thread]\n",
			argv[0]);
		return 2;
	}
	const char *w = argv[1];
	double t0 = now();
	uint64_t sum;
	/* live sets of tens to hundreds of MiB, as in a server's heap */
	if (!strcmp(w, "small"))
		sum = churn(1, sc(20000000), 400000, 8, 256);
	else if (!strcmp(w, "medium"))
		sum = churn(2, sc(3000000), 8192, 512, 32768);
	else if (!strcmp(w, "large"))
		sum = churn(3, sc(100000), 96, 65536, 4 << 20);
	else if (!strcmp(w, "mt-small"))
		sum = parallel_churn(2, sc(10000000), 200000, 8, 256);
	else if (!strcmp(w, "mt-medium"))
		sum = parallel_churn(2, sc(1500000), 4096, 512, 32768);
	else if (!strcmp(w, "cross-thread"))
		sum = cross_thread(sc(20000));
	else if (!strcmp(w, "realloc"))
		sum = realloc_growth(sc(1500));
	else if (!strcmp(w, "larson"))
		sum = larson(sc(400), 20000, 50000);
	else if (!strcmp(w, "fragment"))
		sum = fragment(sc(800000) < 8 ? 8 : sc(800000));
	else if (!strcmp(w, "big-churn"))
		sum = big_churn(3, sc(60));
	else if (!strcmp(w, "big-random")) /* 5-25 MiB, 20 live */
		sum = big_random(sc(150), 5ul << 20, 25ul << 20);
	else if (!strcmp(w, "big-mixed")) /* 1-64 MiB, 20 live */
		sum = big_random(sc(100), 1ul << 20, 64ul << 20);
	else if (!strcmp(w, "rptest"))
		sum = rptest(sc(60000));
	else if (!strcmp(w, "thread-churn"))
		sum = thread_churn(sc(300));
	else if (!strcmp(w, "tight"))
		sum = tight(sc(100000000));
	else if (!strcmp(w, "large-churn")) /* bench/alloc/churn.py: 4 threads, N buffers each */
		sum = big_churn(4, argc > 2 ? atol(argv[2]) : 50);
	else {
		fprintf(stderr, "unknown workload %s\n", w);
		return 2;
	}
	double t = now() - t0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("%s %.4f %ld %ld %llu\n", w, t, ru.ru_maxrss, ru.ru_minflt, (unsigned long long)sum);
	return 0;
}
