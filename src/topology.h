/* Memory tiers: which NUMA nodes are fast and which are slow, and why. */
#ifndef TIER_TOPOLOGY_H
#define TIER_TOPOLOGY_H

#include "tier.h"

struct tier_node {
	bool present;        /* has memory */
	bool has_cpu;
	bool allowed;        /* in this process's cpuset */
	uint64_t mem_total;  /* bytes */
	uint64_t mem_free;
	int read_latency;    /* ns, from HMAT (access0 initiators); -1 unknown */
	int mtier;           /* kernel memory_tier id; -1 unknown */
	char cxl[48];        /* "CXL region0" when a CXL region backs it */
	char cxl_devs[48];   /* its memory devices: "mem0" or "mem0+mem1" */
};

struct tier_tier {
	tier_nodemask_t nodes;
	char nodes_str[48];
	char reason[384];
	char kind[8];        /* "cxl" when a CXL region backs one of its nodes, else "node" */
	char devices[64];    /* those regions' memory devices ("mem0"), or "" */
};

/* What a one-node start writes comes first (16 KiB in all, of which it
 * writes about 1: two pages rather than three). */
struct tier_topology {
	tier_nodemask_t present;     /* nodes with memory */
	tier_nodemask_t allowed;     /* cpuset mems */
	bool no_sysfs;               /* the node directory could not be read */
	bool partial;                /* tier_topology_read_quick left facts out */
	int ntiers;
	tier_nodemask_t fast_ov, slow_ov; /* the overrides of the last classify */
	const char *method;          /* how tiers were decided */
	char why_single[256];        /* when ntiers < 2: why tiering is off */
	char warning[256];           /* a rejected override, etc. */
	struct tier_tier tier[TIER_MAX_TIERS];
	struct tier_node node[TIER_MAX_NODES];
};

/* The process's topology: read and classified at boot (init.c), refined
 * by CXL facts at start. */
extern struct tier_topology tier_topo;

/* Fill nodes from sysfs and the kernel's mempolicy; never allocates. */
void tier_topology_read(struct tier_topology *t);
/* The same where two or more nodes have memory.  Where one has, nothing
 * can be tiered whatever its facts, and only its size is read (sysinfo):
 * a process's start pays 3 system calls instead of about 20.  The facts
 * left out (CPUs, HMAT latency, kernel memory tier) only fill the texts
 * that say why; t->partial is set until tier_topology_complete. */
void tier_topology_read_quick(struct tier_topology *t);
/* Before showing a tier's method or reason: a partial topology is read in
 * full (its CXL facts kept) and classified again with its overrides; the
 * tiers do not change.  Never allocates. */
void tier_topology_complete(struct tier_topology *t);
/* Add CXL region facts through libcxl (loaded on demand); may allocate,
 * so call it outside the allocator.  Returns the number of CXL nodes. */
int tier_topology_read_cxl(struct tier_topology *t);
/* Decide tiers from the node facts and an optional override (pure). */
void tier_topology_classify(struct tier_topology *t, tier_nodemask_t fast_override,
                            tier_nodemask_t slow_override);
/* Tier index of a node, or -1. */
int tier_topology_tier_of(const struct tier_topology *t, int node);

/* The CXL regions' device ranges: what translates a record's device
 * physical address (dpa) into a host one.  One per interleave target. */
struct tier_cxl_devmap {
	char memdev[32];
	uint64_t dpa_base, dpa_size; /* the endpoint decoder's device range */
	uint64_t hpa_base;           /* the region's host physical base */
	uint64_t gran;
	unsigned ways, pos;
	bool refused;                /* interleave arithmetic we do not translate */
};
#define TIER_CXL_DEVMAP_MAX 16
/* Read them from sysfs (topology_cxl.c, every CXL region read is there);
 * returns how many, at most max.  *refused counts the regions that
 * interleave host bridges with arithmetic we do not translate; say_refused
 * logs each of those. */
int tier_topology_cxl_devmap(struct tier_cxl_devmap *out, int max, unsigned *refused, bool say_refused);

#endif
