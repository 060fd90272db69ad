/* Arenas are hooked as threads arrive, not at start.  Runs with
 * narenas:512 (what jemalloc picks on 128 CPUs) and always_hook:true (the
 * host has one tier): at start only arena 0 exists; each of 64 live
 * threads gets an arena with our hooks and its memory is ours; threads
 * that come later reuse arenas; a thread that reaches jemalloc without the
 * interposer is hooked late and counted; the huge and tier arenas appear
 * at first use; fork while threads arrive. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/wait.h>

#include "../tap.h"
#include "tiermalloc.h"

#define NTHREADS 64

/* "hooks: N automatic arenas (L hooked late), huge arena ..." */
static void hook_stats(unsigned *hooked, unsigned *late, bool *huge)
{
	tap_out_reset();
	tier_stats_print(tap_out_cb, NULL, NULL);
	const char *h = strstr(tap_out, "\nhooks: ");
	*hooked = *late = UINT32_MAX;
	char word[16] = "";
	if (h)
		sscanf(h, "\nhooks: automatic arenas %u, hooked late %u, huge arena hooked %15s", hooked, late,
		       word);
	*huge = !strcmp(word, "true,");
}

static bool ours(const void *p)
{
	return tier_pin(p, 1) == 0 && tier_unpin(p, 1) == 0;
}

static bool exists(unsigned i)
{
	char name[64];
	ssize_t ms;
	size_t sz = sizeof(ms);
	/* fails (EFAULT) while the arena does not exist, and creates nothing */
	snprintf(name, sizeof(name), "arena.%u.dirty_decay_ms", i);
	return mallctl(name, &ms, &sz, NULL, 0) == 0;
}

static extent_hooks_t *hooks_of(unsigned i)
{
	char name[64];
	extent_hooks_t *h = NULL;
	size_t sz = sizeof(h);
	snprintf(name, sizeof(name), "arena.%u.extent_hooks", i);
	return mallctl(name, &h, &sz, NULL, 0) ? NULL : h;
}

static bool in_tiermalloc(const void *p)
{
	Dl_info info;
	return p && dladdr(p, &info) && info.dli_fname && strstr(info.dli_fname, "libtiermalloc");
}

static unsigned narenas;
static unsigned count_arenas(void)
{
	unsigned n = 0;
	for (unsigned i = 0; i < narenas; i++)
		n += exists(i);
	return n;
}

static unsigned my_arena(void)
{
	unsigned a = UINT32_MAX;
	size_t sz = sizeof(a);
	mallctl("thread.arena", &a, &sz, NULL, 0);
	return a;
}

static pthread_barrier_t alive, bypass_alive, go;

struct th {
	unsigned arena;
	bool mem_ours, hooks_ours;
};

static void *worker(void *arg)
{
	struct th *t = arg;
	void *small = malloc(100);
	char *big = malloc(1 << 20);
	memset(big, 1, 1 << 20);
	t->arena = my_arena();
	t->mem_ours = ours(big) && ours(small);
	t->hooks_ours = in_tiermalloc(hooks_of(t->arena));
	pthread_barrier_wait(&alive);
	pthread_barrier_wait(&go);
	free(small);
	free(big);
	return NULL;
}

/* Its first call goes to jemalloc's mallocx, not through the interposer:
 * it takes the spare if one is free, else jemalloc makes an arena. */
static void *bypass(void *arg)
{
	struct th *t = arg;
	void *p = mallocx(100, 0);
	t->arena = my_arena();
	t->hooks_ours = in_tiermalloc(hooks_of(t->arena));
	pthread_barrier_wait(&bypass_alive); /* main sweeps here */
	pthread_barrier_wait(&go);
	char *big = malloc(4 << 20);
	memset(big, 2, 4 << 20);
	t->mem_ours = ours(big);
	free(big);
	dallocx(p, 0);
	return NULL;
}

static void *brief(void *arg)
{
	struct th *t = arg;
	char *p = malloc(64 << 10);
	memset(p, 3, 64 << 10);
	t->arena = my_arena();
	t->mem_ours = ours(p);
	free(p);
	return NULL;
}

static _Atomic bool stop;
static void *churn(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		pthread_t t;
		struct th x;
		if (pthread_create(&t, NULL, brief, &x) == 0)
			pthread_join(t, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	(void)argc;
	tap_rerun_with(argv, "TIERMALLOC_CONF", "always_hook:true");
	tap_rerun_with(argv, "MALLOC_CONF", "narenas:512");
	const char *v;
	size_t vl = sizeof(v), sz = sizeof(narenas);
	tier_mallctl("version", &v, &vl, NULL, 0); /* boots tiermalloc */
	mallctl("opt.narenas", &narenas, &sz, NULL, 0);
	ok(narenas == 512, "jemalloc allows %u automatic arenas", narenas);
	unsigned n0 = count_arenas();
	ok(n0 == 1 && exists(0), "at start %u automatic arena exists, not %u", n0, narenas);
	ok(in_tiermalloc(hooks_of(0)), "arena 0 has our hooks");
	ok(!exists(narenas), "no huge arena before an oversize allocation");
	unsigned total = 0;
	sz = sizeof(total);
	mallctl("arenas.narenas", &total, &sz, NULL, 0);
	ok(total == narenas + 1, "no tier arena before its first use (arenas.narenas %u)", total);

	/* 64 threads alive at once: one arena each, all hooked, memory ours */
	struct th t[NTHREADS + 2] = {{0}};
	pthread_t id[NTHREADS + 2];
	pthread_barrier_init(&alive, NULL, NTHREADS + 1);
	pthread_barrier_init(&bypass_alive, NULL, 2);
	pthread_barrier_init(&go, NULL, NTHREADS + 3);
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&id[i], NULL, worker, &t[i]);
	pthread_barrier_wait(&alive);
	/* once every worker holds its arena, two threads that bypass us: the
	 * first takes the spare, the second finds no hooked arena free */
	pthread_create(&id[NTHREADS], NULL, bypass, &t[NTHREADS]);
	pthread_barrier_wait(&bypass_alive);
	pthread_create(&id[NTHREADS + 1], NULL, bypass, &t[NTHREADS + 1]);
	pthread_barrier_wait(&bypass_alive);
	int mem_ok = 0, hooks_ok = 0, distinct = 1;
	for (int i = 0; i < NTHREADS; i++) {
		mem_ok += t[i].mem_ours;
		hooks_ok += t[i].hooks_ours;
		for (int j = 0; j < i; j++)
			distinct &= t[i].arena != t[j].arena;
	}
	ok(mem_ok == NTHREADS, "%d of %d threads' memory is ours", mem_ok, NTHREADS);
	ok(hooks_ok == NTHREADS, "%d of %d threads' arenas have our hooks", hooks_ok, NTHREADS);
	ok(distinct, "each live thread has an arena of its own");
	unsigned n1 = count_arenas();
	ok(n1 == NTHREADS + 3, "%u arenas with %d live threads, main and two bypassing threads", n1,
	   NTHREADS);
	ok(t[NTHREADS].hooks_ours && t[NTHREADS].arena == NTHREADS + 1,
	   "the first thread to reach jemalloc directly takes the spare (arena %u), hooked",
	   t[NTHREADS].arena);
	ok(!t[NTHREADS + 1].hooks_ours, "the second gets an arena (%u) with jemalloc's hooks",
	   t[NTHREADS + 1].arena);
	unsigned hooked, late;
	bool huge;
	hook_stats(&hooked, &late, &huge);
	ok(hooked == NTHREADS + 3 && late == 1, "stats: %u arenas hooked, %u of them late", hooked, late);
	ok(in_tiermalloc(hooks_of(t[NTHREADS + 1].arena)), "its arena has our hooks now");
	pthread_barrier_wait(&go);
	for (int i = 0; i < NTHREADS + 2; i++)
		pthread_join(id[i], NULL);
	ok(t[NTHREADS].mem_ours && t[NTHREADS + 1].mem_ours,
	   "what both allocate through the interposer after that is ours");

	/* threads that come later reuse the arenas left free */
	int later_ok = 0;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_t x;
		struct th b = {0};
		pthread_create(&x, NULL, brief, &b);
		pthread_join(x, NULL);
		later_ok += b.mem_ours && b.arena < n1 + 1;
	}
	unsigned n2 = count_arenas();
	ok(later_ok == NTHREADS && n2 <= n1 + 1,
	   "64 threads one after another: memory ours, %u arenas (was %u)", n2, n1);

	/* the huge arena at the first oversize allocation */
	char *h = malloc(64 << 20);
	memset(h, 4, 64 << 20);
	hook_stats(&hooked, &late, &huge);
	ok(exists(narenas) && in_tiermalloc(hooks_of(narenas)) && huge,
	   "an oversize allocation makes the huge arena, hooked");
	ok(ours(h) && ours(h + (64 << 20) - 1), "64 MiB block is ours end to end");
	free(h);

	/* the tier arena at first use */
	unsigned a = UINT32_MAX, a2 = UINT32_MAX;
	sz = sizeof(a);
	tier_mallctl("tier.0.arena", &a, &sz, NULL, 0);
	mallctl("arenas.narenas", &total, &sz, NULL, 0);
	char *p = tier_malloc(0, 1 << 20);
	tier_mallctl("tier.0.arena", &a2, &sz, NULL, 0);
	unsigned owner = UINT32_MAX;
	sz = sizeof(owner);
	mallctl("arenas.lookup", &owner, &sz, &p, sizeof(p));
	ok(a == narenas + 1 && total == narenas + 2 && a2 == a && owner == a && ours(p),
	   "tier.0.arena made at its first read (%u), tier_malloc uses it", a);
	free(p);

	/* fork while threads come and go */
	pthread_t c;
	pthread_create(&c, NULL, churn, NULL);
	int children_ok = 0;
	for (int i = 0; i < 40; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			alarm(20);
			struct th b = {0};
			pthread_t x;
			char *q = malloc(1 << 20);
			memset(q, 5, 1 << 20);
			if (pthread_create(&x, NULL, brief, &b) || pthread_join(x, NULL))
				_exit(3);
			_exit(ours(q) && b.mem_ours ? 0 : 2);
		}
		int st = 0;
		if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			children_ok++;
	}
	atomic_store(&stop, true);
	pthread_join(c, NULL);
	ok(children_ok == 40, "40 forks while threads arrive: %d children allocated and exited", children_ok);

	size_t bad = 1;
	sz = sizeof(bad);
	tier_mallctl("debug.check", &bad, &sz, NULL, 0);
	ok(bad == 0, "registry mirrors the extents (%zu inconsistencies)", bad);
	return done();
}
