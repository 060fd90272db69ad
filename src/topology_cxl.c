/* CXL facts for the topology: which nodes are backed by CXL regions.
 * libcxl is loaded only when /sys/bus/cxl exists, so that ordinary
 * processes do not pay for it (it pulls in libkmod, libudev, libcrypto).
 * libcxl 76 has no region→node call: a region's physical range is matched
 * against the memory blocks, whose sysfs directories name their node. */
#define _GNU_SOURCE
#include <cxl/libcxl.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cxl_report.h"
#include "sysfs.h"
#include "topology.h"

struct cxl_api {
	int (*new_)(struct cxl_ctx **);
	void (*unref)(struct cxl_ctx *);
	void (*set_log_priority)(struct cxl_ctx *, int);
	struct cxl_bus *(*bus_first)(struct cxl_ctx *);
	struct cxl_bus *(*bus_next)(struct cxl_bus *);
	struct cxl_port *(*bus_port)(struct cxl_bus *);
	struct cxl_decoder *(*dec_first)(struct cxl_port *);
	struct cxl_decoder *(*dec_next)(struct cxl_decoder *);
	struct cxl_region *(*reg_first)(struct cxl_decoder *);
	struct cxl_region *(*reg_next)(struct cxl_region *);
	const char *(*reg_name)(struct cxl_region *);
	unsigned long long (*reg_size)(struct cxl_region *);
	unsigned long long (*reg_resource)(struct cxl_region *);
};

static int load(void *h, struct cxl_api *a)
{
#define SYM(f, n) if (!(*(void **)&a->f = dlsym(h, n))) return -1
	SYM(new_, "cxl_new");
	SYM(unref, "cxl_unref");
	SYM(set_log_priority, "cxl_set_log_priority");
	SYM(bus_first, "cxl_bus_get_first");
	SYM(bus_next, "cxl_bus_get_next");
	SYM(bus_port, "cxl_bus_get_port");
	SYM(dec_first, "cxl_decoder_get_first");
	SYM(dec_next, "cxl_decoder_get_next");
	SYM(reg_first, "cxl_region_get_first");
	SYM(reg_next, "cxl_region_get_next");
	SYM(reg_name, "cxl_region_get_devname");
	SYM(reg_size, "cxl_region_get_size");
	SYM(reg_resource, "cxl_region_get_resource");
#undef SYM
	return 0;
}

static int node_entry(const char *name, void *arg)
{
	int n;
	if (sscanf(name, "node%d", &n) == 1) {
		*(int *)arg = n;
		return 1;
	}
	return 0;
}

/* Node holding physical range [start, start+size), or -1. */
static int node_of_range(unsigned long long start, unsigned long long size)
{
	char buf[64], path[96];
	if (tier_read_file("/sys/devices/system/memory/block_size_bytes", buf, sizeof(buf)) <= 0)
		return -1;
	unsigned long long bs = strtoull(buf, NULL, 16);
	if (!bs || !size)
		return -1;
	for (unsigned long long b = start / bs; b <= (start + size - 1) / bs; b++) {
		int node = -1;
		snprintf(path, sizeof(path), "/sys/devices/system/memory/memory%llu", b);
		if (tier_dir_each(path, node_entry, &node) > 0)
			return node;
	}
	return -1;
}

/* The memory devices of a region: each target names an endpoint decoder;
 * its port's uport is the memdev (.../endpoint2/uport -> .../mem0). */
static void region_devs(const char *region, char *out, size_t len)
{
	char path[PATH_MAX], dec[64], real[PATH_MAX];
	size_t n = 0;
	out[0] = '\0';
	for (int k = 0; k < 16; k++) {
		snprintf(path, sizeof(path), "/sys/bus/cxl/devices/%s/target%d", region, k);
		if (tier_read_file(path, dec, sizeof(dec)) <= 0)
			break;
		dec[strcspn(dec, "\n")] = '\0';
		snprintf(path, sizeof(path), "/sys/bus/cxl/devices/%s", dec);
		if (!dec[0] || !realpath(path, real))
			continue;
		char *slash = strrchr(real, '/');
		if (!slash)
			continue;
		*slash = '\0';
		snprintf(path, sizeof(path), "%.*s/uport", (int)(sizeof(path) - 7), real);
		if (!realpath(path, real) || !(slash = strrchr(real, '/')) || strncmp(slash + 1, "mem", 3))
			continue;
		size_t l = strlen(slash + 1);
		if (n + l + 2 > len)
			break;
		n += (size_t)snprintf(out + n, len - n, "%s%s", n ? "+" : "", slash + 1);
	}
}

static int region_entry(const char *name, void *arg)
{
	(void)arg;
	return !strncmp(name, "region", 6);
}

TIER_STARTUP int tier_topology_read_cxl(struct tier_topology *t)
{
	/* libcxl pulls in libkmod, libudev and libcrypto (1.4 MiB resident,
	 * and libcrypto stays after dlclose), and kernels with CXL support
	 * have /sys/bus/cxl without any CXL memory: load it only when a CXL
	 * region exists and there is more than one node for it to explain. */
	if (tier_bits64(t->present) < 2 ||
	    tier_dir_each("/sys/bus/cxl/devices", region_entry, NULL) <= 0)
		return 0;
	void *h = dlopen("libcxl.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return 0;
	struct cxl_api a;
	struct cxl_ctx *ctx = NULL;
	int found = 0;
	if (load(h, &a) || a.new_(&ctx) || !ctx)
		goto out;
	a.set_log_priority(ctx, 0);
	for (struct cxl_bus *bus = a.bus_first(ctx); bus; bus = a.bus_next(bus)) {
		struct cxl_port *port = a.bus_port(bus);
		for (struct cxl_decoder *d = port ? a.dec_first(port) : NULL; d; d = a.dec_next(d)) {
			for (struct cxl_region *r = a.reg_first(d); r; r = a.reg_next(r)) {
				int node = node_of_range(a.reg_resource(r), a.reg_size(r));
				if (node < 0 || node >= TIER_MAX_NODES || t->node[node].cxl[0])
					continue;
				snprintf(t->node[node].cxl, sizeof(t->node[node].cxl), "CXL %s (%llu MiB)",
					 a.reg_name(r), a.reg_size(r) >> 20);
				region_devs(a.reg_name(r), t->node[node].cxl_devs, sizeof(t->node[node].cxl_devs));
				found++;
			}
		}
	}
	a.unref(ctx);
out:
	dlclose(h);
	return found;
}

/* ---- the regions' device ranges, for dpa records (heat_cxl.c) ---- */

/* The ACPI CEDT (fixed memory windows), read once, when a region
 * interleaves host bridges: 0 bytes when unreadable (root only). */
static unsigned char cedt[8192];
static size_t cedt_len;
static bool cedt_tried;

static bool read_u64(const char *dir, const char *file, int base, uint64_t *out)
{
	char path[PATH_MAX], buf[64];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (tier_read_file(path, buf, sizeof(buf)) <= 0)
		return false;
	char *end;
	*out = strtoull(buf, &end, base);
	return end != buf;
}

static void cedt_read(void)
{
	if (cedt_tried)
		return;
	cedt_tried = true;
	int fd = open("/sys/firmware/acpi/tables/CEDT", O_RDONLY | O_CLOEXEC);
	ssize_t got = 1;
	for (cedt_len = 0; fd >= 0 && cedt_len < sizeof(cedt) && got > 0; cedt_len += (size_t)got)
		if ((got = read(fd, cedt + cedt_len, sizeof(cedt) - cedt_len)) < 0)
			got = 0;
	if (fd >= 0)
		close(fd);
}

struct devmap_walk {
	struct tier_cxl_devmap *out;
	int max, n;
	unsigned refused;
	bool say;
};

/* Whether the region under root decoder dir (its parent) interleaves host
 * bridges with arithmetic the modulo formula does not cover. */
static bool root_refused(const char *name, const char *dir, bool say)
{
	char real[PATH_MAX], *up;
	uint64_t rways = 1, rstart, rsize;
	if (!realpath(dir, real) || !(up = strrchr(real, '/')))
		return false;
	*up = '\0';
	if (!read_u64(real, "interleave_ways", 10, &rways) || rways <= 1)
		return false;
	enum tier_cxl_arith a = TIER_CXL_ARITH_UNKNOWN;
	cedt_read();
	if (read_u64(real, "start", 16, &rstart) && read_u64(real, "size", 16, &rsize))
		a = tier_cxl_cedt_arith(cedt, cedt_len, rstart, rsize);
	bool refused = !tier_cxl_interleave_ok((unsigned)rways, a);
	if (refused && say)
		tier_log("cxl: %s interleaves %llu host bridges with %s arithmetic: its dpa records are refused",
			 name, (unsigned long long)rways, a == TIER_CXL_ARITH_XOR ? "XOR" : "unknown");
	return refused;
}

static int devmap_region(const char *name, void *arg)
{
	struct devmap_walk *w = arg;
	char dir[PATH_MAX], path[PATH_MAX], dec[64], real[PATH_MAX];
	uint64_t base, ways, gran;
	if (strncmp(name, "region", 6))
		return 0;
	snprintf(dir, sizeof(dir), "/sys/bus/cxl/devices/%s", name);
	if (!read_u64(dir, "resource", 16, &base) || !read_u64(dir, "interleave_ways", 10, &ways) ||
	    !read_u64(dir, "interleave_granularity", 10, &gran) || !ways || !gran || ways > 16)
		return 0;
	bool refused = root_refused(name, dir, w->say);
	w->refused += refused;
	for (unsigned k = 0; k < ways && w->n < w->max; k++) {
		struct tier_cxl_devmap *d = &w->out[w->n];
		snprintf(path, sizeof(path), "%.*s/target%u", (int)(sizeof(path) - 16), dir, k);
		if (tier_read_file(path, dec, sizeof(dec)) <= 0)
			continue;
		dec[strcspn(dec, "\n")] = '\0';
		snprintf(path, sizeof(path), "/sys/bus/cxl/devices/%s", dec);
		if (!read_u64(path, "dpa_resource", 16, &d->dpa_base) || !read_u64(path, "dpa_size", 16, &d->dpa_size) ||
		    !realpath(path, real))
			continue;
		char *slash = strrchr(real, '/');
		if (!slash)
			continue;
		*slash = '\0'; /* the endpoint port: its uport is the memdev */
		snprintf(path, sizeof(path), "%.*s/uport", (int)(sizeof(path) - 7), real);
		if (!realpath(path, real) || !(slash = strrchr(real, '/')) || strlen(slash + 1) >= sizeof(d->memdev))
			continue;
		snprintf(d->memdev, sizeof(d->memdev), "%s", slash + 1);
		d->hpa_base = base;
		d->gran = gran;
		d->ways = (unsigned)ways;
		d->pos = k;
		d->refused = refused;
		w->n++;
	}
	return 0;
}

int tier_topology_cxl_devmap(struct tier_cxl_devmap *out, int max, unsigned *refused, bool say_refused)
{
	struct devmap_walk w = {out, max, 0, 0, say_refused};
	tier_dir_each("/sys/bus/cxl/devices", devmap_region, &w);
	*refused = w.refused;
	return w.n;
}
