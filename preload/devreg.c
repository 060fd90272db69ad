/* Device registration calls, interposed: the ranges a program registers
 * with an RDMA NIC (libibverbs: ibv_reg_mr, ibv_reg_mr_iova,
 * ibv_reg_mr_iova2, ibv_rereg_mr, ibv_dereg_mr) or a GPU (CUDA runtime:
 * cudaHostRegister, cudaHostUnregister) are pinned with tier_pin before the
 * device maps them and unpinned after the device let go, so tiermalloc
 * never migrates memory under a device.
 *
 * These definitions come before the libraries' own in symbol lookup (as
 * the malloc family does); each forwards to the next definition, found
 * with dlsym(RTLD_NEXT).  A program that does not link those libraries
 * never calls them: it pays nothing.  Called with no library behind them
 * (a program probing for the symbol with dlsym(RTLD_DEFAULT)), they fail
 * the way each API fails: ibv_reg_mr* return NULL with errno ENOSYS,
 * ibv_dereg_mr returns ENOSYS, ibv_rereg_mr IBV_REREG_MR_ERR_INPUT (-1)
 * with errno ENOSYS, cudaHost* cudaErrorUnknown (999).
 *
 * Only memory of ours is pinned (tier_pin refuses the rest): foreign
 * ranges pass through untouched.  Registrations are remembered in a fixed
 * table (no malloc here, the device libraries may call us from anywhere);
 * when it is full, a registration passes through unpinned and counts as
 * untracked.  libibverbs' own ibv_reg_mr calls ibv_reg_mr_iova2 inside:
 * a per-thread depth keeps that from pinning twice. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "../include/tiermalloc.h"
#include "../src/pin.h"

#define EXPORT __attribute__((visibility("default")))

#include "devabi.h"

/* Registrations pinned now: key (the MR, or the CUDA pointer) -> range. */
#define DEVREG_MAX 4096
static struct reg {
	const void *key;
	const void *addr;
	size_t len;
} regs[DEVREG_MAX];
static pthread_mutex_t regs_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int depth __attribute__((tls_model("initial-exec")));

/* fork while another thread registers: the child must not inherit the
 * lock held.  Registered at the first registration, after tiermalloc's
 * own handlers: prepare handlers run last-registered first, so the
 * table's lock is taken before the pin lock it nests. */
static void regs_prefork(void) { pthread_mutex_lock(&regs_lock); }
static void regs_parent(void) { pthread_mutex_unlock(&regs_lock); }
static void regs_child(void) { pthread_mutex_init(&regs_lock, NULL); }
static void regs_atfork(void) { pthread_atfork(regs_prefork, regs_parent, regs_child); }
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* The next definition of `name` (the library's), looked up once. */
static void *next(_Atomic(void *) *cache, const char *name)
{
	void *f = atomic_load_explicit(cache, memory_order_acquire);
	if (!f) {
		f = dlsym(RTLD_NEXT, name);
		if (f)
			atomic_store_explicit(cache, f, memory_order_release);
		else
			atomic_fetch_add(&tier_devreg_stats.missing, 1);
	}
	return f;
}
#define NEXT(type, name)                                   \
	static _Atomic(void *) cache_;                     \
	type real_ = (type)next(&cache_, name)

/* Before the device maps [addr, addr+len): pin it if it is ours and a
 * slot is free.  Returns the slot reserved (key set later), or -1. */
static int pin_before(const void *addr, size_t len)
{
	atomic_fetch_add(&tier_devreg_stats.calls, 1);
	if (!addr || !len)
		return -1;
	pthread_once(&atfork_once, regs_atfork);
	pthread_mutex_lock(&regs_lock);
	int slot = -1;
	for (int i = 0; i < DEVREG_MAX; i++)
		if (!regs[i].addr) {
			slot = i;
			break;
		}
	if (tier_pin(addr, len)) { /* not ours (or not wholly): not our business */
		atomic_fetch_add(&tier_devreg_stats.foreign, 1);
		slot = -1;
	} else if (slot < 0) { /* ours, but no room to remember it: leave it */
		tier_unpin(addr, len);
		atomic_fetch_add(&tier_devreg_stats.untracked, 1);
	} else {
		regs[slot] = (struct reg){.key = NULL, .addr = addr, .len = len};
	}
	pthread_mutex_unlock(&regs_lock);
	return slot;
}

/* After the call: keep the slot under `key` when it succeeded, else undo. */
static void pin_after(int slot, const void *key, bool ok)
{
	if (slot < 0)
		return;
	pthread_mutex_lock(&regs_lock);
	if (ok) {
		regs[slot].key = key;
		atomic_fetch_add(&tier_devreg_stats.pinned, 1);
		atomic_fetch_add(&tier_devreg_stats.live, 1);
	} else {
		tier_unpin(regs[slot].addr, regs[slot].len);
		regs[slot] = (struct reg){0};
	}
	pthread_mutex_unlock(&regs_lock);
}

/* Before the device lets go of `key`: detach its slot (a registration
 * made meanwhile may reuse the key's address).  Returns it, or -1. */
static int detach(const void *key)
{
	int slot = -1;
	pthread_mutex_lock(&regs_lock);
	for (int i = 0; i < DEVREG_MAX && slot < 0; i++)
		if (regs[i].addr && regs[i].key == key) {
			regs[i].key = NULL;
			slot = i;
		}
	pthread_mutex_unlock(&regs_lock);
	return slot;
}

/* After: unpin the range when the device let go, else attach it again. */
static void unpin_after(int slot, const void *key, bool ok)
{
	if (slot < 0)
		return;
	pthread_mutex_lock(&regs_lock);
	if (ok) {
		tier_unpin(regs[slot].addr, regs[slot].len);
		regs[slot] = (struct reg){0};
		atomic_fetch_add(&tier_devreg_stats.unpinned, 1);
		atomic_fetch_sub(&tier_devreg_stats.live, 1);
	} else {
		regs[slot].key = key;
	}
	pthread_mutex_unlock(&regs_lock);
}

/* ------------------------------------------------------------ libibverbs */

typedef struct ibv_mr *(*reg_mr_fn)(struct ibv_pd *, void *, size_t, int);
typedef struct ibv_mr *(*reg_iova_fn)(struct ibv_pd *, void *, size_t, uint64_t, int);
typedef struct ibv_mr *(*reg_iova2_fn)(struct ibv_pd *, void *, size_t, uint64_t, unsigned);
typedef int (*dereg_fn)(struct ibv_mr *);
typedef int (*rereg_fn)(struct ibv_mr *, int, struct ibv_pd *, void *, size_t, int);

/* The three ways of registering a memory region: the range pinned before
 * the library sees it, the pin kept only if it took the registration;
 * calls the library makes to its own entry points pass straight through. */
#define REGISTER_MR(...)                                                \
	do {                                                            \
		if (!real_) {                                           \
			errno = ENOSYS;                                 \
			return NULL;                                    \
		}                                                       \
		if (depth)                                              \
			return real_(__VA_ARGS__);                      \
		int slot_ = pin_before(addr, length);                   \
		depth++;                                                \
		struct ibv_mr *mr_ = real_(__VA_ARGS__);                \
		depth--;                                                \
		pin_after(slot_, mr_, mr_ != NULL);                     \
		return mr_;                                             \
	} while (0)

EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	NEXT(reg_mr_fn, "ibv_reg_mr");
	REGISTER_MR(pd, addr, length, access);
}

EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				      int access)
{
	NEXT(reg_iova_fn, "ibv_reg_mr_iova");
	REGISTER_MR(pd, addr, length, iova, access);
}

EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				       unsigned access)
{
	NEXT(reg_iova2_fn, "ibv_reg_mr_iova2");
	REGISTER_MR(pd, addr, length, iova, access);
}

EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	NEXT(dereg_fn, "ibv_dereg_mr");
	if (!real_)
		return ENOSYS;
	if (depth)
		return real_(mr);
	int slot = detach(mr);
	depth++;
	int r = real_(mr); /* frees mr */
	depth--;
	unpin_after(slot, mr, r == 0);
	return r;
}

/* A new translation moves the registration to [addr, addr+length): pin
 * the new range first, unpin the old one once the device took the new. */
EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
			int access)
{
	NEXT(rereg_fn, "ibv_rereg_mr");
	if (!real_) {
		errno = ENOSYS;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if (depth || !(flags & IBV_REREG_MR_CHANGE_TRANSLATION))
		return real_(mr, flags, pd, addr, length, access);
	int old = detach(mr);
	int slot = pin_before(addr, length);
	depth++;
	int r = real_(mr, flags, pd, addr, length, access);
	depth--;
	unpin_after(old, mr, r == 0); /* the old range */
	pin_after(slot, mr, r == 0);
	return r;
}

/* ------------------------------------------------------------ CUDA runtime */

typedef cudaError_t (*host_reg_fn)(void *, size_t, unsigned);
typedef cudaError_t (*host_unreg_fn)(void *);

EXPORT cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned flags)
{
	NEXT(host_reg_fn, "cudaHostRegister");
	if (!real_)
		return CUDA_ERROR_UNKNOWN_;
	if (depth)
		return real_(ptr, size, flags);
	int slot = pin_before(ptr, size);
	depth++;
	cudaError_t r = real_(ptr, size, flags);
	depth--;
	pin_after(slot, ptr, r == CUDA_SUCCESS_);
	return r;
}

EXPORT cudaError_t cudaHostUnregister(void *ptr)
{
	NEXT(host_unreg_fn, "cudaHostUnregister");
	if (!real_)
		return CUDA_ERROR_UNKNOWN_;
	if (depth)
		return real_(ptr);
	int slot = detach(ptr);
	depth++;
	cudaError_t r = real_(ptr);
	depth--;
	unpin_after(slot, ptr, r == CUDA_SUCCESS_);
	return r;
}
