/* The fast nodes' free room (room.h): MemFree from each node's meminfo,
 * less its zones' high watermarks and lowmem protections from
 * /proc/zoneinfo.  No stdio, no malloc: it runs on the background thread,
 * under the balance lock. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fmt.h"
#include "room.h"
#include "sysfs.h"

/* Watermarks change with min_free_kbytes, watermark_scale_factor or
 * memory hotplug: rarely.  zoneinfo is long (a block of per-CPU lines per
 * zone), so it is read again only this often. */
#define ROOM_RESERVE_NS (10ull * 1000000000ull)

void tier_room_zoneinfo_begin(struct tier_room_zoneinfo *z)
{
	memset(z, 0, sizeof(*z));
	z->node = -1;
}

/* The zone read so far joins its node's reserve (empty zones reserve
 * nothing: their watermarks are never checked). */
static void zone_end(struct tier_room_zoneinfo *z)
{
	if (z->node >= 0 && z->managed)
		z->reserve[z->node] += (z->high + z->prot) << TIER_PAGE_SHIFT;
	z->high = z->prot = z->managed = 0;
}

/* "key  N" after blanks, key followed by a blank (not "high:" of the
 * per-CPU lists); *v the number */
static bool keyed(const char *l, const char *key, size_t *v)
{
	size_t k = strlen(key);
	if (strncmp(l, key, k) || (l[k] != ' ' && l[k] != '\t'))
		return false;
	const char *end;
	long long n = tier_digits(tier_blanks(l + k), &end);
	*v = n < 0 ? 0 : (size_t)n;
	return n >= 0;
}

static void zone_line(struct tier_room_zoneinfo *z, const char *l)
{
	const char *end;
	if (!strncmp(l, "Node ", 5)) { /* "Node 0, zone   Normal" */
		zone_end(z);
		long long n = tier_digits(tier_blanks(l + 5), &end);
		z->node = n >= 0 && n < TIER_MAX_NODES ? (int)n : -1;
		return;
	}
	l = tier_blanks(l);
	size_t v;
	if (keyed(l, "high", &v))
		z->high = v;
	else if (keyed(l, "managed", &v))
		z->managed = v;
	else if (!strncmp(l, "protection: (", 13)) /* "(0, 739, 739, 739, 739)" */
		for (const char *c = l + 13; *c && *c != ')';) {
			long long p = tier_digits(tier_blanks(c), &end);
			if (p < 0)
				break;
			if ((size_t)p > z->prot)
				z->prot = (size_t)p;
			c = end;
			while (*c == ',' || *c == ' ')
				c++;
		}
}

void tier_room_zoneinfo_feed(struct tier_room_zoneinfo *z, const char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = buf[i];
		if (c != '\n') {
			/* a line longer than the buffer is cut: none that matters is */
			if (z->len < sizeof(z->line) - 1)
				z->line[z->len++] = c;
			continue;
		}
		z->line[z->len] = 0;
		zone_line(z, z->line);
		z->len = 0;
	}
}

void tier_room_zoneinfo_end(struct tier_room_zoneinfo *z)
{
	if (z->len)
		tier_room_zoneinfo_feed(z, "\n", 1);
	zone_end(z);
}

static size_t reserve[TIER_MAX_NODES];
static uint64_t reserve_at;
static bool reserve_read;

static void read_reserve(void)
{
	int fd = open("/proc/zoneinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	struct tier_room_zoneinfo z;
	tier_room_zoneinfo_begin(&z);
	char buf[4096];
	ssize_t r;
	while ((r = read(fd, buf, sizeof(buf))) > 0 || (r < 0 && errno == EINTR))
		if (r > 0)
			tier_room_zoneinfo_feed(&z, buf, (size_t)r);
	close(fd);
	if (r == 0) {
		tier_room_zoneinfo_end(&z);
		memcpy(reserve, z.reserve, sizeof(reserve));
		reserve_read = true;
	}
}

bool tier_room_free(tier_nodemask_t mask, size_t *bytes)
{
	uint64_t now = tier_clock_ns(CLOCK_MONOTONIC);
	if (!reserve_read || now - reserve_at >= ROOM_RESERVE_NS) {
		read_reserve();
		reserve_at = now;
	}
	size_t sum = 0;
	for (int node = 0; node < TIER_MAX_NODES; node++) {
		if (!(mask >> node & 1))
			continue;
		char path[96], buf[2048];
		size_t total, free;
		tier_fmt(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo", node);
		if (tier_read_file(path, buf, sizeof(buf)) <= 0 || !tier_meminfo_parse(buf, &total, &free))
			return false;
		if (free > reserve[node])
			sum += free - reserve[node];
	}
	*bytes = sum;
	return true;
}
