/* fork from a process whose threads keep allocating (and so keep calling
 * our hooks): the child must allocate, use tier_mallctl and exit without
 * deadlock, many times over. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tap.h"
#include "tiermalloc.h"

static _Atomic bool stop;

static void *churn(void *arg)
{
	uint64_t s = (uintptr_t)arg * 7919 + 1;
	while (!atomic_load(&stop)) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		size_t n = (s >> 33) % 8 == 0 ? (size_t)(1 + (s >> 40) % 16) << 20 : 16 + (s >> 40) % 4096;
		char *p = malloc(n);
		if (p) {
			memset(p, 1, n < 65536 ? n : 65536);
			free(p);
		}
	}
	return NULL;
}

static int child(void)
{
	for (int i = 0; i < 2000; i++) {
		size_t n = (size_t)(i % 50 == 0 ? 4 << 20 : 64 + i);
		char *p = malloc(n);
		if (!p)
			return 2;
		memset(p, 5, n);
		free(p);
	}
	unsigned count = 0;
	size_t len = sizeof(count), bad = 1, bl = sizeof(bad);
	if (tier_mallctl("tier.count", &count, &len, NULL, 0) || !count)
		return 3;
	/* other threads did not survive the fork: the registry must still be
	 * consistent from this thread's point of view */
	tier_mallctl("debug.check", &bad, &bl, NULL, 0);
	if (bad)
		return 4;
	char *s = strdup("child");
	free(s);
	return 0;
}

int main(int argc, char **argv)
{
	(void)argc;
	/* these check the hooks: on a one-tier host they are off by default */
	tap_rerun_with(argv, "TIERMALLOC_CONF", "always_hook:true");
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, churn, (void *)(intptr_t)i);
	int okc = 0, forks = 40;
	for (int i = 0; i < forks; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			alarm(20); /* a deadlocked child dies of SIGALRM: a failure */
			_exit(child());
		}
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			okc++;
		else
			diag("child %d: %s %d", i, WIFSIGNALED(st) ? "signal" : "exit",
			     WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	ok(okc == forks, "%d/%d children forked mid-churn allocated and exited cleanly", okc, forks);
	size_t bad = 1, bl = sizeof(bad);
	tier_mallctl("debug.check", &bad, &bl, NULL, 0);
	ok(bad == 0, "parent registry exact after the forks");
	return done();
}
