/* Device-held blocks, with real long-term pins: a buffer registered with
 * io_uring (IORING_REGISTER_BUFFERS) on the slow tier is asked to move to
 * the fast tier; the kernel cannot move its pages, and after the bounded
 * tries tiermalloc marks its blocks device-held: stats say so and why,
 * the retries stop, and a neighbouring block still moves.  Unregistered,
 * freed and purged, nothing stays device-held.  Run in the tiered VM with
 * TIERMALLOC_CONF=fast_limit:1M (new memory lands on the slow tier). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <linux/io_uring.h>
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tiermalloc.h"
#include "../tap.h"

int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);

#define MB ((size_t)1 << 20)

/* Counters; a failed read is a failing line of its own (and reads 0). */
static uint64_t u64(const char *name)
{
	uint64_t v = 0;
	size_t len = sizeof(v);
	if (tier_mallctl(name, &v, &len, NULL, 0) || len != sizeof(v)) {
		ok(0, "tier_mallctl reads %s", name);
		return 0;
	}
	return v;
}
static size_t zsz(const char *name)
{
	return (size_t)u64(name);
}
static const char *str(const char *name)
{
	const char *v = NULL;
	size_t len = sizeof(v);
	return tier_mallctl(name, &v, &len, NULL, 0) || !v ? "?" : v;
}
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Pages of [p, p+len) on `node`, by the kernel's answer. */
static long on_node(char *p, size_t len, int node)
{
	static void *pg[4096];
	static int st[4096];
	long n = (long)(len >> 12), k = 0;
	for (long i = 0; i < n && i < 4096; i++)
		pg[i] = p + (i << 12);
	if (move_pages(0, (unsigned long)n, pg, NULL, st, 0))
		return -1;
	for (long i = 0; i < n; i++)
		k += st[i] == node;
	return k;
}

static size_t promote(size_t bytes)
{
	size_t moved = 0, len = sizeof(moved);
	if (tier_mallctl("tier.promote", &moved, &len, &bytes, sizeof(bytes)))
		return SIZE_MAX;
	return moved;
}

int main(void)
{
	bool active = false;
	size_t blen = sizeof(active);
	tier_mallctl("tier.active", &active, &blen, NULL, 0);
	if (!ok(active, "tiering is active")) {
		printf("1..%d\n", tap_n);
		return 1;
	}
	size_t rlen = 4 * MB, nlen = 2 * MB;
	char *r = aligned_alloc(2 * MB, rlen), *nb = aligned_alloc(2 * MB, nlen);
	memset(r, 1, rlen);
	memset(nb, 2, nlen);
	long r1 = on_node(r, rlen, 1), n1 = on_node(nb, nlen, 1);
	ok(r1 == 1024 && n1 == 512, "the buffer (4 MiB) and its neighbour (2 MiB) start on the slow node (%ld, %ld pages)",
	   r1, n1);

	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	int fd = (int)syscall(SYS_io_uring_setup, 4, &p);
	struct iovec iov = {r, rlen};
	int reg = fd >= 0 ? (int)syscall(SYS_io_uring_register, fd, IORING_REGISTER_BUFFERS, &iov, 1) : -1;
	if (!ok(fd >= 0 && reg == 0, "io_uring: the buffer registered (fixed buffer: long-term pinned)%s%s",
		reg ? ": " : "", reg ? strerror(errno) : "")) {
		printf("1..%d\n", tap_n);
		return 1;
	}
	ok(on_node(r, rlen, 1) == 1024, "registration left it on the slow node");

	uint64_t marked0 = u64("stats.device.held_marked");
	size_t big = 256 * MB;
	tier_mallctl("tier.fast_limit", NULL, NULL, &big, sizeof(big));
	double t0 = now();
	size_t moved = promote(64 * MB);
	ok(moved != SIZE_MAX && moved >= rlen + nlen, "tier.promote took both in its accounting (%zu bytes)", moved);
	ok(on_node(nb, nlen, 0) == 512, "the neighbour moved to the fast node");
	ok(on_node(r, rlen, 1) == 1024, "the registered buffer did not (the kernel cannot move it)");

	/* the bounded tries: a period each (100 ms), then every 8 periods */
	double waited = 0;
	while (zsz("stats.device.held_blocks") < 2 && (waited = now() - t0) < 20)
		usleep(100000);
	waited = now() - t0;
	size_t hb = zsz("stats.device.held_blocks"), hbytes = zsz("stats.device.held_bytes");
	ok(hb == 2 && hbytes == rlen, "its two blocks are device-held (%zu blocks, %zu bytes) after %.1f s", hb, hbytes,
	   waited);
	const char *why = str("stats.device.held_reason");
	ok(!strncmp(why, "not-migrated x", 14), "stats say why: %s", why);
	ok(u64("stats.device.held_marked") - marked0 == 2, "marked once each (%llu)",
	   (unsigned long long)(u64("stats.device.held_marked") - marked0));
	size_t check = zsz("debug.check");
	ok(check == 0, "the accounting is exact (debug.check %zu): the held blocks count where their pages are",
	   check);

	/* no more tries: the retry counter stands still while the buffer is
	 * written hard (hot: the policy would want it fast) */
	uint64_t tries0 = u64("stats.migrate_retries"), fail0 = u64("stats.failed_pages");
	double t1 = now();
	for (unsigned v = 0; now() - t1 < 2.0; v++)
		for (size_t o = 0; o < rlen; o += 4096)
			r[o] = (char)v;
	size_t again = promote(64 * MB);
	uint64_t tries1 = u64("stats.migrate_retries"), fail1 = u64("stats.failed_pages");
	ok(tries1 == tries0 && fail1 == fail0,
	   "no more tries: retries %llu -> %llu, failed pages %llu -> %llu over 2 s of writes and a tier.promote",
	   (unsigned long long)tries0, (unsigned long long)tries1, (unsigned long long)fail0,
	   (unsigned long long)fail1);
	ok(on_node(r, rlen, 1) == 1024, "the buffer is where it was (tier.promote moved %zu other bytes)", again);

	/* a forked child gets copies of pinned pages (the kernel copies them
	 * at fork): nothing is device-held there, and its copy moves */
	pid_t pid = fork();
	if (pid == 0) {
		size_t ch = zsz("stats.device.held_blocks");
		promote(64 * MB);
		long c0 = on_node(r, rlen, 0);
		_exit(ch == 0 && c0 == 1024 ? 0 : (ch ? 2 : 3));
	}
	int wst = -1;
	waitpid(pid, &wst, 0);
	ok(WIFEXITED(wst) && WEXITSTATUS(wst) == 0,
	   "in a forked child nothing is device-held and its copy of the buffer moves (exit %d)",
	   WIFEXITED(wst) ? WEXITSTATUS(wst) : -1);
	ok(zsz("stats.device.held_blocks") == 2 && on_node(r, rlen, 1) == 1024, "the parent's stay held");

	/* unregistered, freed, purged: nothing stays device-held */
	syscall(SYS_io_uring_register, fd, IORING_UNREGISTER_BUFFERS, NULL, 0);
	close(fd);
	free(r);
	int pe = mallctl("arena.4096.purge", NULL, NULL, NULL, 0);
	hb = zsz("stats.device.held_blocks");
	ok(pe == 0 && hb == 0, "unregistered, freed and purged: nothing device-held (%zu blocks)", hb);
	char *r2 = aligned_alloc(2 * MB, rlen);
	memset(r2, 3, rlen);
	size_t m2 = promote(64 * MB);
	long f2 = on_node(r2, rlen, 0);
	ok(f2 == 1024, "memory at the freed buffer's place, allocated again, is not held: %ld of 1024 pages fast after "
	   "tier.promote (%zu bytes)", f2, m2);
	free(r2);
	mallctl("arena.4096.purge", NULL, NULL, NULL, 0); /* no reuse of r2's fast pages */

	/* a short hold does not mark: pinned for 0.4 s (fewer tries than
	 * HOLD_TRIES, less than a second), then released: it moves */
	size_t small = MB;
	tier_mallctl("tier.fast_limit", NULL, NULL, &small, sizeof(small));
	char *s = aligned_alloc(2 * MB, 2 * MB);
	memset(s, 5, 2 * MB);
	long s1 = on_node(s, 2 * MB, 1);
	fd = (int)syscall(SYS_io_uring_setup, 4, &p);
	struct iovec iov2 = {s, 2 * MB};
	reg = fd >= 0 ? (int)syscall(SYS_io_uring_register, fd, IORING_REGISTER_BUFFERS, &iov2, 1) : -1;
	tier_mallctl("tier.fast_limit", NULL, NULL, &big, sizeof(big));
	uint64_t marked1 = u64("stats.device.held_marked");
	promote(64 * MB);
	long s_held = on_node(s, 2 * MB, 1);
	usleep(400000);
	syscall(SYS_io_uring_register, fd, IORING_UNREGISTER_BUFFERS, NULL, 0);
	close(fd);
	double t2 = now();
	while (on_node(s, 2 * MB, 0) < 512 && now() - t2 < 10)
		usleep(100000);
	long s0 = on_node(s, 2 * MB, 0);
	ok(s1 == 512 && reg == 0 && s_held == 512 && s0 == 512 && u64("stats.device.held_marked") == marked1,
	   "a buffer pinned for 0.4 s is not marked: it started slow (%ld/512), stayed there while pinned (%ld/512), moved %.1f s after "
	   "release (%ld/512 fast), marks %llu -> %llu",
	   s1, s_held, now() - t2, s0, (unsigned long long)marked1,
	   (unsigned long long)u64("stats.device.held_marked"));
	free(s);
	free(nb);
	printf("1..%d\n", tap_n);
	return tap_failed != 0;
}
