/* This process's cgroup (v2): its path, the memory limit and use, and the
 * memory nodes its cpuset allows.  Read at start and again when asked
 * (the job ledger asks once a second); no malloc. */
#ifndef TIER_CGROUP_H
#define TIER_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIER_CGROUP_PATH 256

struct tier_cgroup {
	bool found;                  /* a cgroup v2 path and its directory */
	char path[TIER_CGROUP_PATH]; /* as /proc/self/cgroup says: "/a/b" */
	char dir[2 * TIER_CGROUP_PATH + 16]; /* where its files are */
	uint64_t memory_max;         /* bytes; UINT64_MAX: "max" or unreadable */
	uint64_t memory_current;     /* bytes; 0 unreadable */
	char mems[64];               /* cpuset.mems.effective; "" unreadable */
};

/* The v2 path from /proc/self/cgroup's text (the "0::" line); 0 or -1. */
int tier_cgroup_parse_self(const char *text, char *path, size_t len);
/* The mount point of cgroup2 and its root from mountinfo text; 0 or -1. */
int tier_cgroup_parse_mountinfo(const char *text, char *mnt, size_t mlen, char *root, size_t rlen);
/* "max" or a number of bytes; 0 or -1. */
int tier_cgroup_parse_max(const char *text, uint64_t *out);

/* Read this process's cgroup; returns true when anything differs from
 * what *cg held (path, memory.max or cpuset.mems.effective). */
bool tier_cgroup_read(struct tier_cgroup *cg);

#endif
