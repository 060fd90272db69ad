/* The fast nodes' free room (src/room.c): its readers of the kernel's text. */
#include <string.h>

#include "../tap.h"
#include "room.h"
#include "sysfs.h"

/* Node 0 of the tiered VM as a move saw ENOMEM (2026-12-07): DMA with
 * 729 pages free under its protection of 739, DMA32 under its min. */
static const char zoneinfo[] =
	"Node 0, zone      DMA\n"
	"  per-node stats\n"
	"      nr_inactive_anon 1234\n"
	"  pages free     729\n"
	"        boost    0\n"
	"        min      11\n"
	"        low      14\n"
	"        high     17\n"
	"        promo    20\n"
	"        spanned  4095\n"
	"        present  3998\n"
	"        managed  3840\n"
	"        cma      0\n"
	"        protection: (0, 739, 739, 739, 739)\n"
	"      nr_free_pages 729\n"
	"  pagesets\n"
	"    cpu: 0\n"
	"              count: 0\n"
	"              high:  0\n"
	"              batch: 1\n"
	"Node 0, zone    DMA32\n"
	"  pages free     1859\n"
	"        min      1989\n"
	"        low      2178\n"
	"        high     2367\n"
	"        managed  189262\n"
	"        protection: (0, 0, 0, 0, 0)\n"
	"    cpu: 1\n"
	"              high:  378\n"
	"Node 0, zone   Normal\n"
	"  pages free     0\n"
	"        high     0\n"
	"        managed  0\n"
	"        protection: (0, 0, 0, 0, 0)\n"
	"Node 0, zone  Movable\n"
	"  pages free     0\n"
	"        high     32\n"
	"        managed  0\n"
	"        protection: (0, 0, 0, 0, 0)\n"
	"Node 1, zone    DMA32\n"
	"  pages free     240293\n"
	"        high     14205\n"
	"        managed  248401\n"
	"        protection: (0, 0, 0, 0, 0)";

static void parse(size_t piece, struct tier_room_zoneinfo *z)
{
	tier_room_zoneinfo_begin(z);
	size_t n = strlen(zoneinfo);
	for (size_t i = 0; i < n; i += piece)
		tier_room_zoneinfo_feed(z, zoneinfo + i, n - i < piece ? n - i : piece);
	tier_room_zoneinfo_end(z);
}

int main(void)
{
	struct tier_room_zoneinfo z;
	parse(sizeof(zoneinfo), &z);
	/* DMA: high 17 + protection 739; DMA32: 2367; empty zones nothing */
	ok(z.reserve[0] == (size_t)(17 + 739 + 2367) * 4096, "node 0's reserve: high + protection of its zones with pages (%zu)",
	   z.reserve[0] / 4096);
	ok(z.reserve[1] == (size_t)14205 * 4096, "node 1's (the last zone, no newline at the end): %zu", z.reserve[1] / 4096);
	ok(z.reserve[2] == 0, "a node not in the text reserves nothing");
	size_t same = 1;
	for (size_t piece = 1; piece < 64; piece += 7) {
		struct tier_room_zoneinfo y;
		parse(piece, &y);
		same &= y.reserve[0] == z.reserve[0] && y.reserve[1] == z.reserve[1];
	}
	ok(same, "the same read in pieces of 1 to 57 bytes (lines across reads)");
	/* node 0's free memory then: 729 + 1859 pages, all of it under the reserve */
	size_t free, total;
	ok(tier_meminfo_parse("Node 0 MemTotal:  755000 kB\nNode 0 MemFree:   10352 kB\nNode 0 MemUsed: 1 kB\n", &total, &free) &&
		   free == (size_t)10352 << 10 && total == (size_t)755000 << 10,
	   "MemFree and MemTotal of a node's meminfo");
	ok(free < z.reserve[0], "... under node 0's reserve: no room, where the high watermarks alone left 0.8 MiB");
	ok(!tier_meminfo_parse("Node 0 MemTotal:  755000 kB\n", &total, &free) && total == (size_t)755000 << 10,
	   "no MemFree line: not read (MemTotal is)");
	ok(!tier_meminfo_parse("Node 0 MemFree:  kB\n", &total, &free), "MemFree without a number: not read");
	return done();
}
