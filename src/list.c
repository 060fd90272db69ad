/* The list splitter (list.h) and the node lists built on it. */
#include <stdio.h>
#include <string.h>

#include "fmt.h"
#include "list.h"
#include "tier.h"

TIER_STARTUP int tier_list_parse(const char *v, size_t len, const char *seps,
		    int (*item)(void *ctx, const char *s, size_t n), void *ctx)
{
	if (len == 0)
		return -1;
	for (size_t i = 0;;) {
		size_t j = i;
		while (j < len && !strchr(seps, v[j]))
			j++;
		if (j == i || item(ctx, v + i, j - i))
			return -1;
		if (j == len)
			return 0;
		i = j + 1;
		if (i == len)
			return -1; /* a trailing separator */
	}
}

/* A decimal node number below TIER_MAX_NODES; the bytes it used, or 0. */
static size_t node_num(const char *s, size_t n, long *out)
{
	size_t i = 0;
	long v = 0;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		v = v * 10 + (s[i] - '0');
		if (v >= TIER_MAX_NODES)
			return 0;
	}
	*out = v;
	return i;
}

/* "3" or "2-5" */
TIER_STARTUP static int node_range(void *ctx, const char *s, size_t n)
{
	long a, b;
	size_t i = node_num(s, n, &a);
	if (!i)
		return -1;
	b = a;
	if (i < n) {
		size_t k = s[i] == '-' ? node_num(s + i + 1, n - i - 1, &b) : 0;
		if (!k || i + 1 + k != n || b < a)
			return -1;
	}
	for (long k = a; k <= b; k++)
		*(tier_nodemask_t *)ctx |= (tier_nodemask_t)1 << k;
	return 0;
}

/* Accepts ',' and '+' between items so that a list can sit inside a
 * TIERMALLOC_CONF value ("fast_nodes:0+2"). */
TIER_STARTUP int tier_nodemask_parse(const char *s, size_t len, tier_nodemask_t *out)
{
	tier_nodemask_t m = 0;
	if (tier_list_parse(s, len, ",+", node_range, &m))
		return -1;
	*out = m;
	return 0;
}

TIER_STARTUP char *tier_nodemask_str(tier_nodemask_t m, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < TIER_MAX_NODES && n < len; i++) {
		if (!(m >> i & 1))
			continue;
		int j = i;
		while (j + 1 < TIER_MAX_NODES && (m >> (j + 1) & 1))
			j++;
		int r = j > i ? tier_fmt(buf + n, len - n, "%s%d-%d", n ? "," : "", i, j)
			      : tier_fmt(buf + n, len - n, "%s%d", n ? "," : "", i);
		if (r < 0)
			break;
		n += (size_t)r;
		i = j;
	}
	return buf;
}
