/* Stress for an allocator injected into unmodified programs.  A plain
 * program (malloc only, -fno-builtin): it runs linked or under LD_PRELOAD,
 * on the host and in the tiered VM.  Each mode prints one TAP-free result
 * line starting "ok" or "FAIL", and exits 0 only on success:
 *   threads N          N thread create/join, each allocating; VmRSS flat
 *   realloc SECONDS    4 threads grow and shrink 256 buffers each, every
 *                      byte checked after each realloc
 *   signal SECONDS [HZ [THREADS]]
 *                      a program that allocates from signal handlers (not
 *                      async-signal-safe, done anyway): a timer per
 *                      thread; no deadlock, every byte checked
 *   forkexec THREADS SECONDS MIB
 *                      threads fork (child allocates, then _exit or exec)
 *                      while main rewrites and checks MIB MiB
 *   limit as|data      RLIMIT_AS / RLIMIT_DATA: allocate until refused;
 *                      ENOMEM each time, never a crash; memory freed is
 *                      reusable
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long vm_kib(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	size_t n = strlen(field);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':')
			v = atol(line + n + 1);
	if (f)
		fclose(f);
	return v;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static void fill(unsigned char *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)mix(seed + i / 8) ^ (unsigned char)i;
}

static size_t bad(const unsigned char *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ((unsigned char)mix(seed + i / 8) ^ (unsigned char)i))
			return i + 1;
	return 0;
}

/* ---------------------------------------------------------------- threads */
static void *_Atomic parcel; /* a thread's block, freed by the next one */
static _Atomic long thr_fail;

static void *thr_body(void *arg)
{
	uint64_t seed = (uint64_t)(uintptr_t)arg;
	void *p[16];
	for (int i = 0; i < 16; i++) {
		size_t sz = 16u << (i % 13); /* 16 B .. 64 KiB */
		p[i] = malloc(sz);
		if (!p[i]) {
			thr_fail++;
			return NULL;
		}
		fill(p[i], sz < 256 ? sz : 256, seed + i);
	}
	for (int i = 0; i < 16; i++) {
		size_t sz = 16u << (i % 13);
		if (bad(p[i], sz < 256 ? sz : 256, seed + i))
			thr_fail++;
		if (i)
			free(p[i]);
	}
	free(atomic_exchange(&parcel, p[0]));
	return NULL;
}

static int mode_threads(long n)
{
	enum { BATCH = 4 };
	long rss_warm = 0, made = 0;
	double t0 = now();
	for (long i = 0; i < n; i += BATCH) {
		pthread_t t[BATCH];
		int k = 0;
		for (; k < BATCH && i + k < n; k++)
			if (pthread_create(&t[k], NULL, thr_body, (void *)(uintptr_t)(i + k))) {
				printf("FAIL pthread_create at %ld: %s\n", i + k, strerror(errno));
				return 1;
			}
		for (int j = 0; j < k; j++)
			pthread_join(t[j], NULL);
		made += k;
		if (made == 2000)
			rss_warm = vm_kib("VmRSS");
	}
	free(atomic_exchange(&parcel, NULL));
	long rss_end = vm_kib("VmRSS"), hwm = vm_kib("VmHWM");
	long growth = rss_end - rss_warm;
	/* jemalloc keeps freed memory for reuse (decay), so the bound is on
	 * growth after warm-up, not on the absolute value */
	int pass = !thr_fail && made == n && growth < 8192;
	printf("%s %ld threads created and joined in %.1f s, each 16 allocations (one freed by the next "
	       "thread); VmRSS %ld KiB after 2000, %ld KiB at the end (%+ld KiB), peak %ld KiB; %ld "
	       "content errors\n",
	       pass ? "ok" : "FAIL", made, now() - t0, rss_warm, rss_end, growth, hwm, (long)thr_fail);
	return !pass;
}

/* ---------------------------------------------------------------- realloc */
static double deadline;
static _Atomic uint64_t verified, reallocs;
static _Atomic long errors;

static void *realloc_body(void *arg)
{
	enum { SLOTS = 256 };
	uint64_t rng = 0x9e3779b97f4a7c15ULL * ((uintptr_t)arg + 1);
	unsigned char *p[SLOTS] = {0};
	size_t len[SLOTS] = {0};
	uint64_t seed[SLOTS] = {0};
	uint64_t v = 0, r = 0;
	while (now() < deadline) {
		for (int k = 0; k < 64; k++) {
			rng = mix(rng);
			int s = (int)(rng % SLOTS);
			/* mostly small, sometimes up to 4 MiB: crosses every size class
			 * boundary and the in-place/moving paths */
			size_t n = (rng >> 20) % 8 ? (rng >> 32) % 4096 : (rng >> 32) % (4u << 20);
			unsigned char *q = realloc(p[s], n);
			if (n && !q) {
				errors++;
				continue;
			}
			r++;
			size_t keep = len[s] < n ? len[s] : n;
			if (bad(q, keep, seed[s])) {
				errors++;
				fprintf(stderr, "realloc lost data: slot %d, %zu -> %zu\n", s, len[s], n);
			}
			v += keep;
			p[s] = n ? q : NULL;
			len[s] = n;
			seed[s] = rng;
			fill(q, n, seed[s]);
		}
	}
	for (int s = 0; s < SLOTS; s++) {
		if (bad(p[s], len[s], seed[s]))
			errors++;
		v += len[s];
		free(p[s]);
	}
	verified += v;
	reallocs += r;
	return NULL;
}

static int mode_realloc(double secs)
{
	pthread_t t[4];
	deadline = now() + secs;
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, realloc_body, (void *)(uintptr_t)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	int pass = !errors && reallocs > 1000;
	printf("%s realloc storm: %llu reallocs in 4 threads over %.0f s, %llu bytes verified, %ld "
	       "errors\n",
	       pass ? "ok" : "FAIL", (unsigned long long)reallocs, secs,
	       (unsigned long long)verified, (long)errors);
	return !pass;
}

/* ---------------------------------------------------------------- signal */
/* Every thread has its own timer (SIGEV_THREAD_ID) at HZ; its handler uses
 * the whole malloc family: a block it keeps across calls (checked, then
 * freed by a later call), a realloc that must keep the data, a calloc that
 * must be zero and that it hands to the main loops (freed there, on any
 * thread), and a main-loop block it frees or reallocs.  The main loops
 * allocate, check and free meanwhile.  Blocks carry a header: size, seed. */
#define SIG_HELD 8
#ifndef sigev_notify_thread_id /* glibc before 2.38 names only the union member */
#define sigev_notify_thread_id _sigev_un._tid
#endif
struct sigstate {
	unsigned char *held[SIG_HELD];
	void *_Atomic victim; /* offered by the main loop to the handler */
};
static __thread struct sigstate *sig_me;
static _Atomic uint64_t sig_handled, sig_bad, sig_nomem, sig_refused, sig_main_bad, sig_loops;
static void *_Atomic sig_handoff[64];
static volatile sig_atomic_t sig_stop;
static double sig_end;
static long sig_hz;

static unsigned char *blk_new(unsigned char *p, size_t n, uint64_t seed)
{
	memcpy(p, &n, 8);
	memcpy(p + 8, &seed, 8);
	fill(p + 16, n - 16, seed);
	return p;
}

/* 0 when the block's bytes are what its header says */
static size_t blk_bad(const unsigned char *p)
{
	size_t n;
	uint64_t seed;
	memcpy(&n, p, 8);
	memcpy(&seed, p + 8, 8);
	if (n < 16 || n > (1 << 22))
		return 1;
	return bad(p + 16, n - 16, seed);
}

static void on_tick(int sig)
{
	(void)sig;
	int saved = errno;
	struct sigstate *s = sig_me;
	if (!s) {
		errno = saved;
		return;
	}
	uint64_t n = atomic_fetch_add(&sig_handled, 1);
	uint64_t seed = mix(n * 0x9e3779b97f4a7c15ULL + (uintptr_t)s);
	int slot = (int)(seed % SIG_HELD);
	if (s->held[slot]) { /* a block an earlier call kept */
		if (blk_bad(s->held[slot]))
			atomic_fetch_add(&sig_bad, 1);
		free(s->held[slot]);
		s->held[slot] = NULL;
	}
	size_t size = 16 + (size_t)(seed >> 8) % 2000;
	unsigned char *p = malloc(size);
	if (!p) {
		atomic_fetch_add(&sig_nomem, 1);
	} else {
		blk_new(p, size, seed);
		size_t size2 = size + 1 + (size_t)(seed >> 24) % 6000;
		unsigned char *q = realloc(p, size2);
		if (!q) {
			atomic_fetch_add(&sig_nomem, 1);
		} else {
			if (blk_bad(q))
				atomic_fetch_add(&sig_bad, 1);
			p = blk_new(q, size2, seed + 1);
		}
		s->held[slot] = p;
	}
	size_t cn = 1 + (size_t)(seed >> 40) % 97;
	unsigned char *c = calloc(cn, 24);
	if (!c) {
		atomic_fetch_add(&sig_nomem, 1);
	} else {
		for (size_t i = 0; i < cn * 24; i++)
			if (c[i]) {
				atomic_fetch_add(&sig_bad, 1);
				break;
			}
		blk_new(c, cn * 24, seed + 2);
		unsigned char *old = atomic_exchange(&sig_handoff[(seed >> 16) % 64], c);
		if (old) {
			if (blk_bad(old))
				atomic_fetch_add(&sig_bad, 1);
			free(old);
		}
	}
	unsigned char *v = atomic_exchange(&s->victim, NULL);
	if (v) { /* a main-loop block: grow it (may be refused) or free it */
		if (blk_bad(v))
			atomic_fetch_add(&sig_bad, 1);
		unsigned char *w = n % 2 ? realloc(v, 4096 + (size_t)(seed >> 50) % 4096) : NULL;
		if (n % 2 && !w) /* allowed: v is left as it was */
			atomic_fetch_add(&sig_refused, 1);
		if (w) { /* the old bytes came along */
			if (blk_bad(w))
				atomic_fetch_add(&sig_bad, 1);
			v = w;
		}
		free(v);
	}
	errno = saved;
}

static void *sig_loop(void *arg)
{
	struct sigstate st;
	memset(&st, 0, sizeof(st));
	sig_me = &st;
	struct sigevent ev;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGALRM;
	ev.sigev_notify_thread_id = gettid();
	timer_t t;
	long ns = 1000000000L / sig_hz;
	struct itimerspec its = {{ns / 1000000000L, ns % 1000000000L}, {0, ns}};
	if (timer_create(CLOCK_MONOTONIC, &ev, &t) || timer_settime(t, 0, &its, NULL)) {
		perror("timer");
		atomic_fetch_add(&sig_main_bad, 1);
		return NULL;
	}
	uint64_t r = (uint64_t)(uintptr_t)arg, loops = 0;
	unsigned char *keep[64] = {0};
	while (now() < sig_end) {
		for (int i = 0; i < 64; i++) {
			r = mix(r + 1);
			if (keep[i]) {
				if (blk_bad(keep[i]))
					atomic_fetch_add(&sig_main_bad, 1);
				free(keep[i]);
			}
			size_t size = 16 + (size_t)(r >> 8) % (r % 32 ? 3000 : 200000);
			unsigned char *p;
			if (r % 3 == 0) {
				p = calloc(1, size);
			} else if (r % 3 == 1) {
				p = malloc(size / 2 + 16);
				if (p)
					p = realloc(p, size);
			} else {
				p = malloc(size);
			}
			keep[i] = p ? blk_new(p, size, r) : NULL;
		}
		if (loops % 4 == 0 && !atomic_load(&st.victim)) {
			size_t size = 16 + (size_t)(r >> 20) % 3000;
			unsigned char *v = malloc(size);
			if (v)
				atomic_store(&st.victim, blk_new(v, size, r + 7));
		}
		unsigned char *h = atomic_exchange(&sig_handoff[r % 64], NULL);
		if (h) { /* the handler's block, maybe another thread's, freed here */
			if (blk_bad(h))
				atomic_fetch_add(&sig_main_bad, 1);
			free(h);
		}
		loops++;
	}
	timer_delete(t);
	sigset_t al;
	sigemptyset(&al);
	sigaddset(&al, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &al, NULL);
	for (int i = 0; i < 64; i++)
		free(keep[i]);
	for (int i = 0; i < SIG_HELD; i++) {
		if (st.held[i] && blk_bad(st.held[i]))
			atomic_fetch_add(&sig_bad, 1);
		free(st.held[i]);
	}
	free(atomic_load(&st.victim));
	sig_me = NULL;
	atomic_fetch_add(&sig_loops, loops);
	return NULL;
}

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
static uint64_t tier_stat(mallctl_fn f, const char *name)
{
	uint64_t v = 0;
	size_t sz = sizeof(v);
	return f && f(name, &v, &sz, NULL, 0) == 0 ? v : UINT64_MAX;
}

static int mode_signal(double secs, long hz, int nthreads)
{
	pid_t pid = fork();
	if (pid == 0) {
		mallctl_fn ctl = (mallctl_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "tier_mallctl");
		sig_hz = hz > 0 ? hz : 100;
		struct sigaction sa = {.sa_handler = on_tick, .sa_flags = SA_RESTART};
		sigaction(SIGALRM, &sa, NULL);
		/* nothing of the allocator's own calls re-enters it */
		uint64_t served0 = tier_stat(ctl, "stats.reentrant.served");
		sig_end = now() + secs;
		pthread_t t[64];
		if (nthreads > 64)
			nthreads = 64;
		for (long i = 0; i < nthreads; i++)
			pthread_create(&t[i], NULL, sig_loop, (void *)(uintptr_t)(i * 1000003 + 1));
		for (int i = 0; i < nthreads; i++)
			pthread_join(t[i], NULL);
		for (int i = 0; i < 64; i++) {
			unsigned char *h = atomic_exchange(&sig_handoff[i], NULL);
			if (h && blk_bad(h))
				atomic_fetch_add(&sig_bad, 1);
			free(h);
		}
		uint64_t served = tier_stat(ctl, "stats.reentrant.served");
		uint64_t inuse = tier_stat(ctl, "stats.reentrant.pool_bytes");
		uint64_t deferred = tier_stat(ctl, "stats.reentrant.deferred_frees");
		bool ours = ctl != NULL;
		uint64_t handled = atomic_load(&sig_handled);
		bool good = handled >= 20 && !sig_bad && !sig_main_bad && !sig_nomem &&
			    (!ours || (served0 == 0 && served > 0 && inuse == 0));
		printf("%s signal: %d threads, %ld Hz each, %.0f s: handler ran %llu times (malloc, realloc, "
		       "calloc, free each; %llu bad bytes, %llu NULL; realloc of a main-loop block "
		       "refused %llu times), main loops %llu (%llu bad)",
		       good ? "ok" : "FAIL", nthreads, sig_hz, secs, (unsigned long long)handled,
		       (unsigned long long)sig_bad, (unsigned long long)sig_nomem,
		       (unsigned long long)sig_refused, (unsigned long long)sig_loops,
		       (unsigned long long)sig_main_bad);
		if (ours)
			printf("; re-entrant calls served by the pool %llu (%llu before the timers), "
			       "frees deferred %llu, pool bytes in use at the end %llu",
			       (unsigned long long)served, (unsigned long long)served0,
			       (unsigned long long)deferred, (unsigned long long)inuse);
		printf("\n");
		fflush(stdout);
		_exit(good ? 0 : 3);
	}
	/* a deadlock shows as a child that outlives its time by far */
	double limit = now() + secs + 15;
	int st = 0;
	pid_t w;
	while ((w = waitpid(pid, &st, WNOHANG)) == 0 && now() < limit)
		usleep(20000);
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		printf("FAIL signal: the program was still running %.0f s after its end (deadlock)\n",
		       secs + 15);
		return 1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("FAIL signal: the program ended with status %#x\n", st);
		return 1;
	}
	return 0;
}

/* ---------------------------------------------------------------- forkexec */
static _Atomic long forks, execs, child_fail;

static void *forker(void *arg)
{
	long id = (long)(intptr_t)arg;
	while (now() < deadline) {
		int do_exec = (forks + id) % 4 == 0;
		pid_t pid = fork();
		if (pid < 0) {
			child_fail++;
			continue;
		}
		if (pid == 0) {
			/* the child allocates (locks must have been left usable) */
			char *s = malloc(100000);
			if (!s)
				_exit(2);
			fill((unsigned char *)s, 100000, 42);
			int b = bad((unsigned char *)s, 100000, 42) != 0;
			free(s);
			char *d = strdup("child");
			if (!d || b)
				_exit(3);
			free(d);
			if (do_exec) {
				execl("/bin/true", "true", (char *)NULL);
				_exit(4);
			}
			_exit(0);
		}
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			child_fail++;
			fprintf(stderr, "child %d: status %#x\n", pid, st);
		}
		forks++;
		execs += do_exec;
	}
	return NULL;
}

static int mode_forkexec(int nthreads, double secs, size_t mib)
{
	size_t n = mib << 20;
	unsigned char *buf = malloc(n);
	if (!buf) {
		printf("FAIL forkexec: no %zu MiB\n", mib);
		return 1;
	}
	uint64_t seed = 1;
	fill(buf, n, seed);
	pthread_t t[64];
	deadline = now() + secs;
	for (int i = 0; i < nthreads && i < 64; i++)
		pthread_create(&t[i], NULL, forker, (void *)(intptr_t)i);
	uint64_t checked = 0;
	long lost = 0;
	while (now() < deadline) {
		/* check the buffer slice by slice while the background thread
		 * moves it; then rewrite it with a new pattern */
		lost += bad(buf, n, seed) != 0;
		checked += n;
		fill(buf, n, ++seed);
	}
	for (int i = 0; i < nthreads && i < 64; i++)
		pthread_join(t[i], NULL);
	lost += bad(buf, n, seed) != 0;
	checked += n;
	free(buf);
	int pass = !lost && !child_fail && forks > nthreads;
	printf("%s forkexec: %ld forks (%ld exec'd /bin/true) from %d threads in %.0f s, %ld children "
	       "failed; %llu bytes verified in the parent, %ld corrupt passes\n",
	       pass ? "ok" : "FAIL", (long)forks, (long)execs, nthreads, secs, (long)child_fail,
	       (unsigned long long)checked, lost);
	return !pass;
}

/* ---------------------------------------------------------------- limit */
static volatile size_t huge = SIZE_MAX / 4;

static int mode_limit(const char *which)
{
	int res = !strcmp(which, "data") ? RLIMIT_DATA : RLIMIT_AS;
	long base = vm_kib(res == RLIMIT_AS ? "VmSize" : "VmData");
	rlim_t lim = ((rlim_t)base << 10) + (256u << 20);
	struct rlimit rl = {lim, lim};
	if (setrlimit(res, &rl)) {
		printf("FAIL setrlimit: %s\n", strerror(errno));
		return 1;
	}
	int fails = 0, wrong_errno = 0;
	size_t got = 0;
	enum { MAXP = 1 << 16 };
	static void *ptrs[MAXP];
	int np = 0;
	/* large, then medium, then small: each size class refused in turn */
	static const size_t sizes[] = {16u << 20, 1u << 20, 64u << 10, 4096, 512, 64};
	for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		for (;;) {
			if (np == MAXP)
				break;
			errno = 0;
			void *p = malloc(sizes[k]);
			if (!p) {
				fails++;
				wrong_errno += errno != ENOMEM;
				break;
			}
			memset(p, 0x5a, sizes[k] < 4096 ? sizes[k] : 4096);
			ptrs[np++] = p;
			got += sizes[k];
		}
	}
	/* the other entry points refuse as well */
	errno = 0;
	void *q = calloc(64, 1 << 20);
	int c_ok = !q && errno == ENOMEM;
	free(q);
	void *r = NULL;
	int pm = posix_memalign(&r, 1 << 21, 64 << 20);
	int pm_ok = pm == ENOMEM && !r;
	errno = 0;
	void *rr = realloc(ptrs[0], 128 << 20);
	int re_ok = !rr && errno == ENOMEM; /* ptrs[0] stays valid */
	errno = 0;
	void *h = malloc(huge);
	int h_ok = !h && errno == ENOMEM;
	for (int i = 0; i < np; i++)
		free(ptrs[i]);
	/* after freeing, the memory is usable again.  Not as one 128 MiB
	 * block: jemalloc (retain:true) keeps freed address space reserved
	 * for reuse, so a larger contiguous block than any freed one can
	 * still be refused under RLIMIT_AS, as under plain jemalloc. */
	void *again[8];
	int again_ok = 1;
	for (int i = 0; i < 8; i++) {
		again[i] = malloc(16 << 20);
		again_ok &= again[i] != NULL;
		if (again[i])
			memset(again[i], 1, 16 << 20);
	}
	for (int i = 0; i < 8; i++)
		free(again[i]);
	char *s = strdup("still alive");
	if (!s) { /* say what still works, for the report */
		void *a = malloc(16), *b = malloc(4096), *c = malloc(1 << 20), *d = malloc(16 << 20);
		fprintf(stderr, "strdup after freeing failed: errno %d, VmData %ld KiB, VmSize %ld KiB; "
			"malloc 16 B %s, 4 KiB %s, 1 MiB %s, 16 MiB %s\n", errno, vm_kib("VmData"),
			vm_kib("VmSize"), a ? "ok" : "NULL", b ? "ok" : "NULL", c ? "ok" : "NULL",
			d ? "ok" : "NULL");
		free(a), free(b), free(c), free(d);
	}
	int pass = fails >= 6 && !wrong_errno && c_ok && pm_ok && re_ok && h_ok && again_ok && s;
	printf("%s RLIMIT_%s %ld MiB: %zu MiB allocated before refusal, %d refusals (%d without "
	       "ENOMEM); calloc %s, posix_memalign %s, realloc %s, malloc(SIZE_MAX/4) %s; after free, "
	       "8 x 16 MiB %s\n",
	       pass ? "ok" : "FAIL", res == RLIMIT_AS ? "AS" : "DATA", (long)(lim >> 20), got >> 20,
	       fails, wrong_errno, c_ok ? "ENOMEM" : "wrong", pm_ok ? "ENOMEM" : "wrong",
	       re_ok ? "ENOMEM" : "wrong", h_ok ? "ENOMEM" : "wrong",
	       again_ok ? "allocated again" : "refused");
	if (!s)
		printf("  but strdup after freeing: NULL\n");
	free(s);
	return !pass;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *m = argc > 1 ? argv[1] : "";
	if (!strcmp(m, "threads"))
		return mode_threads(argc > 2 ? atol(argv[2]) : 100000);
	if (!strcmp(m, "realloc"))
		return mode_realloc(argc > 2 ? atof(argv[2]) : 5);
	if (!strcmp(m, "signal"))
		return mode_signal(argc > 2 ? atof(argv[2]) : 5, argc > 3 ? atol(argv[3]) : 100,
				   argc > 4 ? atoi(argv[4]) : 4);
	if (!strcmp(m, "forkexec"))
		return mode_forkexec(argc > 2 ? atoi(argv[2]) : 8, argc > 3 ? atof(argv[3]) : 5,
				     argc > 4 ? (size_t)atol(argv[4]) : 64);
	if (!strcmp(m, "limit"))
		return mode_limit(argc > 2 ? argv[2] : "as");
	fprintf(stderr, "usage: stress threads N | realloc S | signal S | forkexec T S MIB | "
			"limit as|data\n");
	return 2;
}
