/* A reference for bench/startup/run.sh: plain jemalloc plus one mallctl
 * at start (preloaded after jemalloc), i.e. jemalloc's own cost of building
 * its control tree, which any process that installs extent hooks pays. */
#include <stddef.h>

int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);

__attribute__((constructor)) static void one_mallctl(void)
{
	unsigned narenas;
	size_t sz = sizeof(narenas);
	mallctl("opt.narenas", &narenas, &sz, NULL, 0);
}
