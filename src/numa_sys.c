/* The three NUMA system calls tiermalloc makes, as plain syscalls.
 * libnuma's wrappers do the same, but linking libnuma costs every process
 * its constructor at start (it reads /proc/self/status twice, the node and
 * CPU lists and each node's meminfo, and probes set_mempolicy: about 0.8 ms
 * and 50 KiB resident measured on the 2-CPU host).  Hidden: the program's
 * own libnuma, if any, is not interposed. */
#define _GNU_SOURCE
#include <numaif.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tier.h"

TIER_STARTUP long get_mempolicy(int *mode, unsigned long *nmask, unsigned long maxnode, void *addr,
		   unsigned flags)
{
	return syscall(SYS_get_mempolicy, mode, nmask, maxnode, addr, flags);
}

long mbind(void *start, unsigned long len, int mode, const unsigned long *nmask,
	   unsigned long maxnode, unsigned flags)
{
	return syscall(SYS_mbind, start, len, mode, nmask, maxnode, flags);
}

long move_pages(int pid, unsigned long count, void **pages, const int *nodes, int *status,
		int flags)
{
	return syscall(SYS_move_pages, pid, count, pages, nodes, status, flags);
}
