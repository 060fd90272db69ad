/* The C++ operator new/delete family, defined here so that C++ code in the
 * process reaches tiermalloc rather than libstdc++'s or jemalloc's own
 * operators (Debian's jemalloc exports them too).  Written in C with the
 * Itanium-ABI names; allocation failure runs the new_handler loop and
 * throws std::bad_alloc through libstdc++ (this file is built with
 * -fexceptions so the exception unwinds through it). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

#include "jemalloc_api.h"

#define EXPORT __attribute__((visibility("default")))

typedef void (*new_handler_t)(void);
new_handler_t _ZSt15get_new_handlerv(void);             /* std::get_new_handler() */
__attribute__((noreturn)) void _ZSt17__throw_bad_allocv(void); /* throws std::bad_alloc */

static void *alloc_plain(size_t size)
{
	return tier_entry_malloc(size);
}

static void *alloc_aligned(size_t size, size_t align)
{
	return tier_memalign(align, size);
}

/* Try, then call the new_handler until it gives up; nothrow variants
 * return NULL when no handler is installed. */
static __attribute__((noinline)) void *new_impl(size_t size, size_t align, int nothrow)
{
	for (;;) {
		void *p = align ? alloc_aligned(size, align) : alloc_plain(size);
		if (p)
			return p;
		new_handler_t h = _ZSt15get_new_handlerv();
		if (!h) {
			if (nothrow)
				return NULL;
			_ZSt17__throw_bad_allocv();
		}
		h();
	}
}

static void delete_impl(void *p)
{
	tier_entry_free(p);
}

/* The size class must be computed as at allocation: alignments up to 16
 * were served by plain malloc, and size 0 as size 1. */
static void delete_sized(void *p, size_t size, size_t align)
{
	tier_entry_sized_free(p, size ? size : 1, align > 16 ? JE_MALLOCX_ALIGN(align) : 0);
}

/* operator new / new[]: below the size watch, jemalloc's own (a tail
 * call: its new_handler loop and throw are those of new_impl). */
static inline void *new_plain(size_t n)
{
	void *(*je)(size_t) = atomic_load_explicit(&tier_entry_new, memory_order_relaxed);
	if (TIER_LIKELY(je != NULL && n < tier_tls_watch))
		return je(n);
	return new_impl(n, 0, 0);
}

void *tier_cxx_new(size_t n) { return new_plain(n); }
EXPORT void *_Znwm(size_t n) __attribute__((alias("tier_cxx_new")));
EXPORT void *_Znam(size_t n) __attribute__((alias("tier_cxx_new")));
EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *t) { (void)t; return new_impl(n, 0, 1); }
EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *t) { (void)t; return new_impl(n, 0, 1); }
EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t a) { return new_impl(n, a, 0); }
EXPORT void *_ZnamSt11align_val_t(size_t n, size_t a) { return new_impl(n, a, 0); }
EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *t)
{
	(void)t;
	return new_impl(n, a, 1);
}
EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *t)
{
	(void)t;
	return new_impl(n, a, 1);
}

/* operator delete / delete[] */
EXPORT void _ZdlPv(void *p) { delete_impl(p); }
EXPORT void _ZdaPv(void *p) { delete_impl(p); }
EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *t) { (void)t; delete_impl(p); }
EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *t) { (void)t; delete_impl(p); }
EXPORT void _ZdlPvm(void *p, size_t n) { delete_sized(p, n, 0); }
EXPORT void _ZdaPvm(void *p, size_t n) { delete_sized(p, n, 0); }
EXPORT void _ZdlPvSt11align_val_t(void *p, size_t a) { (void)a; delete_impl(p); }
EXPORT void _ZdaPvSt11align_val_t(void *p, size_t a) { (void)a; delete_impl(p); }
EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a) { delete_sized(p, n, a); }
EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t a) { delete_sized(p, n, a); }
EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *t)
{
	(void)a, (void)t;
	delete_impl(p);
}
EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *t)
{
	(void)a, (void)t;
	delete_impl(p);
}
