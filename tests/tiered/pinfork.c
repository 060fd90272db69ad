/* pinfork: pinned ranges never move; fork while migrating gives a working
 * child with its own background thread.
 *   pinfork pin     64 MiB, 16 MiB of it pinned; force everything down and
 *                   up again; the pinned pages must stay where they were
 *   pinfork fork N  a thread keeps migrating while the main thread forks N
 *                   children; each must allocate, see its own running
 *                   background thread, and exit 0; and the thread must
 *                   have moved memory while the children were forked */
#include <errno.h>
#include <numaif.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tiermalloc.h"

#define MB (1ul << 20)

/* nodes of the pages of [p, p+len): count per node in out[0..1] */
static void where(char *p, size_t len, long out[2])
{
	static void *pages[16384];
	static int st[16384];
	size_t n = 0;
	out[0] = out[1] = 0;
	for (size_t off = 0; off < len && n < 16384; off += 4096)
		pages[n++] = p + off;
	move_pages(0, n, pages, NULL, st, 0);
	for (size_t i = 0; i < n; i++)
		if (st[i] == 0 || st[i] == 1)
			out[st[i]]++;
}

static size_t move(const char *what, size_t bytes)
{
	size_t moved = 0, len = sizeof(moved);
	tier_mallctl(what, &moved, &len, &bytes, sizeof(bytes));
	return moved;
}

static int pin_test(void)
{
	/* one 64 MiB block, 2 MiB aligned: its blocks are all ours */
	char *p = aligned_alloc(2 * MB, 64 * MB);
	memset(p, 1, 64 * MB);
	char *pin = p + 16 * MB;
	if (tier_pin(pin, 16 * MB)) {
		printf("tier_pin failed\n");
		return 1;
	}
	long before[2], after[2], rest[2];
	where(pin, 16 * MB, before);
	size_t down = move("tier.demote", 1ul << 40);
	where(pin, 16 * MB, after);
	where(p + 32 * MB, 32 * MB, rest);
	printf("demote all: moved %zu MiB; pinned pages node0 %ld->%ld node1 %ld->%ld; unpinned "
	       "part now node0 %ld node1 %ld\n",
	       down >> 20, before[0], after[0], before[1], after[1], rest[0], rest[1]);
	int bad = before[0] != after[0] || before[1] != after[1] || rest[1] == 0;
	size_t up = move("tier.promote", 1ul << 40);
	where(pin, 16 * MB, after);
	printf("promote all: moved %zu MiB; pinned pages node0 %ld node1 %ld\n", up >> 20, after[0],
	       after[1]);
	bad |= before[0] != after[0] || before[1] != after[1];
	tier_unpin(pin, 16 * MB);
	down = move("tier.demote", 1ul << 40);
	where(pin, 16 * MB, after);
	printf("after unpin, demote all: pinned range node0 %ld node1 %ld\n", after[0], after[1]);
	bad |= after[1] == 0;
	return bad;
}

static _Atomic bool stop;
static void *migrator(void *arg)
{
	(void)arg;
	for (int i = 0; !atomic_load(&stop); i++)
		move(i & 1 ? "tier.promote" : "tier.demote", 16 * MB);
	return NULL;
}

/* Pages the kernel migrated so far (/proc/vmstat): its own count, not
 * what the library says it asked for. */
static long long pgmigrated(void)
{
	long long v = -1;
	char name[64];
	FILE *f = fopen("/proc/vmstat", "r");
	while (f && fscanf(f, "%63s %lld", name, &v) == 2 && strcmp(name, "pgmigrate_success"))
		v = -1;
	if (f)
		fclose(f);
	return v;
}

static long bg_tid(void)
{
	uint64_t tid = 0;
	size_t l = sizeof(tid);
	bool running = false;
	size_t bl = sizeof(running);
	/* the thread starts asynchronously: give it a moment */
	for (int i = 0; i < 200; i++) {
		tier_mallctl("stats.bg.running", &running, &bl, NULL, 0);
		tier_mallctl("stats.bg.tid", &tid, &l, NULL, 0);
		if (running && tid)
			break;
		usleep(10000);
	}
	return running ? (long)tid : -1;
}

static int fork_test(int n)
{
	char *data = malloc(48 * MB);
	memset(data, 7, 48 * MB);
	long parent_tid = bg_tid();
	pthread_t th;
	pthread_create(&th, NULL, migrator, NULL);
	int okc = 0;
	long long mig0 = pgmigrated();
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			alarm(60);
			long tid = bg_tid();
			char path[64];
			struct stat sb;
			snprintf(path, sizeof(path), "/proc/self/task/%ld", tid);
			if (tid <= 0 || tid == parent_tid || stat(path, &sb))
				_exit(3);
			for (int k = 0; k < 200; k++) {
				char *q = malloc((size_t)(k % 20 + 1) * 65536);
				memset(q, k, (size_t)(k % 20 + 1) * 65536);
				free(q);
			}
			for (size_t k = 0; k < 48 * MB; k += 4096)
				if (data[k] != 7)
					_exit(4);
			_exit(0);
		}
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			okc++;
		else
			printf("child %d: %s %d\n", i, WIFEXITED(st) ? "exit" : "signal",
			       WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	}
	long long mv = pgmigrated() - mig0;
	atomic_store(&stop, true);
	pthread_join(th, NULL);
	printf("fork: %d/%d children ok (parent background thread %ld), %lld pages migrated meanwhile "
	       "(the kernel's count)\n", okc, n, parent_tid, mig0 < 0 ? -1 : mv);
	return okc == n && parent_tid > 0 && mig0 >= 0 && mv > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "pin"))
		return pin_test();
	if (argc >= 3 && !strcmp(argv[1], "fork"))
		return fork_test(atoi(argv[2]));
	fprintf(stderr, "usage: pinfork pin | fork N\n");
	return 2;
}
