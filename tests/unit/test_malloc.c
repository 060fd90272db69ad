/* glibc malloc-family semantics through tiermalloc (linked -ltiermalloc):
 * every function is ours, returns what glibc would, and serves memory
 * from extents our hooks mapped. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "../tap.h"
#include "tiermalloc.h"

/* Ours iff tiermalloc's registry knows the address. */
static int ours(const void *p)
{
	if (tier_pin(p, 1))
		return 0;
	return tier_unpin(p, 1) == 0;
}

static int from_lib(void *fn, const char *lib)
{
	Dl_info info;
	return dladdr(fn, &info) && info.dli_fname && strstr(info.dli_fname, lib);
}

static void *volatile sink;
/* volatile: keeps gcc from rejecting the deliberately impossible sizes */
static volatile size_t huge_n = SIZE_MAX / 8, quarter = SIZE_MAX / 4;

int main(int argc, char **argv)
{
	(void)argc;
	/* these check the hooks: on a one-tier host they are off by default */
	tap_rerun_with(argv, "TIERMALLOC_CONF", "always_hook:true");
	long page = sysconf(_SC_PAGESIZE);
	void *p, *q;

	ok(from_lib((void *)malloc, "libtiermalloc") && from_lib((void *)free, "libtiermalloc") &&
		   from_lib((void *)posix_memalign, "libtiermalloc"),
	   "malloc, free, posix_memalign resolve to libtiermalloc");

	p = malloc(0);
	q = malloc(0);
	ok(p && q && p != q, "malloc(0) returns unique non-NULL pointers");
	ok(ours(p), "malloc(0) memory is ours");
	free(p);
	free(q);
	free(NULL);

	errno = 0;
	p = malloc(SIZE_MAX / 2);
	ok(!p && errno == ENOMEM, "malloc(SIZE_MAX/2) fails with ENOMEM");

	errno = 0;
	p = calloc(huge_n, 16);
	ok(!p && errno == ENOMEM, "calloc overflow fails with ENOMEM");
	p = malloc(4000);
	memset(p, 0xab, 4000);
	free(p);
	unsigned char *c = calloc(1000, 4);
	int zero = 1;
	for (int i = 0; i < 4000; i++)
		zero &= c[i] == 0;
	ok(c && zero, "calloc memory is zeroed even when reused");
	free(c);
	c = calloc(1, 64 << 20);
	zero = c != NULL;
	for (size_t i = 0; zero && i < (64u << 20); i += 4096)
		zero &= c[i] == 0;
	ok(zero, "64 MiB calloc is zeroed");
	free(c);

	p = realloc(NULL, 100);
	ok(p && ours(p), "realloc(NULL, n) allocates");
	memset(p, 7, 100);
	q = realloc(p, 1 << 20);
	ok(q && ((char *)q)[99] == 7 && ((char *)q)[0] == 7, "realloc growth keeps the contents");
	errno = 0;
	p = realloc(q, SIZE_MAX / 2);
	ok(!p && errno == ENOMEM && ((char *)q)[50] == 7, "failed realloc: NULL, ENOMEM, block intact");
	errno = 0;
	p = realloc(q, 0);
	ok(p == NULL, "realloc(p, 0) frees and returns NULL (glibc)");
	p = realloc(NULL, 0);
	ok(p != NULL, "realloc(NULL, 0) returns a unique pointer");
	free(p);

	errno = 0;
	p = reallocarray(NULL, quarter, 8);
	ok(!p && errno == ENOMEM, "reallocarray overflow: ENOMEM");
	p = reallocarray(NULL, 10, 10);
	ok(p && malloc_usable_size(p) >= 100, "reallocarray(NULL, 10, 10)");
	free(p);

	p = (void *)0x1;
	ok(posix_memalign(&p, 3, 8) == EINVAL && p == (void *)0x1, "posix_memalign(3): EINVAL");
	ok(posix_memalign(&p, sizeof(void *) / 2, 8) == EINVAL, "posix_memalign(4): EINVAL");
	ok(posix_memalign(&p, 0, 8) == EINVAL, "posix_memalign(0): EINVAL");
	ok(posix_memalign(&p, 64, 100) == 0 && (uintptr_t)p % 64 == 0, "posix_memalign(64)");
	free(p);
	ok(posix_memalign(&p, 1 << 21, 10) == 0 && (uintptr_t)p % (1 << 21) == 0,
	   "posix_memalign(2 MiB)");
	free(p);
	q = (void *)0x1;
	ok(posix_memalign(&q, 64, SIZE_MAX / 2) == ENOMEM && q == (void *)0x1,
	   "posix_memalign too big: ENOMEM, memptr untouched");
	ok(posix_memalign(&p, 16, 0) == 0 && p, "posix_memalign size 0 gives a pointer");
	free(p);

	p = aligned_alloc(64, 100);
	ok(p && (uintptr_t)p % 64 == 0, "aligned_alloc(64, 100)");
	free(p);
	p = aligned_alloc(24, 10);
	ok(p && (uintptr_t)p % 32 == 0, "aligned_alloc(24): rounded up to 32 as glibc 2.36 does");
	free(p);
	errno = 0;
	p = aligned_alloc(SIZE_MAX / 2 + 2, 1);
	ok(!p && errno == EINVAL, "aligned_alloc with an impossible alignment: EINVAL");
	p = memalign(4096, 1);
	ok(p && (uintptr_t)p % 4096 == 0, "memalign(4096)");
	free(p);
	p = valloc(10);
	ok(p && (uintptr_t)p % (uintptr_t)page == 0, "valloc is page aligned");
	free(p);
	p = pvalloc(1);
	ok(p && (uintptr_t)p % (uintptr_t)page == 0 && malloc_usable_size(p) >= (size_t)page,
	   "pvalloc(1) gives a whole page");
	free(p);
	p = pvalloc(0);
	ok(p && malloc_usable_size(p) >= (size_t)page, "pvalloc(0) gives a page");
	free(p);
	errno = 0;
	p = pvalloc(SIZE_MAX - 10);
	ok(!p && errno == ENOMEM, "pvalloc overflow: ENOMEM");

	p = malloc(100);
	ok(malloc_usable_size(p) >= 100 && malloc_usable_size(NULL) == 0, "malloc_usable_size");
	free(p);

	/* libc-internal allocations come here too */
	char *s = strdup("tiermalloc");
	ok(s && ours(s), "strdup memory is ours");
	free(s);
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	ok(f && fgets(line, sizeof(line), f), "fopen + fgets work");
	fclose(f);
	char *a = NULL;
	size_t alen = 0;
	f = fopen("/proc/self/status", "r");
	ok(getline(&a, &alen, f) > 0 && ours(a), "getline buffer is ours");
	free(a);
	fclose(f);

	/* big blocks come from hook-mapped extents too */
	p = malloc(200 << 20);
	memset(p, 1, 200 << 20);
	ok(ours(p) && ours((char *)p + (200 << 20) - 1), "200 MiB block is ours end to end");
	free(p);
	sink = malloc(1);
	ok(malloc_trim(0) == 1, "malloc_trim purges");
	free(sink);

	size_t ext = 0, mapped = 0, bad = 1, len = sizeof(size_t);
	tier_mallctl("stats.extents", &ext, &len, NULL, 0);
	tier_mallctl("stats.mapped", &mapped, &len, NULL, 0);
	tier_mallctl("debug.check", &bad, &len, NULL, 0);
	ok(ext > 0 && mapped > (200u << 20), "stats: %zu extents, %zu bytes mapped", ext, mapped);
	ok(bad == 0, "registry mirrors the extents exactly (%zu inconsistencies)", bad);
	return done();
}
