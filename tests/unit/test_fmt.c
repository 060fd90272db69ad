/* The start-up formatter (src/fmt.c) against snprintf, truncation
 * included, and its refusal of conversions it does not know. */
#include <limits.h>
#include <stdint.h>

#include "../tap.h"
#include "fmt.h"

#define SAME(len, ...)                                                                     \
	do {                                                                               \
		char a[len], b[len];                                                       \
		volatile size_t n_ = len; /* truncation on purpose: no warning */          \
		int ra = tier_fmt(a, n_, __VA_ARGS__);                                     \
		int rb = snprintf(b, n_, __VA_ARGS__);                                     \
		ok(ra == rb && !strcmp(a, b), "%-40s [%d] \"%s\" (%d)", #__VA_ARGS__, len, a, ra); \
	} while (0)

int main(void)
{
	SAME(64, "plain text");
	SAME(64, "%s and %s", "one", "two");
	SAME(64, "%d %d %d", 0, -1, INT_MIN);
	SAME(64, "%u %x %llu", 4000000000u, 0xbeefu, (unsigned long long)ULLONG_MAX);
	SAME(64, "%ld %lu %zu", LONG_MIN, ULONG_MAX, (size_t)SIZE_MAX);
	SAME(64, "%lld %c%%", LLONG_MIN, 'x');
	SAME(64, "/sys/devices/system/node/node%d/meminfo", 17);
	SAME(8, "truncated %s", "here");
	SAME(1, "%s", "nothing fits");
	SAME(64, "%s%d-%d", ",", 0, 3);
	char buf[16] = "x";
	ok(tier_fmt(buf, sizeof(buf), "%5d", 1) == -1 && buf[0] == '\0', "a width is refused, buffer empty");
	ok(tier_fmt(buf, sizeof(buf), "%.2f", 1.0) == -1, "a precision is refused");
	ok(tier_fmt(NULL, 0, "%d", 12345) == 5, "length only, as snprintf(NULL, 0)");
	return done();
}
