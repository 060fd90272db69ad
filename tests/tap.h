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

/* Text written through a callback (tier_stats_print's write_cb), kept. */
static char tap_out[16384];
static size_t tap_outn;
TAP_FN void tap_out_cb(void *opaque, const char *s)
{
	(void)opaque;
	size_t n = strlen(s);
	if (tap_outn + n < sizeof(tap_out)) {
		memcpy(tap_out + tap_outn, s, n);
		tap_outn += n;
		tap_out[tap_outn] = '\0';
	}
}

TAP_FN void tap_out_reset(void)
{
	tap_outn = 0;
	tap_out[0] = '\0';
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
