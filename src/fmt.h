/* snprintf for the text made at start-up (fmt.c). */
#ifndef TIER_FMT_H
#define TIER_FMT_H

#include <stdarg.h>
#include <stddef.h>

/* snprintf's result for %s, %c, %d, %u, %x, with l, ll or z, and %%
 * (no flags, width or precision); -1 for any other conversion. */
int tier_vfmt(char *buf, size_t len, const char *fmt, va_list ap);
int tier_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
