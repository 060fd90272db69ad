/* The entry points after the constructor (preload/patch.c): which jumps
 * reach jemalloc directly, read from the code itself, and glibc's rules
 * kept on every path.  A plain program run under LD_PRELOAD by
 * tests/host/entry.sh; argv[1] says what the settings should give:
 *   none    nothing watched: malloc, free, calloc, operator new start with
 *           a jump to jemalloc's own; realloc jumps there after its checks
 *   watch   the size watch (large_cache): free starts with the jump; malloc,
 *           calloc and realloc jump there after the watch; big buffers
 *           still reach the cache
 *   hooked  the extent hooks (always_hook): as watch, and a new thread's
 *           first allocation still comes from a hooked arena
 *   armed   signal_safe: no entry point jumps to jemalloc directly */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"

/* The target of a direct jump (e9 rel32) at p, or NULL. */
static const void *jmp_at(const unsigned char *p)
{
	if (p[0] != 0xe9)
		return NULL;
	int32_t rel;
	memcpy(&rel, p + 1, 4);
	return p + 5 + rel;
}

static bool starts_with_jump(const void *fn, const void *target)
{
	return target && jmp_at(fn) == target;
}

/* A direct jump to target in the first 64 bytes of fn. */
static bool jumps_to(const void *fn, const void *target)
{
	for (int i = 0; target && i < 64; i++)
		if (jmp_at((const unsigned char *)fn + i) == target)
			return true;
	return false;
}

static int (*pin)(const void *, size_t);
static int (*unpin)(const void *, size_t);

static void *thread_alloc(void *arg)
{
	(void)arg;
	return malloc(100);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "none";
	void *je = dlopen("libjemalloc.so.2", RTLD_NOLOAD | RTLD_LAZY);
	if (!ok(je != NULL, "jemalloc is loaded"))
		return 1;
	static const char *const names[] = {"malloc", "free", "calloc", "realloc", "_Znwm"};
	const void *ours[5], *theirs[5];
	for (int i = 0; i < 5; i++) {
		ours[i] = dlsym(RTLD_DEFAULT, names[i]);
		theirs[i] = dlsym(je, names[i]);
	}
	ok(ours[0] != theirs[0], "malloc is tiermalloc's symbol");
#if defined(__x86_64__)
	if (!strcmp(mode, "none")) {
		for (int i = 0; i < 5; i++)
			if (i != 3)
				ok(starts_with_jump(ours[i], theirs[i]),
				   "%s: its first instruction jumps to jemalloc's", names[i]);
		ok(jumps_to(ours[3], theirs[3]) && !starts_with_jump(ours[3], theirs[3]),
		   "realloc: jumps to jemalloc's after its checks");
	} else if (!strcmp(mode, "watch") || !strcmp(mode, "hooked")) {
		ok(starts_with_jump(ours[1], theirs[1]), "free: its first instruction jumps to jemalloc's");
		for (int i = 0; i < 4; i++)
			if (i != 1)
				ok(jumps_to(ours[i], theirs[i]) && !starts_with_jump(ours[i], theirs[i]),
				   "%s: jumps to jemalloc's after the size watch", names[i]);
		ok(!starts_with_jump(ours[4], theirs[4]), "operator new: keeps its watch");
	} else {
		for (int i = 0; i < 4; i++)
			ok(!jumps_to(ours[i], theirs[i]), "%s: no direct jump to jemalloc (armed)", names[i]);
	}
#endif
	/* glibc's rules, whichever path */
	void *a = malloc(0), *b = malloc(0);
	ok(a && b && a != b, "malloc(0) gives unique pointers");
	free(a);
	free(b);
	/* volatile: sizes the compiler cannot see */
	volatile size_t max = SIZE_MAX, big = SIZE_MAX / 2, past = (size_t)1 << 63;
	errno = 0;
	ok(malloc(max) == NULL && errno == ENOMEM, "malloc(SIZE_MAX): NULL, ENOMEM");
	errno = 0;
	ok(calloc(big, 4) == NULL && errno == ENOMEM, "calloc overflow: NULL, ENOMEM");
	char *p = malloc(16);
	strcpy(p, "kept");
	errno = 0;
	ok(realloc(p, past) == NULL && errno == ENOMEM && !strcmp(p, "kept"),
	   "realloc past jemalloc's largest class: NULL, ENOMEM, block kept");
	ok(realloc(p, 0) == NULL, "realloc(p, 0) frees, returns NULL");
	p = realloc(NULL, 5);
	ok(p != NULL, "realloc(NULL, n) allocates");
	p = realloc(p, 5000);
	ok(p != NULL, "realloc grows");
	free(p);
	free(NULL);
	int *z = calloc(1000, sizeof(int));
	bool zero = z != NULL;
	for (int i = 0; zero && i < 1000; i++)
		zero = z[i] == 0;
	ok(zero, "calloc zeroes");
	free(z);

	int (*ctl)(const char *, void *, size_t *, void *, size_t) = dlsym(RTLD_DEFAULT, "tier_mallctl");
	const char *conf = getenv("TIERMALLOC_CONF");
	if (!conf || !strstr(conf, "large_cache:0")) {
		/* the first big buffer sets the cache up; the next are checked */
		uint64_t before = 0, after = 0;
		size_t sz = sizeof(before);
		for (int i = 0; i < 3; i++) {
			void *buf = malloc(16 << 20);
			memset(buf, 1, 16 << 20);
			free(buf);
			if (i == 0)
				ctl("stats.large.checks", &before, &sz, NULL, 0);
		}
		ctl("stats.large.checks", &after, &sz, NULL, 0);
		ok(after == before + 2, "16 MiB buffers are checked by the large-buffer cache (%llu -> %llu)",
		   (unsigned long long)before, (unsigned long long)after);
	}
	if (!strcmp(mode, "hooked")) {
		pin = (int (*)(const void *, size_t))dlsym(RTLD_DEFAULT, "tier_pin");
		unpin = (int (*)(const void *, size_t))dlsym(RTLD_DEFAULT, "tier_unpin");
		pthread_t t;
		void *q = NULL;
		pthread_create(&t, NULL, thread_alloc, NULL);
		pthread_join(t, &q);
		ok(q && pin(q, 1) == 0 && unpin(q, 1) == 0,
		   "a new thread's first allocation comes from a hooked arena (tier_pin accepts it)");
		free(q);
	}
	return done();
}
