/* The control channel: a small shared-memory file per process,
 * <rundir>/<pid>-<starttime>-<pidns>.ctl, mode 0600 (pid as the process
 * sees itself, pidns the inode of its pid namespace: two containers' pid 1
 * never share a name), through which the tiermalloc
 * command sees a running program's statistics and changes its knobs.
 *
 * The process writes a snapshot every background period (seqlock: seq is
 * odd while it writes; readers retry) and answers one request at a time:
 *   client: state FREE -> CLAIMED (compare-and-swap), writes kind, arg,
 *           req_len and req, then state -> SUBMITTED;
 *   process (background thread, next period): validates the request
 *           (bounded, NUL-terminated, known kind; else refused with a
 *           reason, nothing changed), writes status, reply, next, then
 *           state -> ANSWERED;
 *   client: reads the answer, state -> FREE.
 * A claim or an answer left for TIER_CHAN_STALE_NS (client died) may be
 * taken over.  The process never waits on the channel: it only looks at
 * the state word when its period comes.
 * This header is shared with the command (tools/tiermalloc.c). */
#ifndef TIER_CHAN_H
#define TIER_CHAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define TIER_CHAN_MAGIC 0x314e4843544d4954ull /* "TIMTCHN1" */
#define TIER_CHAN_VERSION 2
#define TIER_CHAN_TIERS 8
#define TIER_CHAN_REQ_MAX 512
#define TIER_CHAN_REPLY_MAX (60 * 1024)
#define TIER_CHAN_STALE_NS (5ull * 1000000000ull)
#define TIER_CHAN_SUFFIX ".ctl"
#define TIER_CHAN_HEAT_GROUPS 16

enum { TIER_CHAN_FREE, TIER_CHAN_CLAIMED, TIER_CHAN_SUBMITTED, TIER_CHAN_ANSWERED };

enum tier_chan_kind {
	TIER_REQ_CTL = 1,   /* req: "NAME" or "NAME=VALUE" (tier_mallctl in text) */
	TIER_REQ_LIST,      /* every name: "NAME r|rw TYPE" lines */
	TIER_REQ_STATS,     /* tier_stats_print; arg 1: JSON */
	TIER_REQ_HEAT,      /* blocks from index arg: "start end tier heat moved_s_ago" lines */
};

/* What top and stat show without asking: cheap counters, every period. */
struct tier_chan_snap {
	uint64_t time_ns;          /* CLOCK_MONOTONIC of this snapshot */
	uint64_t started_ns;       /* the background thread's start */
	uint64_t periods;
	uint32_t period_ms;
	uint32_t ntiers;
	uint32_t active;           /* tiering in effect */
	uint32_t pad;
	uint64_t fast_limit;
	uint64_t placed[TIER_CHAN_TIERS];    /* bytes of blocks placed on each tier */
	uint64_t committed[TIER_CHAN_TIERS]; /* bytes committed in them */
	uint64_t mapped;
	uint64_t promoted_bytes, demoted_bytes, promoted_blocks, demoted_blocks;
	double promote_bps, demote_bps;      /* over the last second or so */
	uint64_t bg_cpu_ns, bg_kernel_ns, bg_fault_ns;
	double bg_share;                     /* recent share of a core, all background costs */
	double hit;                          /* share of the measured heat on tier 0; -1: none measured */
	char nodes[TIER_CHAN_TIERS][32];
	/* pages by heat, per tier: group 0 unmeasured/cold (< 2^-12 accesses
	 * per page per period), group g >= 1 in [2^(g-13), 2^(g-12)) */
	uint64_t heat_pages[TIER_CHAN_TIERS][TIER_CHAN_HEAT_GROUPS];
};

struct tier_chan {
	uint64_t magic;
	uint32_t version, size;
	int32_t pid;
	uint32_t uid;
	uint64_t start;            /* /proc/PID/stat field 22 */
	uint64_t pidns;            /* tier_pidns() of the process */
	_Atomic uint32_t seq;
	uint32_t pad0;
	struct tier_chan_snap snap;
	/* the request slot */
	_Atomic uint32_t state;
	uint32_t kind;
	_Atomic uint64_t state_ns; /* CLOCK_MONOTONIC of the last state change */
	uint32_t arg;
	uint32_t req_id;           /* the client's mark, copied into ans_id with the answer */
	uint32_t ans_id;
	uint32_t req_len;          /* bytes of req, without the NUL */
	char req[TIER_CHAN_REQ_MAX];
	int32_t status;            /* 0 or an errno value (tier_mallctl's for TIER_REQ_CTL) */
	uint32_t reply_len;
	uint32_t next;             /* HEAT: index of the next page, 0 at the end */
	uint32_t pad1;
	char reply[TIER_CHAN_REPLY_MAX];
};

/* A channel's file name: 0 with pid, start and pidns; pidns 0 for a name
 * of version 1 (<pid>-<start>.ctl, made in the reader's namespace); -1
 * when it is not a channel's name. */
static inline int tier_chan_name_parse(const char *s, long *pid, unsigned long long *start,
				       unsigned long long *pidns)
{
	char tail[8];
	int n = 0;
	*pidns = 0;
	if (sscanf(s, "%ld-%llu-%llu%n", pid, start, pidns, &n) == 3 && n && !strcmp(s + n, TIER_CHAN_SUFFIX))
		return *pid > 0 && *pidns ? 0 : -1;
	*pidns = 0;
	if (sscanf(s, "%ld-%llu%7s", pid, start, tail) == 3 && !strcmp(tail, TIER_CHAN_SUFFIX))
		return *pid > 0 ? 0 : -1;
	return -1;
}

/* The file's size: the struct rounded up to whole pages. */
#define TIER_CHAN_FILE_SIZE ((sizeof(struct tier_chan) + 4095) & ~(size_t)4095)

#ifdef TIER_CHAN_PROCESS
/* Background thread, once per period: create the channel if wanted
 * (tiering on, or ctl:true), publish the snapshot, serve a request. */
void tier_chan_tick(void);
/* Exit: unmap and remove our file. */
void tier_chan_close(void);
/* fork, in the child: the parent's mapping is the parent's. */
void tier_chan_after_fork_child(void);
#endif

#endif
