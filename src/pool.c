/* Power-of-two size classes from 64 B to 64 KiB carved from 1 MiB chunks;
 * larger requests get their own mapping.  Freed blocks go to per-class free
 * lists.  Callers pass the size back on free, so no headers are kept. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "pool.h"
#include "tier.h"

#define MIN_SHIFT 6
#define MAX_SHIFT 16
#define NCLASSES (MAX_SHIFT - MIN_SHIFT + 1)
#define CHUNK ((size_t)1 << 20)

struct free_block {
	struct free_block *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct free_block *free_list[NCLASSES];
static char *chunk_cur, *chunk_end;
static _Atomic size_t mapped;

static void *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	atomic_fetch_add_explicit(&mapped, len, memory_order_relaxed);
	return p;
}

static int size_class(size_t size)
{
	int c = 0;
	while (((size_t)1 << (c + MIN_SHIFT)) < size)
		c++;
	return c;
}

void *tier_pool_alloc(size_t size)
{
	if (size > ((size_t)1 << MAX_SHIFT))
		return map(tier_align_up(size, TIER_PAGE));
	int c = size_class(size);
	size_t csize = (size_t)1 << (c + MIN_SHIFT);
	void *p = NULL;
	pthread_mutex_lock(&lock);
	if (free_list[c]) {
		struct free_block *b = free_list[c];
		free_list[c] = b->next;
		p = b;
	} else {
		/* no arithmetic on chunk_cur while it is NULL (first call):
		 * undefined behaviour, found by tests/fuzz (UBSan) */
		if (!chunk_cur || (size_t)(chunk_end - chunk_cur) < csize) {
			/* the tail of the old chunk (smaller than csize) is dropped */
			char *n = map(CHUNK);
			if (n) {
				chunk_cur = n;
				chunk_end = n + CHUNK;
			}
		}
		if (chunk_cur && (size_t)(chunk_end - chunk_cur) >= csize) {
			p = chunk_cur;
			chunk_cur += csize;
		}
	}
	pthread_mutex_unlock(&lock);
	if (p)
		memset(p, 0, csize);
	return p;
}

void tier_pool_free(void *p, size_t size)
{
	if (!p)
		return;
	if (size > ((size_t)1 << MAX_SHIFT)) {
		size_t len = tier_align_up(size, TIER_PAGE);
		munmap(p, len);
		atomic_fetch_sub_explicit(&mapped, len, memory_order_relaxed);
		return;
	}
	int c = size_class(size);
	struct free_block *b = p;
	pthread_mutex_lock(&lock);
	b->next = free_list[c];
	free_list[c] = b;
	pthread_mutex_unlock(&lock);
}

size_t tier_pool_mapped(void)
{
	return atomic_load_explicit(&mapped, memory_order_relaxed);
}

void tier_pool_prefork(void) { pthread_mutex_lock(&lock); }
void tier_pool_postfork(void) { pthread_mutex_unlock(&lock); }
