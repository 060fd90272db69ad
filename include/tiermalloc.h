/*
 * tiermalloc: a malloc replacement with built-in memory tiering.
 *
 * Every allocation of a program that links -ltiermalloc (or runs with
 * LD_PRELOAD=libtiermalloc.so) is served by jemalloc from extents that
 * tiermalloc maps and binds to a memory tier (fast DRAM or slow CXL/far
 * memory).  This header is the control interface; the malloc family itself
 * needs no header beyond <stdlib.h>.
 */
#ifndef TIERMALLOC_H
#define TIERMALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TIERMALLOC_VERSION "0.1.0"

#if defined(__GNUC__)
#define TIERMALLOC_API __attribute__((visibility("default")))
#else
#define TIERMALLOC_API
#endif

/*
 * Read and/or write a named setting or statistic, with the calling
 * convention of jemalloc's mallctl(3):
 *   oldp/oldlenp: where to store the current value (*oldlenp must equal the
 *                 value's size; it is set to the size written);
 *   newp/newlen:  the new value for a writable name.
 * Returns 0, or ENOENT (unknown name), EINVAL (wrong size or bad value),
 * EPERM (name is read-only), EFAULT (the action failed).
 * Names are listed in README.md ("tier_mallctl names").
 */
TIERMALLOC_API int tier_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
                 size_t newlen);

/*
 * Print tiers, nodes and why, resident bytes per tier as the kernel reports
 * them, extents and placement decisions.  write_cb receives NUL-terminated
 * chunks (NULL: write to stderr).  opts: NULL or "" for text, "J" for JSON.
 * No allocation lock is held while write_cb runs, so it may allocate.
 */
TIERMALLOC_API void tier_stats_print(void (*write_cb)(void *cbopaque, const char *s),
                      void *cbopaque, const char *opts);

/*
 * Allocate size bytes on memory tier `tier` (0 = fastest) from that tier's
 * explicit arena.  The memory stays on that tier: it is never migrated.
 * Release it with free().  Returns NULL with errno ENOMEM on failure and
 * EINVAL for a tier that does not exist.
 */
TIERMALLOC_API void *tier_malloc(unsigned tier, size_t size);

/*
 * Pin [ptr, ptr+len) so that tiermalloc never migrates it (memory a device
 * or RDMA NIC has mapped).  Pins nest; tier_unpin undoes one tier_pin of the
 * same range.  Return 0, or EINVAL when the range is not tiermalloc memory
 * (or, for unpin, not pinned).
 */
TIERMALLOC_API int tier_pin(const void *ptr, size_t len);
TIERMALLOC_API int tier_unpin(const void *ptr, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TIERMALLOC_H */
