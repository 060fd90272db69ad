/* Interposition, in the spirit of glibc's malloc/tst-interpose-*: the
 * memory libc allocates for itself (strdup, asprintf, stdio buffers,
 * open_memstream, getline, getaddrinfo, dlopen, realpath, opendir, glob,
 * scandir) comes from tiermalloc, and mixed frees work both ways (we free
 * what libc made; libc reallocs and frees what we made).
 *
 * Built twice: linked with -ltiermalloc (tests/unit/test_interpose) and as
 * a plain program that knows nothing of tiermalloc (tests/rel/interpose,
 * run under LD_PRELOAD by tests/rel/interpose.sh).  So the tiermalloc API
 * is looked up with dlsym.  "threads" as argv[1] runs every check in 8
 * threads at once, each freeing memory another thread made. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <glob.h>
#include <malloc.h>
#include <netdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../tap.h"

static int (*pin)(const void *, size_t);
static int (*unpin)(const void *, size_t);

/* Ours iff tiermalloc's registry knows the address (the hooks are on:
 * main re-runs itself with always_hook:true). */
static int ours(const void *p)
{
	if (!p || pin(p, 1))
		return 0;
	return unpin(p, 1) == 0;
}

#define NTHREADS 8
static int threaded;
static pthread_mutex_t tap_lock = PTHREAD_MUTEX_INITIALIZER;

/* ok() from several threads: one line at a time; in threaded mode every
 * thread reports a failure, only thread 0 a pass (one plan per run). */
static int check(int id, int cond, const char *what)
{
	pthread_mutex_lock(&tap_lock);
	if (!cond || id == 0)
		ok(cond, "%s%s", what, threaded ? " (8 threads)" : "");
	pthread_mutex_unlock(&tap_lock);
	return cond;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* What one thread made, freed by the next (cross-thread, cross-origin). */
static char *handoff[NTHREADS];

static void suite(int id)
{
	char what[160];

	char *s = strdup("interposed");
	check(id, s && ours(s) && !strcmp(s, "interposed"), "strdup memory is ours");
	/* glibc's smallest chunk has 24 usable bytes; jemalloc's class is 16 */
	check(id, malloc_usable_size(s) == 16, "malloc_usable_size(strdup of 11 bytes) is jemalloc's 16");
	/* libc-made memory grown and freed by the program */
	s = realloc(s, 1 << 20);
	check(id, s && ours(s) && !strcmp(s, "interposed"), "realloc of strdup memory keeps it");
	free(s);
	s = strndup("abcdef", 3);
	check(id, s && ours(s) && !strcmp(s, "abc"), "strndup memory is ours");
	free(s);

	s = NULL;
	int n = asprintf(&s, "%d-%s-%0100d", id, "x", 7);
	check(id, n == 104 && ours(s), "asprintf memory is ours");
	free(s);

	/* open_memstream: libc grows a buffer (realloc) as we print into it */
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	for (int i = 0; m && i < 10000; i++)
		fprintf(m, "%05d\n", i);
	int closed = m ? fclose(m) : -1;
	check(id, closed == 0 && len == 60000 && ours(buf) && !memcmp(buf + 59994, "09999\n", 6),
	      "open_memstream buffer (60000 bytes, grown by libc) is ours");
	free(buf);

	/* getline: libc allocates (NULL buffer), and reallocs one we made */
	static const char text[] = "short\na rather longer second line, longer than eight bytes\n";
	FILE *f = fmemopen((void *)text, sizeof(text) - 1, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t r1 = f ? getline(&line, &cap, f) : -1;
	check(id, r1 == 6 && ours(line), "getline's buffer is ours");
	free(line);
	line = malloc(8);
	cap = 8;
	ssize_t r2 = f ? getline(&line, &cap, f) : -1;
	check(id, r2 == 53 && cap > 8 && ours(line) && !strncmp(line, "a rather", 8),
	      "getline reallocs a buffer we made, and it stays ours");
	free(line);
	if (f)
		fclose(f);

	/* fopen: the FILE and its buffer */
	f = fopen("/proc/self/maps", "r");
	char tmp[64];
	size_t got = f ? fread(tmp, 1, sizeof(tmp), f) : 0;
	check(id, f && got > 0 && ours(f) && ours(f->_IO_buf_base),
	      "fopen: the FILE and its stdio buffer are ours");
	if (f)
		fclose(f); /* libc frees both */

	/* getaddrinfo: the result list */
	struct addrinfo hints = {.ai_family = AF_INET, .ai_flags = AI_NUMERICHOST}, *res = NULL;
	int g = getaddrinfo("127.0.0.1", "80", &hints, &res);
	check(id, g == 0 && res && ours(res) && ours(res->ai_addr), "getaddrinfo results are ours");
	if (!g)
		freeaddrinfo(res);

	/* realpath, getcwd, opendir, scandir, glob */
	char *rp = realpath("/proc/self", NULL);
	char *cwd = getcwd(NULL, 0);
	check(id, rp && cwd && ours(rp) && ours(cwd), "realpath(…, NULL) and getcwd(NULL, 0) are ours");
	free(rp);
	free(cwd);
	DIR *d = opendir("/");
	check(id, d && ours(d), "opendir's DIR is ours");
	if (d)
		closedir(d);
	struct dirent **names = NULL;
	int nn = scandir("/proc/self", &names, NULL, alphasort);
	int all = nn > 0 && ours(names);
	for (int i = 0; i < nn; i++) {
		all &= ours(names[i]);
		free(names[i]);
	}
	free(names);
	snprintf(what, sizeof(what), "scandir: the list and its entries are ours");
	check(id, all, what);
	glob_t gl;
	int gr = glob("/proc/self/*", 0, NULL, &gl);
	check(id, gr == 0 && gl.gl_pathc > 5 && ours(gl.gl_pathv) && ours(gl.gl_pathv[0]),
	      "glob's path vector is ours");
	if (!gr)
		globfree(&gl);

	/* qsort of 1 MiB: glibc's merge sort takes a malloc'd scratch buffer */
	int nq = 1 << 18, *a = malloc(nq * sizeof(int)), sorted = a != NULL;
	for (int i = 0; a && i < nq; i++)
		a[i] = (int)((i * 2654435761u) >> 7);
	if (a)
		qsort(a, nq, sizeof(int), cmp_int);
	for (int i = 1; a && i < nq; i++)
		sorted &= a[i - 1] <= a[i];
	check(id, sorted, "qsort of 256k ints (scratch from malloc) sorts");
	free(a);

	/* handed to the next thread, which frees it */
	handoff[id] = strdup("handoff");
}

static void *thread_main(void *arg)
{
	int id = (int)(intptr_t)arg;
	suite(id);
	return NULL;
}

int main(int argc, char **argv)
{
	/* the ownership checks need the hooks: a one-tier host has them off */
	tap_rerun_with(argv, "TIERMALLOC_CONF", "always_hook:true");
	pin = (int (*)(const void *, size_t))dlsym(RTLD_DEFAULT, "tier_pin");
	unpin = (int (*)(const void *, size_t))dlsym(RTLD_DEFAULT, "tier_unpin");
	if (!ok(pin && unpin, "tiermalloc is in the process (tier_pin found)"))
		return done();
	threaded = argc > 1 && !strcmp(argv[1], "threads");

	/* a negative control: memory the program mapped itself is not ours */
	void *mine = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static char data[64];
	ok(mine != MAP_FAILED && !ours(mine) && !ours(data), "the program's own mmap and data are not ours");
	munmap(mine, 1 << 16);

	/* stdout's buffer (TAP went through it already) */
	ok(ours(stdout->_IO_buf_base), "printf: stdout's buffer is ours");

	void *h = dlopen("libanl.so.1", RTLD_NOW);
	ok(h && ours(h), "dlopen: the link map of a newly loaded library is ours");
	if (h)
		dlclose(h);

	if (!threaded) {
		suite(0);
		free(handoff[0]);
		return done();
	}
	pthread_t t[NTHREADS];
	int made = 0;
	for (int i = 0; i < NTHREADS; i++)
		made += pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)i) == 0;
	for (int i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	ok(made == NTHREADS, "pthread_create x %d", NTHREADS);
	/* each thread's strdup freed by another one (here: main) */
	int all = 1;
	for (int i = 0; i < made; i++) {
		all &= handoff[(i + 1) % made] && ours(handoff[(i + 1) % made]);
		free(handoff[(i + 1) % made]);
	}
	ok(all, "strings strdup'ed in threads are ours and freed by another thread");
	return done();
}
