/* Diagnostics: messages go straight to fd 2 with write(2), never through
 * stdio or malloc, so they are safe at init time and from any thread. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tier.h"

void tier_log(const char *fmt, ...)
{
	char buf[512];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "tiermalloc: ");
	va_list ap;
	va_start(ap, fmt);
	int r = vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	if (r < 0)
		return;
	n += (size_t)r < sizeof(buf) - n - 1 ? (size_t)r : sizeof(buf) - n - 2;
	buf[n++] = '\n';
	for (size_t off = 0; off < n;) {
		ssize_t w = write(2, buf + off, n - off);
		if (w <= 0)
			return;
		off += (size_t)w;
	}
}

