/* jemalloc's own entry points, found in its GNU hash table by walking the
 * dynamic linker's list of loaded objects (_r_debug), instead of dlopen
 * and dlsym: those run code of the dynamic linker that nothing else runs
 * at start, whose first pages fault (each ~20 us in the PVM guest the
 * bench runs in: dlopen(RTLD_NOLOAD) measured ~30 us there).  The tables
 * read here were read by the dynamic linker when it bound our references
 * to jemalloc, so they are resident.  Only unversioned lookups: jemalloc
 * defines one of each name. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "../src/tier.h"
#include "elfsym.h"

struct tables {
	uintptr_t base;
	const uint32_t *gnu_hash;
	const ElfW(Sym) *symtab;
	const char *strtab;
};

/* A dynamic entry's address: glibc relocates them in place where the
 * dynamic section is writable, not where it is read-only. */
TIER_STARTUP static uintptr_t dyn_ptr(uintptr_t base, ElfW(Addr) v)
{
	return v < base ? base + v : v;
}

TIER_STARTUP static int tables_of(const struct link_map *l, struct tables *t)
{
	memset(t, 0, sizeof(*t));
	t->base = l->l_addr;
	if (!l->l_ld)
		return -1;
	for (const ElfW(Dyn) *d = l->l_ld; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_GNU_HASH)
			t->gnu_hash = (const uint32_t *)dyn_ptr(t->base, d->d_un.d_ptr);
		else if (d->d_tag == DT_SYMTAB)
			t->symtab = (const ElfW(Sym) *)dyn_ptr(t->base, d->d_un.d_ptr);
		else if (d->d_tag == DT_STRTAB)
			t->strtab = (const char *)dyn_ptr(t->base, d->d_un.d_ptr);
	}
	return t->gnu_hash && t->symtab && t->strtab ? 0 : -1;
}

/* The GNU hash table: a bloom filter, buckets, and chains of hashes whose
 * low bit ends a chain (the ELF gABI extension as binutils writes it). */
TIER_STARTUP static void *lookup(const struct tables *t, const char *name)
{
	uint32_t h = 5381;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = h * 33 + *c;
	uint32_t nbuckets = t->gnu_hash[0], symoffset = t->gnu_hash[1];
	uint32_t bloom_size = t->gnu_hash[2], bloom_shift = t->gnu_hash[3];
	const ElfW(Addr) *bloom = (const ElfW(Addr) *)(t->gnu_hash + 4);
	const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
	const uint32_t *chain = buckets + nbuckets;
	if (!nbuckets || !bloom_size)
		return NULL;
	const unsigned bits = sizeof(ElfW(Addr)) * 8;
	ElfW(Addr) word = bloom[(h / bits) % bloom_size];
	if (!(word >> (h % bits) & 1) || !(word >> ((h >> bloom_shift) % bits) & 1))
		return NULL;
	uint32_t i = buckets[h % nbuckets];
	if (i < symoffset)
		return NULL;
	for (;; i++) {
		uint32_t ch = chain[i - symoffset];
		const ElfW(Sym) *s = &t->symtab[i];
		if ((ch | 1) == (h | 1) && s->st_shndx != SHN_UNDEF && s->st_value &&
		    !strcmp(t->strtab + s->st_name, name))
			return (void *)(t->base + s->st_value);
		if (ch & 1)
			return NULL;
	}
}

TIER_STARTUP int tier_elfsym_find(const char *anchor, const void *at, const char *const *names, void **out, int n)
{
	for (const struct link_map *l = _r_debug.r_map; l; l = l->l_next) {
		struct tables t;
		if (tables_of(l, &t) || lookup(&t, anchor) != at)
			continue;
		for (int i = 0; i < n; i++)
			out[i] = lookup(&t, names[i]);
		return 0;
	}
	return -1;
}
