/* The parts of libibverbs' and the CUDA runtime's ABI that the wrapped
 * registration calls use (rdma-core verbs.h, CUDA runtime): their headers
 * are not needed to build the wrappers (preload/devreg.c) or the stand-in
 * device library and its checks (tests/dev). */
#ifndef TIER_DEVABI_H
#define TIER_DEVABI_H

#include <stddef.h>
#include <stdint.h>

struct ibv_pd;
struct ibv_mr {
	void *context;
	struct ibv_pd *pd;
	void *addr;
	size_t length;
	uint32_t handle, lkey, rkey;
};
#define IBV_REREG_MR_CHANGE_TRANSLATION 1
#define IBV_REREG_MR_ERR_INPUT (-1)
typedef int cudaError_t;
#define CUDA_SUCCESS_ 0
#define CUDA_ERROR_UNKNOWN_ 999

#endif
