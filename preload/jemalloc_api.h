/* The few jemalloc entry points the interposer forwards to.  Declared here
 * rather than through <jemalloc/jemalloc.h>, whose malloc-family
 * declarations would clash with the definitions in this directory. */
#ifndef TIER_JEMALLOC_API_H
#define TIER_JEMALLOC_API_H

#include <stddef.h>
#include <strings.h>

#include "../src/thread.h"

void *mallocx(size_t size, int flags);
void *rallocx(void *ptr, size_t size, int flags);
size_t sallocx(const void *ptr, int flags);
void dallocx(void *ptr, int flags);
void sdallocx(void *ptr, size_t size, int flags);
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);

#define JE_MALLOCX_ALIGN(a) ((int)(ffsl((long)(a)) - 1))

/* interpose.c: the unflagged entry points, jemalloc's own once resolved. */
extern void *(*_Atomic tier_je_malloc)(size_t);
extern void (*_Atomic tier_je_free)(void *);
void *tier_memalign(size_t alignment, size_t size);
/* interpose.c: malloc and free, the re-entry check included (C++ too). */
void *tier_entry_malloc(size_t size);
void tier_entry_free(void *ptr);
void tier_entry_sized_free(void *ptr, size_t size, int flags);
void *tier_entry_calloc(size_t n, size_t size);
void *tier_entry_realloc(void *ptr, size_t size);
/* cxxnew.c: operator new and new[] (one function) */
void *tier_cxx_new(size_t n);
/* How many entry points jump straight to jemalloc (patch.c; stats). */
extern int tier_entry_direct;
/* jemalloc's operator new (NULL: none, or signal_safe): cxxnew.c's fast
 * path, below the size watch (arena.h). */
extern void *(*_Atomic tier_entry_new)(size_t);

#endif
