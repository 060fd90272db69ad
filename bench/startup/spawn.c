/* spawn: start a command RUNS times and report each run's cost.
 *   spawn RUNS [VAR=VALUE ...] -- COMMAND [ARGS...]
 * Prints one line per run: "<wall microseconds> <peak RSS KiB>".  The time
 * is from just before posix_spawn to the child's exit (wait4), so none of
 * the caller's own start-up is in it; the peak RSS is the child's
 * ru_maxrss.  The child's environment is ours without LD_PRELOAD,
 * MALLOC_CONF and TIERMALLOC_CONF, plus the VAR=VALUE words given; its
 * stdout and stderr go to /dev/null. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static int dropped(const char *e)
{
	static const char *const drop[] = {"LD_PRELOAD=", "MALLOC_CONF=", "TIERMALLOC_CONF="};
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (!strncmp(e, drop[i], strlen(drop[i])))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4 || atoi(argv[1]) < 1) {
		fprintf(stderr, "usage: spawn RUNS [VAR=VALUE ...] -- COMMAND [ARGS...]\n");
		return 2;
	}
	int runs = atoi(argv[1]), i = 2;
	size_t n = 0, cap = 16;
	for (char **e = environ; *e; e++)
		cap++;
	char **env = calloc(cap + (size_t)argc, sizeof(char *));
	for (char **e = environ; *e; e++)
		if (!dropped(*e))
			env[n++] = *e;
	for (; i < argc && strcmp(argv[i], "--"); i++)
		env[n++] = argv[i];
	if (i + 1 >= argc) {
		fprintf(stderr, "spawn: no command after --\n");
		return 2;
	}
	char **cmd = argv + i + 1;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	for (int r = 0; r < runs; r++) {
		struct timespec t0, t1;
		struct rusage ru;
		pid_t pid;
		int st;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (posix_spawnp(&pid, cmd[0], &fa, NULL, cmd, env)) {
			perror("spawn: posix_spawnp");
			return 1;
		}
		if (wait4(pid, &st, 0, &ru) != pid) {
			perror("spawn: wait4");
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "spawn: %s failed (status %#x)\n", cmd[0], st);
			return 1;
		}
		long us = (t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000;
		printf("%ld %ld\n", us, ru.ru_maxrss);
	}
	return 0;
}
