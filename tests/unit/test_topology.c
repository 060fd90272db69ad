/* Tier classification from node facts (pure logic; the real kernel
 * topologies are exercised in the tiered VM). */
#include <string.h>

#include "../tap.h"
#include "topology.h"

static struct tier_topology t;

static void node(int id, bool cpu, int mtier, int lat)
{
	struct tier_node *n = &t.node[id];
	n->present = true;
	n->allowed = true;
	n->has_cpu = cpu;
	n->mtier = mtier;
	n->read_latency = lat;
	n->mem_total = 1ull << 30;
	t.present |= 1ull << id;
	t.allowed |= 1ull << id;
}

static void reset(void)
{
	memset(&t, 0, sizeof(t));
	for (int i = 0; i < TIER_MAX_NODES; i++)
		t.node[i].mtier = t.node[i].read_latency = -1;
}

int main(void)
{
	reset();
	node(0, true, 4, -1);
	tier_topology_classify(&t, 0, 0);
	ok(t.ntiers == 1 && strstr(t.why_single, "single NUMA node"), "one node: one tier (%s)",
	   t.why_single);

	reset();
	node(0, true, 4, 100);
	node(1, false, 37, 250);
	tier_topology_classify(&t, 0, 0);
	ok(t.ntiers == 2 && t.tier[0].nodes == 1 && t.tier[1].nodes == 2 && !t.why_single[0],
	   "kernel tiers 4 and 37: node 0 fast, node 1 slow");
	ok(strstr(t.tier[1].reason, "memory_tier37") && strstr(t.tier[1].reason, "CPU-less") &&
		   strstr(t.tier[1].reason, "250 ns"),
	   "slow tier explains itself: %s", t.tier[1].reason);
	ok(!strcmp(t.method, "kernel memory tiers"), "method: %s", t.method);

	/* the cpuset leaves one node */
	t.allowed = 1;
	tier_topology_classify(&t, 0, 0);
	ok(t.ntiers == 1 && strstr(t.why_single, "cpuset allows only node 0"), "cpuset: %s",
	   t.why_single);

	reset(); /* flat: two nodes in one kernel tier */
	node(0, true, 4, -1);
	node(1, false, 4, -1);
	tier_topology_classify(&t, 0, 0);
	ok(t.ntiers == 1 && t.tier[0].nodes == 3 && strstr(t.why_single, "same memory tier"),
	   "flat: one tier of nodes 0-1 (%s)", t.why_single);

	reset(); /* three tiers, listed out of order */
	node(0, true, 4, -1);
	node(1, false, 37, -1);
	node(2, false, 22, -1);
	tier_topology_classify(&t, 0, 0);
	ok(t.ntiers == 3 && t.tier[0].nodes == 1 && t.tier[1].nodes == 4 && t.tier[2].nodes == 2,
	   "three kernel tiers ordered by id");

	reset(); /* no memory-tier sysfs: HMAT latencies decide */
	node(0, true, -1, 110);
	node(1, false, -1, 300);
	node(2, true, -1, 110);
	tier_topology_classify(&t, 0, 0);
	ok(t.ntiers == 2 && t.tier[0].nodes == 5 && t.tier[1].nodes == 2 &&
		   !strcmp(t.method, "HMAT read latency"),
	   "HMAT: equal latencies share a tier");

	reset(); /* nothing but CPU-less-ness */
	node(0, true, -1, -1);
	node(1, false, -1, -1);
	tier_topology_classify(&t, 0, 0);
	ok(t.ntiers == 2 && t.tier[1].nodes == 2 && strstr(t.tier[1].reason, "CPU-less"),
	   "CPU-less node is far memory when nothing else is known");

	reset(); /* an override wins */
	node(0, true, 4, -1);
	node(1, false, 37, -1);
	tier_topology_classify(&t, 2, 1);
	ok(t.ntiers == 2 && t.tier[0].nodes == 2 && t.tier[1].nodes == 1 &&
		   strstr(t.tier[0].reason, "TIERMALLOC_CONF"),
	   "fast_nodes:1,slow_nodes:0 reverses the tiers");
	tier_topology_classify(&t, 0, 1);
	ok(t.ntiers == 2 && t.tier[0].nodes == 2, "slow_nodes alone: the rest is fast");
	tier_topology_classify(&t, 1ull << 5, 0);
	ok(t.ntiers == 2 && t.tier[0].nodes == 1 && strstr(t.warning, "5") &&
		   strstr(t.warning, "override ignored"),
	   "an override naming a missing node is ignored: %s", t.warning);
	ok(tier_topology_tier_of(&t, 1) == 1 && tier_topology_tier_of(&t, 7) == -1, "tier_of");

	/* facts from this machine parse without error */
	struct tier_topology real;
	tier_topology_read(&real);
	tier_topology_classify(&real, 0, 0);
	ok(real.present && real.ntiers >= 1 && real.allowed, "this host: %d tier(s), %s", real.ntiers,
	   real.ntiers > 1 ? real.method : real.why_single);
	/* has_cpu from the node mask, and both meminfo lines */
	int n0 = __builtin_ctzll(real.present);
	int cpu_nodes = 0;
	for (int n = 0; n < TIER_MAX_NODES; n++)
		cpu_nodes += real.node[n].present && real.node[n].has_cpu;
	ok(cpu_nodes >= 1 && real.node[n0].mem_total > 0 && real.node[n0].mem_free > 0 &&
		   real.node[n0].mem_free <= real.node[n0].mem_total,
	   "this host: %d node(s) with CPUs; node %d: %llu MiB, %llu MiB free", cpu_nodes, n0,
	   (unsigned long long)(real.node[n0].mem_total >> 20),
	   (unsigned long long)(real.node[n0].mem_free >> 20));
	/* the start's quick read: the same tiers, and once completed the same
	 * words as a full read */
	static struct tier_topology quick;
	tier_topology_read_quick(&quick);
	tier_topology_classify(&quick, 0, 0);
	bool one = __builtin_popcountll(real.present) == 1;
	ok(quick.partial == one && quick.ntiers == real.ntiers && quick.tier[0].nodes == real.tier[0].nodes &&
		   quick.node[n0].mem_total > 0 && !strcmp(quick.why_single, real.why_single),
	   "quick read: %s, %d tier(s), node %d %llu MiB", quick.partial ? "partial" : "full", quick.ntiers,
	   n0, (unsigned long long)(quick.node[n0].mem_total >> 20));
	tier_topology_complete(&quick);
	ok(!quick.partial && !strcmp(quick.method, real.method) &&
		   !strcmp(quick.tier[0].reason, real.tier[0].reason),
	   "completed: %s: %s", quick.method, quick.tier[0].reason);
	return done();
}
