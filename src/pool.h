/* Internal memory for tiermalloc's own records: mmap-backed, never malloc,
 * so that extent hooks may use it while jemalloc holds its locks. */
#ifndef TIER_POOL_H
#define TIER_POOL_H

#include <stddef.h>

/* Zeroed memory of at least size bytes, or NULL. */
void *tier_pool_alloc(size_t size);
void tier_pool_free(void *p, size_t size);
/* Bytes the pool holds from the kernel (for stats). */
size_t tier_pool_mapped(void);
/* fork: keep the pool lock consistent across fork(). */
void tier_pool_prefork(void);
void tier_pool_postfork(void);

#endif
