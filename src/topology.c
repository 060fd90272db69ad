/* Tier discovery.  Sources, most authoritative first:
 *   1. TIERMALLOC_CONF fast_nodes/slow_nodes (the user knows best);
 *   2. the kernel's memory tiers (/sys/devices/virtual/memory_tiering,
 *      lower id = faster), which already fold in HMAT and CXL (CDAT) data;
 *   3. HMAT read latencies when the kernel has no memory-tier sysfs;
 *   4. CPU-less nodes as far memory when nothing better is known.
 * Everything is intersected with the cpuset's allowed nodes. */
#define _GNU_SOURCE
#include <numaif.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "fmt.h"
#include "sysfs.h"
#include "topology.h"

struct tier_topology tier_topo;

#define NODE_DIR "/sys/devices/system/node"
#define MTIER_DIR "/sys/devices/virtual/memory_tiering"

/* No sscanf or snprintf here: the start-up text pays none of libc's
 * stdio pages (fmt.c). */
TIER_STARTUP static void read_meminfo(int n, struct tier_node *nd)
{
	char path[96], buf[2048];
	size_t total, free;
	tier_fmt(path, sizeof(path), NODE_DIR "/node%d/meminfo", n);
	if (tier_read_file(path, buf, sizeof(buf)) <= 0)
		return;
	if (tier_meminfo_parse(buf, &total, &free))
		nd->mem_free = free;
	if (total)
		nd->mem_total = total;
}

struct mtier_ctx {
	struct tier_topology *t;
};

TIER_STARTUP static int mtier_entry(const char *name, void *arg)
{
	struct mtier_ctx *c = arg;
	const char *end;
	char path[160], buf[128];
	long long id = strncmp(name, "memory_tier", 11) ? -1 : tier_digits(name + 11, &end);
	if (id < 0 || id > 1 << 20)
		return 0;
	tier_fmt(path, sizeof(path), MTIER_DIR "/%s/nodelist", name);
	tier_nodemask_t m;
	if (tier_read_file(path, buf, sizeof(buf)) <= 0 || tier_nodemask_parse(buf, strlen(buf), &m))
		return 0;
	for (int n = 0; n < TIER_MAX_NODES; n++)
		if ((m & c->t->present) >> n & 1)
			c->t->node[n].mtier = (int)id;
	return 0;
}

/* A fresh read starts from zero.  tier_topo is zero (.bss) until its
 * first read: a memset would make its 16 KiB resident in every process. */
TIER_STARTUP static void reset(struct tier_topology *t)
{
	TIER_BOOT_DATA static bool read_before;
	if (t != &tier_topo || read_before)
		memset(t, 0, sizeof(*t));
	if (t == &tier_topo)
		read_before = true;
}

/* Which nodes have memory, and which the cpuset allows. */
TIER_STARTUP static void read_nodes(struct tier_topology *t)
{
	char buf[256];
	/* Nodes with memory; older kernels lack has_memory, use online. */
	if (tier_read_file(NODE_DIR "/has_memory", buf, sizeof(buf)) <= 0 &&
	    tier_read_file(NODE_DIR "/online", buf, sizeof(buf)) <= 0) {
		strcpy(buf, "0");
		t->no_sysfs = true;
	}
	if (tier_nodemask_parse(buf, strlen(buf), &t->present))
		t->present = 1;

	/* Allowed nodes straight from the kernel: get_mempolicy does not
	 * allocate, unlike libnuma's bitmask helpers.  The mask must cover
	 * every possible node id or the kernel answers EINVAL. */
	unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {0};
	if (get_mempolicy(NULL, mask, 1024, NULL, MPOL_F_MEMS_ALLOWED) == 0)
		t->allowed = (tier_nodemask_t)mask[0];
	else
		t->allowed = t->present;
	for (int n = 0; n < TIER_MAX_NODES; n++) {
		struct tier_node *nd = &t->node[n];
		if (!(t->present >> n & 1))
			continue;
		nd->present = true;
		nd->read_latency = nd->mtier = -1; /* unknown: only present nodes are read */
		nd->allowed = t->allowed >> n & 1;
	}
}

/* The facts that decide tiers: CPUs, size, HMAT latency, kernel tier. */
TIER_STARTUP static void read_facts(struct tier_topology *t)
{
	char buf[256], path[128];
	/* Nodes with CPUs in one read; per node (cpulist) on kernels without
	 * has_cpu.  Node facts are read once per process, O(nodes). */
	tier_nodemask_t cpus = 0;
	bool have_cpus = tier_read_file(NODE_DIR "/has_cpu", buf, sizeof(buf)) >= 0 &&
			 (!buf[0] || tier_nodemask_parse(buf, strlen(buf), &cpus) == 0);
	for (int n = 0; n < TIER_MAX_NODES; n++) {
		struct tier_node *nd = &t->node[n];
		if (!(t->present >> n & 1))
			continue;
		if (have_cpus) {
			nd->has_cpu = cpus >> n & 1;
		} else {
			tier_fmt(path, sizeof(path), NODE_DIR "/node%d/cpulist", n);
			nd->has_cpu = tier_read_file(path, buf, sizeof(buf)) > 0;
		}
		read_meminfo(n, nd);
		long long lat;
		tier_fmt(path, sizeof(path), NODE_DIR "/node%d/access0/initiators/read_latency", n);
		if (tier_read_long(path, &lat) == 0 && lat > 0)
			nd->read_latency = (int)lat;
	}
	struct mtier_ctx c = {t};
	tier_dir_each(MTIER_DIR, mtier_entry, &c);
	t->partial = false;
}

TIER_STARTUP void tier_topology_read(struct tier_topology *t)
{
	reset(t);
	read_nodes(t);
	read_facts(t);
}

TIER_STARTUP void tier_topology_read_quick(struct tier_topology *t)
{
	reset(t);
	read_nodes(t);
	if (tier_bits64(t->present) != 1) {
		read_facts(t);
		return;
	}
	/* one node: the whole machine's memory is its own */
	struct tier_node *nd = &t->node[__builtin_ctzll(t->present)];
	struct sysinfo si;
	if (sysinfo(&si) == 0) {
		nd->mem_total = (uint64_t)si.totalram * si.mem_unit;
		nd->mem_free = (uint64_t)si.freeram * si.mem_unit;
	}
	nd->has_cpu = true; /* until read: it only words the reason */
	t->partial = true;
}

void tier_topology_complete(struct tier_topology *t)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static struct tier_topology full; /* 16 KiB: off the stack, under the lock */
	if (!__atomic_load_n(&t->partial, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&lock);
	if (t->partial) {
		tier_topology_read(&full);
		for (int n = 0; n < TIER_MAX_NODES; n++) { /* CXL facts as start read them */
			memcpy(full.node[n].cxl, t->node[n].cxl, sizeof(full.node[n].cxl));
			memcpy(full.node[n].cxl_devs, t->node[n].cxl_devs, sizeof(full.node[n].cxl_devs));
		}
		tier_topology_classify(&full, t->fast_ov, t->slow_ov);
		bool same = full.ntiers == t->ntiers;
		for (int i = 0; same && i < t->ntiers; i++)
			same = full.tier[i].nodes == t->tier[i].nodes;
		if (same) { /* the words change; the tiers in use stay */
			memcpy(t->node, full.node, sizeof(t->node));
			t->method = full.method;
			for (int i = 0; i < t->ntiers; i++) {
				memcpy(t->tier[i].reason, full.tier[i].reason, sizeof(full.tier[i].reason));
				memcpy(t->tier[i].kind, full.tier[i].kind, sizeof(full.tier[i].kind));
				memcpy(t->tier[i].devices, full.tier[i].devices, sizeof(full.tier[i].devices));
			}
		}
		__atomic_store_n(&t->partial, false, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&lock);
}

int tier_topology_tier_of(const struct tier_topology *t, int node)
{
	for (int i = 0; i < t->ntiers; i++)
		if (t->tier[i].nodes >> node & 1)
			return i;
	return -1;
}

static size_t append(char *buf, size_t len, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
TIER_STARTUP static size_t append(char *buf, size_t len, size_t n, const char *fmt, ...)
{
	if (n >= len)
		return n;
	va_list ap;
	va_start(ap, fmt);
	int r = tier_vfmt(buf + n, len - n, fmt, ap);
	va_end(ap);
	return r < 0 ? n : n + (size_t)r;
}

/* One clause per node: the facts that placed it in its tier. */
TIER_STARTUP static void explain(struct tier_topology *t, struct tier_tier *tt, const char *lead)
{
	size_t n = append(tt->reason, sizeof(tt->reason), 0, "%s", lead);
	size_t nd_len = 0;
	tier_fmt(tt->kind, sizeof(tt->kind), "node");
	tt->devices[0] = '\0';
	for (int i = 0; i < TIER_MAX_NODES; i++) {
		if (!(tt->nodes >> i & 1))
			continue;
		const struct tier_node *nd = &t->node[i];
		n = append(tt->reason, sizeof(tt->reason), n, "; node %d:", i);
		if (nd->mtier >= 0)
			n = append(tt->reason, sizeof(tt->reason), n, " kernel memory_tier%d,", nd->mtier);
		if (nd->read_latency >= 0)
			n = append(tt->reason, sizeof(tt->reason), n, " HMAT read latency %d ns,",
				   nd->read_latency);
		n = append(tt->reason, sizeof(tt->reason), n, " %s", nd->has_cpu ? "has CPUs" : "CPU-less");
		if (nd->cxl[0]) {
			n = append(tt->reason, sizeof(tt->reason), n, ", %s", nd->cxl);
			tier_fmt(tt->kind, sizeof(tt->kind), "cxl");
			if (nd->cxl_devs[0])
				nd_len = append(tt->devices, sizeof(tt->devices), nd_len, "%s%s",
						nd_len ? "+" : "", nd->cxl_devs);
		}
		n = append(tt->reason, sizeof(tt->reason), n, ", %llu MiB",
			   (unsigned long long)(nd->mem_total >> 20));
	}
}

TIER_STARTUP static void add_tier(struct tier_topology *t, tier_nodemask_t m)
{
	if (!m)
		return;
	if (t->ntiers == TIER_MAX_TIERS) { /* fold the rest into the slowest */
		t->tier[TIER_MAX_TIERS - 1].nodes |= m;
		return;
	}
	t->tier[t->ntiers++].nodes = m;
}

/* Group candidate nodes by an ordering key (ascending = faster). */
TIER_STARTUP static void group_by(struct tier_topology *t, tier_nodemask_t cand, int (*key)(const struct tier_node *))
{
	tier_nodemask_t left = cand;
	while (left) {
		int best = -1;
		for (int n = 0; n < TIER_MAX_NODES; n++)
			if ((left >> n & 1) && (best < 0 || key(&t->node[n]) < key(&t->node[best])))
				best = n;
		tier_nodemask_t m = 0;
		for (int n = 0; n < TIER_MAX_NODES; n++)
			if ((left >> n & 1) && key(&t->node[n]) == key(&t->node[best]))
				m |= (tier_nodemask_t)1 << n;
		add_tier(t, m);
		left &= ~m;
	}
}

TIER_STARTUP static int key_mtier(const struct tier_node *n) { return n->mtier; }
TIER_STARTUP static int key_latency(const struct tier_node *n) { return n->read_latency; }
TIER_STARTUP static int key_cpuless(const struct tier_node *n) { return !n->has_cpu; }

TIER_STARTUP void tier_topology_classify(struct tier_topology *t, tier_nodemask_t fast_ov, tier_nodemask_t slow_ov)
{
	char a[48], b[48];
	tier_nodemask_t cand = t->present & t->allowed;
	if (!cand)
		cand = t->present;
	/* tiers past the last count are zero already: clearing only those
	 * keeps a fresh topology's other 3.5 KiB untouched */
	int old = t->ntiers < 0 || t->ntiers > TIER_MAX_TIERS ? TIER_MAX_TIERS : t->ntiers;
	memset(t->tier, 0, sizeof(t->tier[0]) * (size_t)old);
	t->ntiers = 0;
	t->fast_ov = fast_ov;
	t->slow_ov = slow_ov;
	t->why_single[0] = t->warning[0] = '\0';

	bool all_mtier = true, all_lat = true, any_cpu = false, any_cpuless = false;
	for (int n = 0; n < TIER_MAX_NODES; n++) {
		if (!(cand >> n & 1))
			continue;
		all_mtier &= t->node[n].mtier >= 0;
		all_lat &= t->node[n].read_latency >= 0;
		any_cpu |= t->node[n].has_cpu;
		any_cpuless |= !t->node[n].has_cpu;
	}

	if (fast_ov || slow_ov) {
		tier_nodemask_t bad = (fast_ov | slow_ov) & ~cand;
		if (bad) {
			tier_fmt(t->warning, sizeof(t->warning),
				 "fast_nodes/slow_nodes name node(s) %s that have no memory or are not "
				 "allowed by the cpuset (allowed: %s); override ignored",
				 tier_nodemask_str(bad, a, sizeof(a)), tier_nodemask_str(cand, b, sizeof(b)));
		} else {
			tier_nodemask_t fast = fast_ov ? fast_ov : cand & ~slow_ov;
			tier_nodemask_t slow = slow_ov ? slow_ov : cand & ~fast_ov;
			t->method = "TIERMALLOC_CONF fast_nodes/slow_nodes";
			add_tier(t, fast);
			add_tier(t, slow);
			if (t->ntiers)
				explain(t, &t->tier[0], "set by TIERMALLOC_CONF fast_nodes");
			if (t->ntiers > 1)
				explain(t, &t->tier[1], "set by TIERMALLOC_CONF slow_nodes");
			goto done;
		}
	}
	if (all_mtier) {
		t->method = "kernel memory tiers";
		group_by(t, cand, key_mtier);
		for (int i = 0; i < t->ntiers; i++)
			explain(t, &t->tier[i], i == 0 ? "fastest kernel memory tier"
						       : "slower kernel memory tier (higher memory_tier id)");
	} else if (all_lat) {
		t->method = "HMAT read latency";
		group_by(t, cand, key_latency);
		for (int i = 0; i < t->ntiers; i++)
			explain(t, &t->tier[i], i == 0 ? "lowest HMAT read latency" : "higher HMAT read latency");
	} else if (any_cpu && any_cpuless) {
		t->method = "CPU-less nodes as far memory";
		group_by(t, cand, key_cpuless);
		explain(t, &t->tier[0], "nodes with CPUs (no kernel memory tiers or HMAT data)");
		explain(t, &t->tier[1], "CPU-less nodes, taken as far (CXL) memory");
	} else {
		t->method = "no tier information";
		add_tier(t, cand);
		explain(t, &t->tier[0], "all nodes");
	}
done:
	for (int i = 0; i < t->ntiers; i++)
		tier_nodemask_str(t->tier[i].nodes, t->tier[i].nodes_str, sizeof(t->tier[i].nodes_str));
	if (t->ntiers < 2) {
		int nc = tier_bits64(cand), np = tier_bits64(t->present);
		if (t->no_sysfs)
			tier_fmt(t->why_single, sizeof(t->why_single),
				 "cannot read " NODE_DIR " (sysfs not mounted?): one node assumed");
		else if (np == 1)
			tier_fmt(t->why_single, sizeof(t->why_single),
				 "single NUMA node (node %s): nothing to tier", t->tier[0].nodes_str);
		else if (nc == 1)
			tier_fmt(t->why_single, sizeof(t->why_single),
				 "the cpuset allows only node %s of nodes %s", t->tier[0].nodes_str,
				 tier_nodemask_str(t->present, a, sizeof(a)));
		else
			tier_fmt(t->why_single, sizeof(t->why_single),
				 "nodes %s are all one tier (%s)", t->tier[0].nodes_str,
				 all_mtier ? "the kernel puts them in the same memory tier"
					   : "no tier information tells them apart");
	}
}
