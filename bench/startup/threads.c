/* threads: start N threads that each allocate, and keep them all alive at
 * once, so that jemalloc binds each to an arena of its own.
 *   threads [-c] N
 * -c: before the threads start and while they are all alive, print the
 * automatic arenas that exist, split by whose extent hooks they have:
 *   <when> arenas <n> tiermalloc <h> jemalloc <d> (of narenas <max>)
 * Counting uses jemalloc's mallctl, which is itself a start-up cost
 * (jemalloc then builds its control tree for every possible arena), so the
 * timed runs go without -c.  Works under jemalloc and tiermalloc alike. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
static pthread_barrier_t all_alive, done;
static void *volatile sink;

static void *worker(void *arg)
{
	(void)arg;
	void *small[64];
	for (int i = 0; i < 64; i++)
		small[i] = malloc(48 + (size_t)i * 16);
	char *big = malloc(256 << 10);
	memset(big, 1, 256 << 10);
	sink = big;
	pthread_barrier_wait(&all_alive);
	pthread_barrier_wait(&done);
	for (int i = 0; i < 64; i++)
		free(small[i]);
	free(big);
	return NULL;
}

static void count(const char *when)
{
	mallctl_fn ctl = (mallctl_fn)dlsym(RTLD_DEFAULT, "mallctl");
	if (!ctl) {
		printf("%s arenas n/a (no jemalloc)\n", when);
		return;
	}
	unsigned narenas = 0, n = 0, tm = 0, je = 0;
	size_t sz = sizeof(narenas);
	ctl("opt.narenas", &narenas, &sz, NULL, 0);
	for (unsigned i = 0; i < narenas; i++) {
		char name[64];
		ssize_t ms;
		void *hooks = NULL;
		Dl_info info;
		/* fails while the arena does not exist, and creates nothing */
		snprintf(name, sizeof(name), "arena.%u.dirty_decay_ms", i);
		sz = sizeof(ms);
		if (ctl(name, &ms, &sz, NULL, 0))
			continue;
		n++;
		snprintf(name, sizeof(name), "arena.%u.extent_hooks", i);
		sz = sizeof(hooks);
		if (ctl(name, &hooks, &sz, NULL, 0) == 0 && dladdr(hooks, &info) && info.dli_fname &&
		    strstr(info.dli_fname, "tiermalloc"))
			tm++;
		else
			je++;
	}
	printf("%s arenas %u tiermalloc %u jemalloc %u (of narenas %u)\n", when, n, tm, je, narenas);
}

int main(int argc, char **argv)
{
	int c = argc > 1 && !strcmp(argv[1], "-c");
	int n = argc > 1 + c ? atoi(argv[1 + c]) : 64;
	if (n < 1 || n > 4096) {
		fprintf(stderr, "usage: threads [-c] N (1..4096)\n");
		return 2;
	}
	if (c)
		count("start");
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	pthread_barrier_init(&all_alive, NULL, (unsigned)n + 1);
	pthread_barrier_init(&done, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, worker, NULL)) {
			perror("pthread_create");
			return 1;
		}
	pthread_barrier_wait(&all_alive);
	if (c) {
		char when[32];
		snprintf(when, sizeof(when), "%d-threads", n);
		count(when);
	}
	pthread_barrier_wait(&done);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
	return 0;
}
