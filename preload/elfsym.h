/* Symbols of a loaded library, read from its own tables (elfsym.c). */
#ifndef TIER_ELFSYM_H
#define TIER_ELFSYM_H

/* In the loaded object that defines `anchor` as the address `at` (one of
 * its symbols we are bound to), the addresses of names[0..n-1], NULL where
 * one is not defined.  Returns 0, or -1 if no loaded object matches (the
 * caller then asks the dynamic linker). */
int tier_elfsym_find(const char *anchor, const void *at, const char *const *names, void **out, int n);

#endif
