#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "pool.h"
#include "registry.h"

struct tier_registry_stats tier_reg_stats;
CDS_LIST_HEAD(tier_registry_list);

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tier_mapping *limbo;
static uint64_t next_seq;

/* Address → mapping: block number (47-bit user VA >> 21 = 26 bits) split
 * 13/13.  Leaves (64 KiB) are mmapped on demand and never freed. */
#define LEAF_BITS 13
#define TOP_BITS 13
#define NLEAF ((size_t)1 << LEAF_BITS)
typedef _Atomic(struct tier_mapping *) leaf_t[NLEAF];
static _Atomic(leaf_t *) top[(size_t)1 << TOP_BITS];

static _Atomic(struct tier_mapping *) *slot(uintptr_t addr, bool create)
{
	uintptr_t b = addr >> TIER_BLOCK_SHIFT;
	size_t hi = b >> LEAF_BITS, lo = b & (NLEAF - 1);
	if (hi >= ((size_t)1 << TOP_BITS))
		return NULL;
	leaf_t *leaf = atomic_load_explicit(&top[hi], memory_order_acquire);
	if (!leaf && create) {
		leaf_t *n = mmap(NULL, sizeof(leaf_t), PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (n == MAP_FAILED)
			return NULL;
		leaf_t *expect = NULL;
		if (atomic_compare_exchange_strong(&top[hi], &expect, n))
			leaf = n;
		else {
			munmap(n, sizeof(leaf_t));
			leaf = expect;
		}
	}
	return leaf ? &(*leaf)[lo] : NULL;
}

struct tier_mapping *tier_registry_lookup(uintptr_t addr)
{
	_Atomic(struct tier_mapping *) *s = slot(addr, false);
	struct tier_mapping *m = s ? atomic_load_explicit(s, memory_order_acquire) : NULL;
	if (m && addr - m->base < m->span)
		return m;
	return NULL;
}

struct tier_mapping *tier_registry_add(uintptr_t base, size_t size, size_t span, unsigned arena,
                                       int pinned_tier, bool meta)
{
	size_t npages = span >> TIER_PAGE_SHIFT, nblocks = span >> TIER_BLOCK_SHIFT;
	size_t words = (npages + 63) / 64;
	size_t rec = sizeof(struct tier_mapping) + 2 * words * sizeof(uint64_t) +
		     nblocks * sizeof(struct tier_block);
	struct tier_mapping *m = tier_pool_alloc(rec);
	if (!m)
		return NULL;
	m->base = base;
	m->size = size;
	m->span = span;
	m->rec_size = rec;
	m->arena = arena;
	m->pinned_tier = meta ? 0 : pinned_tier;
	m->meta = meta;
	m->npages = (uint32_t)npages;
	m->nblocks = (uint32_t)nblocks;
	m->start = (_Atomic uint64_t *)(m + 1);
	m->commit = m->start + words;
	m->blocks = (struct tier_block *)(m->commit + words);
	atomic_store_explicit(&m->live, size, memory_order_relaxed);
	atomic_store_explicit(&m->start[0], 1, memory_order_relaxed); /* one extent: all of it */

	for (size_t off = 0; off < span; off += TIER_BLOCK) {
		_Atomic(struct tier_mapping *) *s = slot(base + off, true);
		if (!s) { /* cannot index it: undo */
			for (size_t o = 0; o < off; o += TIER_BLOCK)
				atomic_store(slot(base + o, false), NULL);
			tier_pool_free(m, rec);
			return NULL;
		}
		atomic_store_explicit(s, m, memory_order_release);
	}
	pthread_mutex_lock(&reg_lock);
	m->seq = next_seq++;
	cds_list_add_tail_rcu(&m->link, &tier_registry_list);
	pthread_mutex_unlock(&reg_lock);
	atomic_fetch_add(&tier_reg_stats.mappings, 1);
	atomic_fetch_add(&tier_reg_stats.mapped, size);
	atomic_fetch_add(&tier_reg_stats.extents, 1);
	return m;
}

void tier_registry_remove(struct tier_mapping *m)
{
	for (size_t off = 0; off < m->span; off += TIER_BLOCK) {
		_Atomic(struct tier_mapping *) *s = slot(m->base + off, false);
		if (s)
			atomic_store_explicit(s, NULL, memory_order_release);
	}
	pthread_mutex_lock(&reg_lock);
	cds_list_del_rcu(&m->link);
	m->limbo_next = limbo;
	limbo = m;
	pthread_mutex_unlock(&reg_lock);
	atomic_fetch_sub(&tier_reg_stats.mappings, 1);
	atomic_fetch_sub(&tier_reg_stats.mapped, m->size);
}

size_t tier_registry_reclaim(void (*gone)(struct tier_mapping *m, void *ctx), void *ctx)
{
	pthread_mutex_lock(&reg_lock);
	struct tier_mapping *list = limbo;
	limbo = NULL;
	pthread_mutex_unlock(&reg_lock);
	if (!list)
		return 0;
	synchronize_rcu();
	size_t n = 0;
	for (struct tier_mapping *m = list; m; m = m->limbo_next)
		m->gone = true;
	if (gone)
		for (struct tier_mapping *m = list; m; m = m->limbo_next)
			gone(m, ctx);
	while (list) {
		struct tier_mapping *next = list->limbo_next;
		tier_pool_free(list, list->rec_size);
		list = next;
		n++;
	}
	return n;
}

struct tier_mapping *tier_registry_from_seq(uint64_t seq)
{
	struct tier_mapping *m;
	tier_registry_for_each(m)
		if (m->seq >= seq)
			return m;
	return NULL;
}

struct tier_mapping *tier_registry_next(struct tier_mapping *m)
{
	struct cds_list_head *n = rcu_dereference(m->link.next);
	return n == &tier_registry_list ? NULL : cds_list_entry(n, struct tier_mapping, link);
}

static uint64_t range_mask(size_t from, size_t to) /* bits [from, to) of one word */
{
	uint64_t hi = to >= 64 ? ~0ull : ((1ull << to) - 1);
	return hi & ~((1ull << from) - 1);
}

enum bits_op { BITS_SET, BITS_CLEAR, BITS_COUNT };

/* Walk bits [from, from+n) word by word; returns how many changed (set,
 * clear) or are set (count). */
static size_t bits_apply(_Atomic uint64_t *w, size_t from, size_t n, enum bits_op op)
{
	size_t r = 0;
	for (size_t i = from; i < from + n;) {
		size_t word = i / 64, b = i % 64, e = b + (from + n - i) < 64 ? b + (from + n - i) : 64;
		uint64_t mask = range_mask(b, e), v;
		switch (op) {
		case BITS_SET:
			v = atomic_fetch_or_explicit(&w[word], mask, memory_order_relaxed);
			r += (size_t)__builtin_popcountll(mask & ~v);
			break;
		case BITS_CLEAR:
			v = atomic_fetch_and_explicit(&w[word], ~mask, memory_order_relaxed);
			r += (size_t)__builtin_popcountll(mask & v);
			break;
		case BITS_COUNT:
			v = atomic_load_explicit(&w[word], memory_order_relaxed);
			r += (size_t)__builtin_popcountll(mask & v);
			break;
		}
		i += e - b;
	}
	return r;
}

size_t tier_bits_set(_Atomic uint64_t *w, size_t from, size_t n) { return bits_apply(w, from, n, BITS_SET); }
size_t tier_bits_clear(_Atomic uint64_t *w, size_t from, size_t n) { return bits_apply(w, from, n, BITS_CLEAR); }
size_t tier_bits_count(_Atomic uint64_t *w, size_t from, size_t n) { return bits_apply(w, from, n, BITS_COUNT); }

bool tier_bit_test(_Atomic uint64_t *w, size_t i)
{
	return atomic_load_explicit(&w[i / 64], memory_order_relaxed) >> (i % 64) & 1;
}

size_t tier_registry_check(void)
{
	size_t bad = 0, extents = 0, committed = 0, mapped = 0, mappings = 0;
	struct tier_mapping *m;
	rcu_read_lock();
	tier_registry_for_each(m) {
		mappings++;
		mapped += m->size;
		extents += tier_bits_count(m->start, 0, m->npages);
		size_t cpages = tier_bits_count(m->commit, 0, m->npages);
		committed += cpages << TIER_PAGE_SHIFT;
		/* nothing may be committed beyond what jemalloc was given */
		if (cpages != tier_bits_count(m->commit, 0, m->size >> TIER_PAGE_SHIFT))
			bad++;
		for (uint32_t b = 0; b < m->nblocks; b++) {
			uint32_t s = atomic_load(&m->blocks[b].state);
			size_t pages = tier_bits_count(m->commit, (size_t)b * TIER_PAGES_PER_BLOCK,
						       TIER_PAGES_PER_BLOCK);
			if ((s & TIER_BS_PAGES) != pages || (pages == 0) != (TIER_BS_TIER(s) < 0))
				bad++;
		}
	}
	rcu_read_unlock();
	bad += extents != atomic_load(&tier_reg_stats.extents);
	bad += committed != atomic_load(&tier_reg_stats.committed);
	bad += mapped != atomic_load(&tier_reg_stats.mapped);
	bad += mappings != atomic_load(&tier_reg_stats.mappings);
	return bad;
}

void tier_registry_prefork(void) { pthread_mutex_lock(&reg_lock); }
void tier_registry_postfork(void) { pthread_mutex_unlock(&reg_lock); }
