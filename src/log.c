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

char *tier_nodemask_str(tier_nodemask_t m, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < TIER_MAX_NODES && n < len; i++) {
		if (!(m >> i & 1))
			continue;
		int j = i;
		while (j + 1 < TIER_MAX_NODES && (m >> (j + 1) & 1))
			j++;
		int r = j > i ? snprintf(buf + n, len - n, "%s%d-%d", n ? "," : "", i, j)
			      : snprintf(buf + n, len - n, "%s%d", n ? "," : "", i);
		if (r < 0)
			break;
		n += (size_t)r;
		i = j;
	}
	return buf;
}

/* Accepts ',' and '+' between items so that a list can sit inside a
 * TIERMALLOC_CONF value ("fast_nodes:0+2"). */
int tier_nodemask_parse(const char *s, size_t len, tier_nodemask_t *out)
{
	tier_nodemask_t m = 0;
	size_t i = 0;
	if (len == 0)
		return -1;
	while (i < len) {
		long a = -1, b;
		for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
			a = (a < 0 ? 0 : a) * 10 + (s[i] - '0');
			if (a >= TIER_MAX_NODES)
				return -1;
		}
		if (a < 0)
			return -1;
		b = a;
		if (i < len && s[i] == '-') {
			i++;
			b = -1;
			for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
				b = (b < 0 ? 0 : b) * 10 + (s[i] - '0');
				if (b >= TIER_MAX_NODES)
					return -1;
			}
			if (b < a)
				return -1;
		}
		for (long k = a; k <= b; k++)
			m |= (tier_nodemask_t)1 << k;
		if (i < len) {
			if (s[i] != ',' && s[i] != '+')
				return -1;
			i++;
			if (i == len)
				return -1;
		}
	}
	*out = m;
	return 0;
}
