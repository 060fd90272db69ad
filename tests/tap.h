/* Minimal TAP output for the C tests: ok(cond, name...), then done(). */
#ifndef TIER_TAP_H
#define TIER_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int tap_n, tap_failed;

#define TAP_FN static __attribute__((unused))

__attribute__((format(printf, 2, 3))) TAP_FN int ok(int cond, const char *fmt, ...)
{
	va_list ap;
	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		tap_failed++;
	return cond;
}

__attribute__((format(printf, 1, 2))) TAP_FN void diag(const char *fmt, ...)
{
	va_list ap;
	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* Run this test again with name=value in its environment, unless that is
 * already so: tiermalloc and jemalloc read their settings once, at the
 * first allocation, before main can change them. */
TAP_FN void tap_rerun_with(char **argv, const char *name, const char *value)
{
	const char *v = getenv(name);
	if (v && !strcmp(v, value))
		return;
	setenv(name, value, 1);
	fflush(stdout);
	execv("/proc/self/exe", argv);
	perror("execv /proc/self/exe");
	exit(1);
}

TAP_FN int done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
