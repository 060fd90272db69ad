/* The runtime directory: where this user's tiermalloc processes keep
 * state shared with each other and with the tiermalloc command (control
 * channels, DAMON's lock).  A directory we own, mode 0700 when we create
 * it, never reached through a symlink, never group- or world-writable. */
#ifndef TIER_RUNDIR_H
#define TIER_RUNDIR_H

#include <stdbool.h>
#include <stddef.h>

#define TIER_RUNDIR_PATH 256
#define TIER_RUNDIR_CANDIDATES 6

struct tier_rundir_env {
	const char *run_dir; /* the run_dir knob; NULL or "": not given */
	const char *xdg;     /* $XDG_RUNTIME_DIR; NULL: unset (or AT_SECURE) */
	unsigned uid;
	/* machine-wide state of root (DAMON's kdamond is one per machine):
	 * only the fixed places every root process agrees on, neither the
	 * run_dir knob nor $XDG_RUNTIME_DIR */
	bool shared;
};

/* The candidates, most preferred first:
 *   run_dir knob; for root /run/tiermalloc; $XDG_RUNTIME_DIR/tiermalloc;
 *   /run/user/<uid>/tiermalloc; /dev/shm/tiermalloc-<uid>.
 * Returns how many were written to out. */
int tier_rundir_candidates(const struct tier_rundir_env *e, char out[][TIER_RUNDIR_PATH], int max);

/* Open the directory at path (absolute), creating its last component with
 * mode 0700 if missing: every component opened with O_NOFOLLOW, the result
 * owned by uid, not group/world-writable, writable.  Returns an O_DIRECTORY
 * descriptor (close-on-exec), or -1 with the reason in why. */
int tier_rundir_open(const char *path, unsigned uid, char *why, size_t wlen);

/* The first candidate that opens; its path into path.  On failure -1 and
 * why names each refusal ("A: reason; B: reason"). */
int tier_rundir_pick(const struct tier_rundir_env *e, char *path, size_t plen, char *why, size_t wlen);

/* This process's directories (settings from TIERMALLOC_CONF, environment
 * ignored under AT_SECURE), resolved once, the descriptor kept open.
 * -1 when none is usable; with verbose, why is said once.  path may be
 * NULL.  Not for hooks or signal handlers (it may take a lock, no malloc). */
int tier_rundir(char *path, size_t plen);
int tier_rundir_shared(char *path, size_t plen);
#endif
