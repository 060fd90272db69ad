/* The runtime directory (see rundir.h).  Every component is opened with
 * O_NOFOLLOW from "/", so a symlink planted anywhere on the path (say in
 * /dev/shm, which everyone may write) is refused rather than followed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "knobs.h"
#include "rundir.h"

int tier_rundir_candidates(const struct tier_rundir_env *e, char out[][TIER_RUNDIR_PATH], int max)
{
	int n = 0;
#define ADD(...)                                                                              \
	do {                                                                                  \
		if (n < max) {                                                                \
			int r_ = snprintf(out[n], TIER_RUNDIR_PATH, __VA_ARGS__);             \
			if (r_ > 0 && r_ < TIER_RUNDIR_PATH)                                  \
				n++;                                                          \
		}                                                                             \
	} while (0)
	if (!e->shared && e->run_dir && e->run_dir[0])
		ADD("%s", e->run_dir);
	/* root keeps the machine-wide place it always had */
	if (e->uid == 0)
		ADD("/run/tiermalloc");
	if (!e->shared && e->xdg && e->xdg[0] == '/')
		ADD("%s/tiermalloc", e->xdg);
	if (!e->shared)
		ADD("/run/user/%u/tiermalloc", e->uid);
	ADD("/dev/shm/tiermalloc-%u", e->uid);
#undef ADD
	return n;
}

#define WHY(...) (snprintf(why, wlen, __VA_ARGS__), -1)

int tier_rundir_open(const char *path, unsigned uid, char *why, size_t wlen)
{
	char buf[TIER_RUNDIR_PATH];
	size_t len = strlen(path);
	if (path[0] != '/' || len >= sizeof(buf))
		return WHY("not an absolute path");
	memcpy(buf, path, len + 1);
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = '\0';
	/* walk the parents (search permission only: O_PATH) */
	int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return WHY("/: %s", strerror(errno));
	char *p = buf + 1, *last = strrchr(buf, '/') + 1;
	if (!*last) {
		close(dir);
		return WHY("not a directory below /");
	}
	while (p < last) {
		char *slash = strchr(p, '/');
		*slash = '\0';
		if (*p && strcmp(p, ".")) {
			if (!strcmp(p, "..")) {
				close(dir);
				return WHY("\"..\" in the path");
			}
			int next = openat(dir, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int e = errno;
			close(dir);
			if (next < 0)
				return WHY("%s", e == ENOTDIR || e == ELOOP ? "a symlink or non-directory on the path"
								  : strerror(e));
			dir = next;
		}
		*slash = '/';
		p = slash + 1;
	}
	if (!strcmp(last, "..") || !strcmp(last, ".")) {
		close(dir);
		return WHY("\"..\" in the path");
	}
	/* 0700: the channels in it are this user's business alone */
	if (mkdirat(dir, last, 0700) < 0 && errno != EEXIST) {
		int e = errno;
		close(dir);
		return WHY("cannot create it: %s", strerror(e));
	}
	int fd = openat(dir, last, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int e = errno;
	close(dir);
	if (fd < 0)
		return WHY("%s", e == ENOTDIR || e == ELOOP ? "a symlink or not a directory" : strerror(e));
	struct stat st;
	if (fstat(fd, &st) < 0) {
		e = errno;
		close(fd);
		return WHY("%s", strerror(e));
	}
	if (st.st_uid != uid) {
		close(fd);
		return WHY("owned by uid %u, not %u", (unsigned)st.st_uid, uid);
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		close(fd);
		return WHY("group- or world-writable (mode %04o)", (unsigned)(st.st_mode & 07777));
	}
	/* EROFS for a read-only mount; EACCES for mode bits (non-root) */
	if (faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) < 0) {
		e = errno;
		close(fd);
		return WHY("not writable: %s", strerror(e));
	}
	return fd;
}

int tier_rundir_pick(const struct tier_rundir_env *e, char *path, size_t plen, char *why, size_t wlen)
{
	char cand[TIER_RUNDIR_CANDIDATES][TIER_RUNDIR_PATH];
	int n = tier_rundir_candidates(e, cand, TIER_RUNDIR_CANDIDATES);
	size_t w = 0;
	if (wlen)
		why[0] = '\0';
	for (int i = 0; i < n; i++) {
		char r[160];
		int fd = tier_rundir_open(cand[i], e->uid, r, sizeof(r));
		if (fd >= 0) {
			snprintf(path, plen, "%s", cand[i]);
			return fd;
		}
		if (w < wlen) {
			int k = snprintf(why + w, wlen - w, "%s%s: %s", w ? "; " : "", cand[i], r);
			w += k > 0 ? (size_t)k : 0;
		}
	}
	return -1;
}

/* ---- this process ---- */

struct resolved {
	pthread_once_t once;
	int fd;
	char path[TIER_RUNDIR_PATH];
	dev_t dev;
	ino_t ino;
	pthread_mutex_t mu;
};
static struct resolved own = {PTHREAD_ONCE_INIT, -1, "", 0, 0, PTHREAD_MUTEX_INITIALIZER},
		       shared = {PTHREAD_ONCE_INIT, -1, "", 0, 0, PTHREAD_MUTEX_INITIALIZER};

static void resolve(struct resolved *r, bool is_shared)
{
	bool secure = getauxval(AT_SECURE) != 0;
	struct tier_rundir_env e = {
		.run_dir = tier_settings.run_dir, /* empty under AT_SECURE: conf was not read */
		.xdg = secure ? NULL : getenv("XDG_RUNTIME_DIR"),
		.uid = (unsigned)geteuid(),
		.shared = is_shared,
	};
	char why[600];
	r->fd = tier_rundir_pick(&e, r->path, sizeof(r->path), why, sizeof(why));
	struct stat st;
	if (r->fd >= 0 && fstat(r->fd, &st) == 0) {
		r->dev = st.st_dev;
		r->ino = st.st_ino;
	}
	if (!tier_settings.verbose)
		return;
	if (r->fd < 0)
		tier_log("no runtime directory%s: %s", is_shared ? " for machine-wide state" : "", why);
	else if (why[0])
		tier_log("runtime directory%s %s (passed over: %s)", is_shared ? " for machine-wide state" : "",
			 r->path, why);
}

static void resolve_own(void) { resolve(&own, false); }
static void resolve_shared(void) { resolve(&shared, true); }

static int answer(struct resolved *r, char *path, size_t plen)
{
	pthread_mutex_lock(&r->mu);
	struct stat st;
	if (r->fd >= 0 && (fstat(r->fd, &st) < 0 || st.st_dev != r->dev || st.st_ino != r->ino)) {
		/* the program closed our descriptor (daemons close them all) and
		 * the number may be another file's now: open the place again */
		char why[160];
		r->fd = tier_rundir_open(r->path, (unsigned)geteuid(), why, sizeof(why));
		if (r->fd >= 0 && fstat(r->fd, &st) == 0) {
			r->dev = st.st_dev;
			r->ino = st.st_ino;
		}
	}
	if (path && plen)
		snprintf(path, plen, "%s", r->fd >= 0 ? r->path : "");
	int fd = r->fd;
	pthread_mutex_unlock(&r->mu);
	return fd;
}

int tier_rundir(char *path, size_t plen)
{
	pthread_once(&own.once, resolve_own);
	return answer(&own, path, plen);
}

int tier_rundir_shared(char *path, size_t plen)
{
	pthread_once(&shared.once, resolve_shared);
	return answer(&shared, path, plen);
}
