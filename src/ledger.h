/* The job ledger: a small shared-memory file, one per job, in this user's
 * runtime directory, where the member processes publish their fast-tier
 * bytes and heat histograms, and where requests from outside (tiermalloc
 * job demote/promote) reach them.  Fixed-size slots, each written by its
 * owner under a sequence lock; liveness is checked by pid and start time
 * within one pid namespace, and by the age of the last publication across
 * namespaces (a container's pid means nothing outside it); never trusted.  No malloc: safe in the background thread and the tool. */
#ifndef TIER_LEDGER_H
#define TIER_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jobshare.h"

#define TIER_LEDGER_MAGIC 0x31474c4a4d524954ull /* "TIRMJLG1" */
#define TIER_LEDGER_VERSION 2
#define TIER_LEDGER_SLOTS TIER_JOB_MAX
#define TIER_LEDGER_IDENT 256
/* a member of another pid namespace that has not published for this long
 * is gone (members publish every period: period_ms up to 5 s is safe) */
#define TIER_LEDGER_FOREIGN_NS (10ull * 1000000000ull)

enum { TIER_LEDGER_DEMOTE = 1, TIER_LEDGER_PROMOTE = 2 };

/* What a member publishes (under the slot's sequence lock). */
struct tier_ledger_pub {
	uint64_t start;      /* its start time (/proc/PID/stat field 22) */
	uint64_t fast_bytes; /* committed bytes on the fast tier */
	uint64_t budget;     /* the job budget it asks for (bytes) */
	uint64_t share;      /* its share of the budget, last computed */
	uint64_t limit;      /* the fast_limit it applies */
	uint64_t updated_ns; /* CLOCK_BOOTTIME of the last publication */
	uint64_t min_bucket; /* its policy promotes nothing colder (requests split by it) */
	uint64_t pidns;      /* its pid namespace (tier_pidns), set by claim and publish */
	struct tier_job_member hist; /* pages by heat bucket; fast_pages */
};

struct tier_ledger_slot {
	uint64_t owner; /* pid; 0: free (claimed by compare-and-swap) */
	uint64_t seq;   /* odd while the owner writes pub */
	struct tier_ledger_pub pub;
	/* a request from outside: req_seq odd while being written */
	uint64_t req_seq, req_kind, req_bytes;
	/* written by the owner once applied: what moved, then the seq */
	uint64_t done_moved, done_seq;
};

struct tier_ledger {
	uint64_t magic;   /* written last at creation */
	uint32_t version, size, nslots, nbuckets, uid, pad;
	char ident[TIER_LEDGER_IDENT]; /* "name:NAME" or "cgroup:PATH" */
	uint64_t reserved[8];
	struct tier_ledger_slot slot[TIER_LEDGER_SLOTS];
};

/* The file name for a job identity: "job-<16 hex digits>.ledger". */
void tier_ledger_name(const char *ident, char *name, size_t len);

struct tier_ledger_map {
	struct tier_ledger *l;
	char path[512];
};

/* Open (with create, creating if missing) the ledger of ident in the
 * directory dirfd (named dir, for messages).  Refused: a symlink, not a
 * regular file, another owner, a mode other than 0600, the wrong size,
 * magic, version or identity.  Returns 0, or -1 with the reason in why. */
int tier_ledger_open(int dirfd, const char *dir, const char *ident, bool create,
                     struct tier_ledger_map *m, char *why, size_t wlen);
void tier_ledger_close(struct tier_ledger_map *m);

/* Check a mapped header (pure: also what open runs). NULL when fine. */
const char *tier_ledger_check(const struct tier_ledger *l, const char *ident, unsigned uid);

/* Claim a free slot for pid (start: its start time); index or -1. */
int tier_ledger_claim(struct tier_ledger *l, long pid, uint64_t start);
/* Free slot i if pid still owns it. */
void tier_ledger_release(struct tier_ledger *l, int i, long pid);
/* Publish p in slot i (owned by the caller). */
void tier_ledger_publish(struct tier_ledger_slot *s, const struct tier_ledger_pub *p);
/* A consistent copy of slot s; false when free or never published. */
bool tier_ledger_read(const struct tier_ledger_slot *s, long *pid, struct tier_ledger_pub *p);

/* Whether the member pid that published p is alive: in this pid namespace,
 * pid with p's start time (start_of returns a pid's start time, 0 when
 * there is no such process); in another, a publication younger than
 * TIER_LEDGER_FOREIGN_NS. */
bool tier_ledger_alive(long pid, const struct tier_ledger_pub *p, uint64_t (*start_of)(long pid));
/* Whether p was published from this process's pid namespace. */
bool tier_ledger_same_ns(const struct tier_ledger_pub *p);
/* The start time of a live process: 0 when there is none, or a zombie. */
uint64_t tier_ledger_start_of(long pid);
/* Free the slots of processes that are gone (pid absent, or its start
 * time not the published one).  Returns how many. */
int tier_ledger_reap(struct tier_ledger *l, long self, uint64_t (*start_of)(long pid));

/* Post a request to slot s; returns its sequence number (even, > 0). */
uint64_t tier_ledger_request(struct tier_ledger_slot *s, uint32_t kind, uint64_t bytes);
/* The owner: a pending request (true, with kind, bytes, seq), or false. */
bool tier_ledger_pending(struct tier_ledger_slot *s, uint32_t *kind, uint64_t *bytes, uint64_t *seq);
void tier_ledger_done(struct tier_ledger_slot *s, uint64_t seq, uint64_t moved);

#endif
