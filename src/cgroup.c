#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "sysfs.h"

int tier_cgroup_parse_self(const char *text, char *path, size_t len)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, "0::", 3))
			continue;
		const char *p = l + 3, *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (!n || p[0] != '/' || n >= len)
			return -1;
		memcpy(path, p, n);
		path[n] = '\0';
		return 0;
	}
	return -1;
}

/* mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE SRC OPTS */
int tier_cgroup_parse_mountinfo(const char *text, char *mnt, size_t mlen, char *root, size_t rlen)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		char line[1024];
		if (n >= sizeof(line))
			continue;
		memcpy(line, l, n);
		line[n] = '\0';
		char *dash = strstr(line, " - ");
		if (!dash || strncmp(dash + 3, "cgroup2 ", 8))
			continue;
		*dash = '\0';
		char *save, *f[5];
		int k = 0;
		for (char *t = strtok_r(line, " ", &save); t && k < 5; t = strtok_r(NULL, " ", &save))
			f[k++] = t;
		if (k < 5 || strlen(f[4]) >= mlen || strlen(f[3]) >= rlen)
			continue;
		snprintf(mnt, mlen, "%s", f[4]);
		snprintf(root, rlen, "%s", f[3]);
		return 0;
	}
	return -1;
}

int tier_cgroup_parse_max(const char *text, uint64_t *out)
{
	if (!strcmp(text, "max")) {
		*out = UINT64_MAX;
		return 0;
	}
	char *end;
	if (text[0] < '0' || text[0] > '9')
		return -1;
	unsigned long long v = strtoull(text, &end, 10);
	if (*end)
		return -1;
	*out = v;
	return 0;
}

bool tier_cgroup_read(struct tier_cgroup *cg)
{
	struct tier_cgroup n;
	memset(&n, 0, sizeof(n));
	n.memory_max = UINT64_MAX;
	static char buf[8192]; /* callers are serialised (start, then the background thread) */
	char mnt[256], root[256];
	if (tier_read_file("/proc/self/cgroup", buf, sizeof(buf)) > 0 &&
	    !tier_cgroup_parse_self(buf, n.path, sizeof(n.path)) &&
	    tier_read_file("/proc/self/mountinfo", buf, sizeof(buf)) > 0 &&
	    !tier_cgroup_parse_mountinfo(buf, mnt, sizeof(mnt), root, sizeof(root))) {
		/* the mount shows the hierarchy from root down (a container's
		 * namespace: root "/"); the path is relative to that */
		const char *rel = n.path;
		size_t rl = strlen(root);
		if (strcmp(root, "/") && !strncmp(n.path, root, rl) && (n.path[rl] == '/' || !n.path[rl]))
			rel = n.path + rl;
		snprintf(n.dir, sizeof(n.dir), "%s%s", mnt, strcmp(rel, "/") ? rel : "");
		n.found = true;
		char p[sizeof(n.dir) + 32], v[64];
		snprintf(p, sizeof(p), "%s/memory.max", n.dir);
		if (tier_read_file(p, v, sizeof(v)) > 0)
			tier_cgroup_parse_max(v, &n.memory_max);
		snprintf(p, sizeof(p), "%s/memory.current", n.dir);
		if (tier_read_file(p, v, sizeof(v)) > 0)
			tier_cgroup_parse_max(v, &n.memory_current);
		snprintf(p, sizeof(p), "%s/cpuset.mems.effective", n.dir);
		if (tier_read_file(p, v, sizeof(v)) > 0)
			snprintf(n.mems, sizeof(n.mems), "%s", v);
	}
	bool changed = n.found != cg->found || strcmp(n.path, cg->path) ||
		       n.memory_max != cg->memory_max || strcmp(n.mems, cg->mems);
	*cg = n;
	return changed;
}
