/* The runtime directory: candidate order, ownership and mode checks,
 * symlink refusal, fallback past a read-only or refused candidate. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "knobs.h"
#include "rundir.h"
#include "../tap.h"

/* rundir.c reads the run_dir and verbose knobs of this process
 * (tier_settings, knobs.c) */

static char root[128];

static const char *at(const char *rel)
{
	static char buf[4][256];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", root, rel);
	return buf[k];
}

/* A read-only directory even for root: a read-only bind mount in a mount
 * namespace of our own (gone with this process).  Non-root: mode bits. */
static int make_readonly(const char *dir)
{
	if (geteuid() != 0)
		return chmod(dir, 0555);
	if (unshare(CLONE_NEWNS) < 0)
		return -1;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -1;
	if (mount(dir, dir, NULL, MS_BIND, NULL) < 0)
		return -1;
	return mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL);
}

int main(void)
{
	char c[TIER_RUNDIR_CANDIDATES][TIER_RUNDIR_PATH];
	struct tier_rundir_env e = {.run_dir = "/x/knob", .xdg = "/run/user/1000", .uid = 1000};
	int n = tier_rundir_candidates(&e, c, TIER_RUNDIR_CANDIDATES);
	ok(n == 4 && !strcmp(c[0], "/x/knob") && !strcmp(c[1], "/run/user/1000/tiermalloc") &&
		   !strcmp(c[2], "/run/user/1000/tiermalloc") && !strcmp(c[3], "/dev/shm/tiermalloc-1000"),
	   "user: run_dir, $XDG_RUNTIME_DIR, /run/user/<uid>, /dev/shm (%d)", n);
	e = (struct tier_rundir_env){.xdg = "relative", .uid = 0};
	n = tier_rundir_candidates(&e, c, TIER_RUNDIR_CANDIDATES);
	ok(n == 3 && !strcmp(c[0], "/run/tiermalloc") && !strcmp(c[1], "/run/user/0/tiermalloc") &&
		   !strcmp(c[2], "/dev/shm/tiermalloc-0"),
	   "root: /run/tiermalloc first; a relative XDG_RUNTIME_DIR is ignored (%d)", n);
	e = (struct tier_rundir_env){.run_dir = "/x", .xdg = "/run/user/0", .uid = 0, .shared = true};
	n = tier_rundir_candidates(&e, c, TIER_RUNDIR_CANDIDATES);
	ok(n == 2 && !strcmp(c[0], "/run/tiermalloc") && !strcmp(c[1], "/dev/shm/tiermalloc-0"),
	   "machine-wide state: neither the knob nor XDG_RUNTIME_DIR moves it (%d)", n);

	snprintf(root, sizeof(root), "/tmp/test_rundir.XXXXXX");
	if (!mkdtemp(root)) {
		ok(0, "mkdtemp: %s", strerror(errno));
		return 1;
	}
	unsigned me = (unsigned)geteuid();
	char why[600], path[TIER_RUNDIR_PATH];
	struct stat st;

	int fd = tier_rundir_open(at("new"), me, why, sizeof(why));
	ok(fd >= 0 && stat(at("new"), &st) == 0 && (st.st_mode & 07777) == 0700 && st.st_uid == me,
	   "created with mode 0700, owned by us (%s)", fd < 0 ? why : "ok");
	if (fd >= 0)
		close(fd);
	fd = tier_rundir_open(at("new/"), me, why, sizeof(why));
	ok(fd >= 0, "an existing one opens again (trailing slash too)");
	if (fd >= 0)
		close(fd);

	mkdir(at("open"), 0777);
	chmod(at("open"), 0777);
	fd = tier_rundir_open(at("open"), me, why, sizeof(why));
	ok(fd < 0 && strstr(why, "writable"), "world-writable refused: %s", why);
	chmod(at("open"), 0770);
	fd = tier_rundir_open(at("open"), me, why, sizeof(why));
	ok(fd < 0 && strstr(why, "writable"), "group-writable refused: %s", why);

	fd = tier_rundir_open(at("new"), me + 1, why, sizeof(why));
	ok(fd < 0 && strstr(why, "owned by"), "not the owner: refused: %s", why);

	symlink(at("new"), at("link"));
	fd = tier_rundir_open(at("link"), me, why, sizeof(why));
	ok(fd < 0 && strstr(why, "symlink"), "a symlink to a good directory refused: %s", why);
	fd = tier_rundir_open(at("link/sub"), me, why, sizeof(why));
	ok(fd < 0 && strstr(why, "symlink") && access(at("new/sub"), F_OK) != 0,
	   "a symlink in a parent refused, nothing made behind it: %s", why);
	fd = tier_rundir_open(at("missing/sub"), me, why, sizeof(why));
	ok(fd < 0, "a missing parent is not created: %s", why);
	fd = tier_rundir_open("relative/dir", me, why, sizeof(why));
	ok(fd < 0, "a relative path refused: %s", why);
	fd = tier_rundir_open(at("new/../new"), me, why, sizeof(why));
	ok(fd < 0, "\"..\" refused: %s", why);

	/* fallback: the knob's place is read-only, missing, then a good one */
	mkdir(at("ro"), 0700);
	int ro = make_readonly(at("ro"));
	if (ro < 0) {
		printf("ok %d # SKIP no read-only place here: %s\n", ++tap_n, strerror(errno));
		printf("ok %d # SKIP\n", ++tap_n);
	} else {
		fd = tier_rundir_open(at("ro/tm"), me, why, sizeof(why));
		ok(fd < 0, "cannot create below a read-only directory: %s", why);
		fd = tier_rundir_open(at("ro"), me, why, sizeof(why));
		ok(fd < 0 && strstr(why, "not writable"), "an existing read-only directory refused: %s", why);
	}
	char xdg[256];
	snprintf(xdg, sizeof(xdg), "%s", at("xdg"));
	mkdir(xdg, 0700);
	e = (struct tier_rundir_env){.run_dir = at("ro/tm"), .xdg = xdg, .uid = me};
	if (me == 0) { /* root's list has /run/tiermalloc second: pick as another user */
		e.uid = 4242;
		mkdir(at("xdg/tiermalloc"), 0700);
		(void)!chown(at("xdg/tiermalloc"), 4242, 4242);
	}
	fd = tier_rundir_pick(&e, path, sizeof(path), why, sizeof(why));
	char want[300];
	snprintf(want, sizeof(want), "%s/tiermalloc", xdg);
	ok(fd >= 0 && !strcmp(path, want) && strstr(why, "ro/tm"),
	   "falls back from a read-only run_dir to $XDG_RUNTIME_DIR/tiermalloc: %s (passed over: %s)", path,
	   why);
	if (fd >= 0)
		close(fd);

	if (me != 0)
		chmod(at("ro"), 0700);
	else if (ro == 0)
		umount(at("ro"));
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	(void)!system(cmd);
	printf("1..%d\n", tap_n);
	return tap_failed != 0;
}
