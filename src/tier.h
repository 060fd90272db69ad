/* Internal declarations shared by tiermalloc's modules. */
#ifndef TIER_INTERNAL_H
#define TIER_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define TIER_MAX_NODES 64          /* node ids 0..63: masks fit a uint64_t */
#define TIER_MAX_TIERS 8
#define TIER_PAGE_SHIFT 12
#define TIER_PAGE ((size_t)1 << TIER_PAGE_SHIFT)
/* Heat, placement and migration work on 2 MiB (THP-sized) blocks. */
#define TIER_BLOCK_SHIFT 21
#define TIER_BLOCK ((size_t)1 << TIER_BLOCK_SHIFT)
#define TIER_PAGES_PER_BLOCK (TIER_BLOCK / TIER_PAGE)

typedef uint64_t tier_nodemask_t;

#define TIER_LIKELY(x) __builtin_expect(!!(x), 1)
#define TIER_UNLIKELY(x) __builtin_expect(!!(x), 0)

static inline size_t tier_align_up(size_t x, size_t a) { return (x + a - 1) & ~(a - 1); }
static inline uintptr_t tier_align_down(uintptr_t x, size_t a) { return x & ~(uintptr_t)(a - 1); }
/* Code every process runs at start or exit, tiered or not: grouped at the
 * head of the text (the linker puts .text.startup before .text), in the
 * window of pages the kernel maps around the first fault there anyway,
 * so that a process maps as few of the library's pages as it can. */
#define TIER_STARTUP __attribute__((section(".text.startup")))
/* Zero-initialised state every process writes at start: in .data, whose
 * pages the dynamic linker has written (relocations) before we run, not in
 * .bss, where each page first written costs a fault (~20 us in the PVM
 * guest the bench runs in: 5 of them were 2% of /bin/true's start). */
#define TIER_BOOT_DATA __attribute__((section(".data.tier_boot")))

/* Bits set, for start-up code: __builtin_popcountll without -mpopcnt calls
 * libgcc's __popcountdi2, linked at the end of the text (Makefile.am). */
static inline int tier_bits64(uint64_t x)
{
	int n = 0;
	for (; x; x &= x - 1)
		n++;
	return n;
}

/* Nanoseconds on clock c (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID). */
static inline uint64_t tier_clock_ns(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* log.c: one line to stderr, prefixed "tiermalloc: "; never allocates. */
void tier_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Format a node mask as a list ("0-1,3") into buf; returns buf. */
char *tier_nodemask_str(tier_nodemask_t m, char *buf, size_t len);
/* Parse "0-1,3" / "0+2" into a mask; 0 on success, -1 on error. */
int tier_nodemask_parse(const char *s, size_t len, tier_nodemask_t *out);

#endif
