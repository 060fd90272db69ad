/* A stand-in for libibverbs and the CUDA runtime: exports their
 * registration calls with the real signatures, records what it was asked,
 * and what tiermalloc said was pinned at that moment (so a test can tell
 * that the range was pinned before the "device" mapped it and still
 * pinned while it let go).  Like the real libibverbs, ibv_reg_mr goes
 * through ibv_reg_mr_iova2 (a call through the PLT, so interposed). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "../../preload/devabi.h"

#define NMR 64
static struct ibv_mr mrs[NMR];
static int used[NMR];
static int calls;
static long pinned_seen = -1;

int fakedev_calls(void) { return calls; }
long fakedev_pinned_seen(void) { return pinned_seen; }

/* tiermalloc's count of pinned blocks now (-1: no tiermalloc) */
static long pinned_now(void)
{
	int (*ctl)(const char *, void *, size_t *, void *, size_t) =
		(int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "tier_mallctl");
	size_t v, len = sizeof(v);
	if (!ctl || ctl("stats.device.pinned_blocks", &v, &len, NULL, 0))
		return -1;
	return (long)v;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned access)
{
	(void)iova;
	calls++;
	pinned_seen = pinned_now();
	if (access == 0xdead) { /* the test's way to make a registration fail */
		errno = EINVAL;
		return NULL;
	}
	for (int i = 0; i < NMR; i++)
		if (!used[i]) {
			used[i] = 1;
			mrs[i] = (struct ibv_mr){.pd = pd, .addr = addr, .length = length, .lkey = (uint32_t)i};
			return &mrs[i];
		}
	errno = ENOMEM;
	return NULL;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned)access);
}

struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	calls++;
	pinned_seen = pinned_now();
	if (!mr || mr < mrs || mr >= mrs + NMR || !used[mr - mrs])
		return EINVAL;
	used[mr - mrs] = 0;
	return 0;
}

int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length, int access)
{
	(void)pd, (void)access;
	calls++;
	pinned_seen = pinned_now();
	if (!mr || mr < mrs || mr >= mrs + NMR || !used[mr - mrs])
		return -1;
	if (flags & 1) {
		mr->addr = addr;
		mr->length = length;
	}
	return 0;
}

int cudaHostRegister(void *ptr, size_t size, unsigned flags)
{
	(void)ptr, (void)size;
	calls++;
	pinned_seen = pinned_now();
	return flags == 0xdead ? 712 /* cudaErrorHostMemoryAlreadyRegistered */ : 0;
}

int cudaHostUnregister(void *ptr)
{
	(void)ptr;
	calls++;
	pinned_seen = pinned_now();
	return 0;
}
