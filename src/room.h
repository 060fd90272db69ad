/* The fast nodes' real free room: what a promotion can take before the
 * kernel's page allocator falls to reclaim.  The fast-tier budget counts
 * only this process's committed pages; the same nodes also hold its
 * page tables, the program's own metadata, other processes and the
 * kernel.  In the tiered VM's bench (node 0 squeezed to the budget plus
 * the watermarks) the budget still showed room when node 0 had none:
 * each promotion then went through direct reclaim and compaction, left
 * pages behind, and was retried block by block, 60-75% of the engine's
 * migration CPU (2026-12-07, KV). */
#ifndef TIER_ROOM_H
#define TIER_ROOM_H

#include <stdbool.h>
#include <stddef.h>

#include "tier.h"

/* Free bytes on the nodes of mask that a page migration can take without
 * reclaim, summed: each node's free memory less, for each of its zones,
 * the high watermark (what kswapd keeps free: below it the allocator
 * wakes it and, on a tiered machine, it demotes) and the zone's lowmem
 * protection against movable allocations.  The protection matters: in the
 * tiered VM node 0's DMA zone held 2.8 MiB free that a user page may never
 * take, and DMA32 was under its min watermark; every move there failed
 * with ENOMEM after 11-40 ms of reclaim.  False when a node's free memory
 * cannot be read.  One small sysfs read per node; the zones' reserves
 * (/proc/zoneinfo: long on machines with many CPUs) are read again every
 * ROOM_RESERVE_NS.  A zone whose free pages are under its reserve makes
 * the figure low by the difference (it is counted from the node's total),
 * never high. */
bool tier_room_free(tier_nodemask_t mask, size_t *bytes);

/* Pure parts, for the unit tests (a node's MemFree is sysfs.h's
 * tier_meminfo_parse): each node's reserve in zoneinfo text (out:
 * reserve[node], bytes: high watermark + the largest lowmem protection,
 * over the zones with managed pages), fed in pieces of any size; the
 * state carries a partial line. */
struct tier_room_zoneinfo {
	int node;          /* the node of the zone being read, -1 before any */
	size_t high, prot, managed; /* of the zone being read, pages */
	size_t len;        /* bytes of a partial line held in line[] */
	char line[160];
	size_t reserve[TIER_MAX_NODES];
};
void tier_room_zoneinfo_begin(struct tier_room_zoneinfo *z);
void tier_room_zoneinfo_feed(struct tier_room_zoneinfo *z, const char *buf, size_t n);
/* The end of the text: counts the last zone. */
void tier_room_zoneinfo_end(struct tier_room_zoneinfo *z);

#endif
