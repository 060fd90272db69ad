/* Static branches in the entry points: once boot has settled what the
 * process watches (start-up settings only: signal_safe, large_cache, the
 * extent hooks), the exported malloc family need not ask again at every
 * call.  Where nothing is watched, malloc's first instruction becomes a
 * direct jump to jemalloc's malloc; where only the size watch is, the
 * indirect jump that follows it becomes a direct one.
 *
 * Not an IFUNC: glibc relocates libc before a preloaded library, binds
 * libc's references to malloc and free eagerly (GLOB_DAT), and so calls
 * an IFUNC resolver of ours before our own relocation, printing "Relink
 * libc.so.6 with libtiermalloc.so for IFUNC symbol malloc" in every
 * program (glibc 2.36; liburcu-bp, linked BIND_NOW, does the same for
 * calloc).
 *
 * The rewrite is made only while the process has one thread (the
 * constructor, before main): no other thread can be between the bytes
 * it changes.  The pages stay executable throughout (read-write-execute
 * for the two system calls); where the kernel refuses that (SELinux
 * execmod, PaX), or a target is out of a jump's reach, the entry points
 * keep their indirect jumps, which serve the same.  The pages written
 * become private copies: 4 KiB each of RSS. */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <unistd.h>

#include "../src/tier.h"
#include "patch.h"

#define SPAN 64 /* bytes of a function searched for its indirect jump */

/* Where the rewrite goes in p->fn and how long it is, or NULL. */
TIER_STARTUP static unsigned char *site_of(const struct tier_patch *p, size_t *len)
{
	unsigned char *f = p->fn;
	if (!p->slot) {
		*len = 5;
		return f;
	}
	/* jmp *disp32(%rip): ff 25, its target slot = next instruction + disp */
	for (size_t i = 0; i + 6 <= SPAN; i++) {
		if (f[i] != 0xff || f[i + 1] != 0x25)
			continue;
		int32_t disp;
		memcpy(&disp, f + i + 2, 4);
		if ((uintptr_t)(f + i + 6) + (intptr_t)disp == (uintptr_t)p->slot) {
			*len = 6;
			return f + i;
		}
	}
	return NULL;
}

TIER_STARTUP int tier_patch_apply(const struct tier_patch *p, int n)
{
#if defined(__x86_64__)
	if (!__libc_single_threaded)
		return 0;
	unsigned char *site[16];
	size_t len[16];
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	if (n > 16)
		n = 16;
	for (int i = 0; i < n; i++) {
		site[i] = p[i].target ? site_of(&p[i], &len[i]) : NULL;
		/* an int3 there is a debugger's breakpoint on the function,
		 * whose saved byte it would write back into our jump */
		if (!site[i] || site[i][0] == 0xcc) {
			site[i] = NULL;
			continue;
		}
		/* e9 rel32: the target within 2 GiB of the jump */
		intptr_t rel = (intptr_t)p[i].target - (intptr_t)(site[i] + 5);
		if (rel != (int32_t)rel) {
			site[i] = NULL;
			continue;
		}
		if ((uintptr_t)site[i] < lo)
			lo = (uintptr_t)site[i];
		if ((uintptr_t)site[i] + len[i] > hi)
			hi = (uintptr_t)site[i] + len[i];
	}
	if (lo >= hi)
		return 0;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = lo & ~(page - 1), b = (hi + page - 1) & ~(page - 1);
	if (mprotect((void *)a, b - a, PROT_READ | PROT_WRITE | PROT_EXEC))
		return 0;
	int done = 0;
	for (int i = 0; i < n; i++) {
		if (!site[i])
			continue;
		int32_t rel = (int32_t)((intptr_t)p[i].target - (intptr_t)(site[i] + 5));
		unsigned char code[6] = {0xe9, 0, 0, 0, 0, 0x90}; /* jmp rel32; nop */
		memcpy(code + 1, &rel, 4);
		memcpy(site[i], code, len[i]);
		done++;
	}
	mprotect((void *)a, b - a, PROT_READ | PROT_EXEC);
	return done;
#else
	(void)p, (void)n;
	return 0;
#endif
}
