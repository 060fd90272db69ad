/* Job-wide tiering: the water-fill of a job budget over its members, the
 * request split, the limit rule, the ledger file's checks and slots, and
 * the cgroup parsers. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "jobshare.h"
#include "ledger.h"
#include "../tap.h"

static const struct tier_job_rules rules = {.stay_buckets = 4, .min_bucket = 9};

static uint64_t sum(const uint64_t *v, int n)
{
	uint64_t s = 0;
	for (int i = 0; i < n; i++)
		s += v[i];
	return s;
}

static void test_fill(void)
{
	struct tier_job_member m[4];
	uint64_t sh[4];
	memset(m, 0, sizeof(m));

	/* alone: the whole budget */
	m[0].fast[0] = 10;
	m[0].fast_pages = 10;
	tier_job_fill(m, 1, 100, &rules, sh);
	ok(sh[0] == 100, "one member gets the whole budget (%llu)", (unsigned long long)sh[0]);

	/* A: hot slow memory; B: cold fast memory that fills the budget */
	memset(m, 0, sizeof(m));
	m[0].slow[40] = 40;
	m[1].fast[0] = 100;
	m[1].fast_pages = 100;
	tier_job_fill(m, 2, 100, &rules, sh);
	ok(sh[0] == 40 && sh[1] == 60, "the hot slow memory of A takes budget from B's cold fast memory (%llu, %llu)",
	   (unsigned long long)sh[0], (unsigned long long)sh[1]);

	/* hysteresis: B's fast bucket 18 competes as 22 */
	memset(m, 0, sizeof(m));
	m[0].slow[21] = 50;
	m[1].fast[18] = 100;
	m[1].fast_pages = 100;
	tier_job_fill(m, 2, 100, &rules, sh);
	ok(sh[0] == 0 && sh[1] == 100, "slow memory 3 buckets hotter does not displace fast memory (stay 4): %llu, %llu",
	   (unsigned long long)sh[0], (unsigned long long)sh[1]);
	m[0].slow[21] = 0;
	m[0].slow[23] = 50;
	tier_job_fill(m, 2, 100, &rules, sh);
	ok(sh[0] == 50 && sh[1] == 50, "slow memory 5 buckets hotter does (%llu, %llu)", (unsigned long long)sh[0],
	   (unsigned long long)sh[1]);

	/* too cold to promote claims nothing; fast memory the monitor has not
	 * measured stays where it is */
	memset(m, 0, sizeof(m));
	m[0].slow[5] = 500;
	m[1].fast_pages = 30;
	tier_job_fill(m, 2, 100, &rules, sh);
	ok(sh[1] == 30 + 35 && sh[0] == 35, "unmeasured fast pages kept, the rest split as headroom (%llu, %llu)",
	   (unsigned long long)sh[0], (unsigned long long)sh[1]);

	/* three members, the budget split pro rata within one bucket */
	memset(m, 0, sizeof(m));
	m[0].slow[30] = 100;
	m[1].slow[30] = 300;
	m[2].fast[2] = 200;
	m[2].fast_pages = 200;
	tier_job_fill(m, 3, 200, &rules, sh);
	ok(sh[0] == 50 && sh[1] == 150 && sh[2] == 0, "three members: 200 pages for 400 hot: 50/150/0 (%llu/%llu/%llu)",
	   (unsigned long long)sh[0], (unsigned long long)sh[1], (unsigned long long)sh[2]);

	/* the shares always add up to the budget */
	unsigned x = 12345;
	int bad = 0;
	for (int round = 0; round < 2000; round++) {
		int n = 1 + round % 4;
		memset(m, 0, sizeof(m));
		for (int i = 0; i < n; i++) {
			for (int k = 0; k < TIER_JOB_BUCKETS; k++) {
				x = x * 1103515245u + 12345u;
				if (x >> 28 == 0)
					m[i].fast[k] = (x >> 8) % 1000;
				x = x * 1103515245u + 12345u;
				if (x >> 28 == 0)
					m[i].slow[k] = (x >> 8) % 1000;
			}
			x = x * 1103515245u + 12345u;
			m[i].fast_pages = (x >> 8) % 3000;
		}
		x = x * 1103515245u + 12345u;
		uint64_t budget = (x >> 4) % 20000;
		tier_job_fill(m, n, budget, &rules, sh);
		bad += sum(sh, n) != budget;
	}
	ok(bad == 0, "2000 random jobs of 1 to 4 members: the shares add up to the budget (%d did not)", bad);
}

static void test_split(void)
{
	struct tier_job_member m[2];
	uint64_t part[2];
	memset(m, 0, sizeof(m));
	m[0].fast[0] = 30;
	m[0].fast_pages = 40; /* 10 not measured yet: the coldest */
	m[1].fast[10] = 100;
	m[1].fast_pages = 100;
	m[0].slow[20] = 5;
	m[1].slow[30] = 7;
	uint64_t got = tier_job_split(m, 2, 50, false, 9, part);
	ok(got == 50 && part[0] == 40 && part[1] == 10, "demote 50: A's 40 cold pages, then 10 of B's (%llu, %llu)",
	   (unsigned long long)part[0], (unsigned long long)part[1]);
	got = tier_job_split(m, 2, 10, true, 9, part);
	ok(got == 10 && part[0] == 3 && part[1] == 7, "promote 10: B's hotter 7, then 3 of A's (%llu, %llu)",
	   (unsigned long long)part[0], (unsigned long long)part[1]);
	got = tier_job_split(m, 2, 1000, true, 9, part);
	ok(got == 12, "promote more than the job's hot slow memory: 12 placed (%llu)", (unsigned long long)got);
}

static void test_limit(void)
{
	ok(tier_job_limit(100, 200, 50, 180, 0.95) == 53,
	   "the others hold 180 of 200: no promotion into their room, nor a demotion (53)");
	ok(tier_job_limit(40, 200, 50, 100, 0.95) == 40, "a share below what it holds: the share (40), it demotes");
	ok(tier_job_limit(100, 200, 50, 20, 0.95) == 100, "room enough: the share (100)");
}

/* a fake /proc: pids 100 (start 5), 300 (start 9); 200 is gone */
static uint64_t fake_start(long pid)
{
	return pid == 100 ? 5 : pid == 300 ? 9 : 0;
}

static void test_ledger(void)
{
	char dir[] = "/tmp/test_ledger.XXXXXX";
	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp");
		return;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	struct tier_ledger_map m, m2;
	char why[200] = "", name[64], path[600];
	tier_ledger_name("name:t", name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ok(tier_ledger_open(dfd, dir, "name:t", false, &m, why, sizeof(why)) == -1,
	   "without create, a missing ledger is not made (%s)", why);
	why[0] = '\0';
	int r = tier_ledger_open(dfd, dir, "name:t", true, &m, why, sizeof(why));
	struct stat st;
	ok(r == 0 && stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "created, mode 0600%s%s", why[0] ? ": " : "", why);
	if (r) {
		close(dfd);
		return;
	}
	ok(tier_ledger_open(dfd, dir, "name:t", false, &m2, why, sizeof(why)) == 0, "opened again by another member");

	struct tier_ledger *l = m.l;
	int a = tier_ledger_claim(l, 100, 5), b = tier_ledger_claim(m2.l, 200, 6), c = tier_ledger_claim(l, 300, 7);
	ok(a >= 0 && b >= 0 && c >= 0 && a != b && b != c && a != c, "three slots claimed (%d %d %d)", a, b, c);
	struct tier_ledger_pub p, q;
	memset(&p, 0, sizeof(p));
	p.start = 5;
	p.fast_bytes = 4096 * 77;
	p.hist.slow[33] = 12;
	tier_ledger_publish(&l->slot[a], &p);
	long pid = 0;
	ok(tier_ledger_read(&m2.l->slot[a], &pid, &q) && pid == 100 && q.fast_bytes == p.fast_bytes &&
	       q.hist.slow[33] == 12,
	   "published through one mapping, read through the other");
	int freed = tier_ledger_reap(l, 100, fake_start);
	ok(freed == 2 && l->slot[a].owner == 100 && !l->slot[b].owner && !l->slot[c].owner,
	   "reaped: the crashed member (200) and the one whose pid was reused (300, start 7 -> 9): %d", freed);
	ok(!tier_ledger_read(&l->slot[b], &pid, &q), "a freed slot reads as empty");

	uint64_t seq = tier_ledger_request(&l->slot[a], TIER_LEDGER_DEMOTE, 1 << 20);
	uint32_t kind;
	uint64_t bytes, s2;
	ok(tier_ledger_pending(&m2.l->slot[a], &kind, &bytes, &s2) && kind == TIER_LEDGER_DEMOTE &&
	       bytes == 1 << 20 && s2 == seq,
	   "a request is seen by the owner");
	tier_ledger_done(&l->slot[a], seq, 4096);
	ok(!tier_ledger_pending(&l->slot[a], &kind, &bytes, &s2) && l->slot[a].done_moved == 4096,
	   "once done it is not pending, and says what moved");
	int d = tier_ledger_claim(l, 400, 1);
	ok(d >= 0 && !tier_ledger_pending(&l->slot[d], &kind, &bytes, &s2),
	   "a new member does not replay an old request in its slot");
	tier_ledger_release(l, a, 999);
	ok(l->slot[a].owner == 100, "release by a pid that does not own the slot changes nothing");
	tier_ledger_release(l, a, 100);
	ok(l->slot[a].owner == 0, "released by its owner");
	tier_ledger_close(&m2);

	ok(tier_ledger_check(l, "name:other", (unsigned)geteuid()) != NULL, "another job's identity is refused");
	ok(tier_ledger_check(l, "name:t", (unsigned)geteuid() + 1) != NULL, "another user's is refused");
	tier_ledger_close(&m);

	/* a corrupt file: refused, with the reason */
	int fd = open(path, O_WRONLY);
	ok(fd >= 0 && pwrite(fd, "garbage!", 8, 0) == 8, "corrupted the magic");
	close(fd);
	r = tier_ledger_open(dfd, dir, "name:t", true, &m, why, sizeof(why));
	ok(r == -1 && strstr(why, "magic"), "a corrupt ledger is refused: %s", why);
	chmod(path, 0644);
	r = tier_ledger_open(dfd, dir, "name:t", true, &m, why, sizeof(why));
	ok(r == -1 && strstr(why, "0600"), "mode 0644 is refused: %s", why);
	chmod(path, 0600);
	truncate(path, 100);
	r = tier_ledger_open(dfd, dir, "name:t", true, &m, why, sizeof(why));
	ok(r == -1 && strstr(why, "size"), "a wrong size is refused: %s", why);
	unlink(path);
	char tgt[600];
	snprintf(tgt, sizeof(tgt), "%s/elsewhere", dir);
	close(open(tgt, O_CREAT | O_WRONLY, 0600));
	ok(symlink(tgt, path) == 0, "a symlink in its place");
	r = tier_ledger_open(dfd, dir, "name:t", true, &m, why, sizeof(why));
	ok(r == -1 && strstr(why, "symlink"), "a symlink is refused: %s", why);
	unlink(path);
	unlink(tgt);
	close(dfd);
	rmdir(dir);
}

static void test_cgroup(void)
{
	char p[256], mnt[256], root[256];
	ok(tier_cgroup_parse_self("12:memory:/x\n0::/a/b.scope\n", p, sizeof(p)) == 0 && !strcmp(p, "/a/b.scope"),
	   "the v2 line of /proc/self/cgroup: %s", p);
	ok(tier_cgroup_parse_self("4:cpu:/x\n", p, sizeof(p)) == -1, "v1 only: no v2 path");
	const char *mi = "22 1 0:20 / /proc rw - proc proc rw\n"
			 "30 22 0:26 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";
	ok(tier_cgroup_parse_mountinfo(mi, mnt, sizeof(mnt), root, sizeof(root)) == 0 &&
	       !strcmp(mnt, "/sys/fs/cgroup") && !strcmp(root, "/"),
	   "cgroup2 mount from mountinfo: %s (root %s)", mnt, root);
	ok(tier_cgroup_parse_mountinfo("22 1 0:20 / /proc rw - proc proc rw\n", mnt, sizeof(mnt), root,
				       sizeof(root)) == -1,
	   "no cgroup2 mount");
	uint64_t v = 0;
	ok(tier_cgroup_parse_max("max", &v) == 0 && v == UINT64_MAX, "memory.max \"max\"");
	ok(tier_cgroup_parse_max("536870912", &v) == 0 && v == 536870912, "memory.max in bytes");
	ok(tier_cgroup_parse_max("12x", &v) == -1 && tier_cgroup_parse_max("", &v) == -1, "bad memory.max text");
	struct tier_cgroup cg;
	memset(&cg, 0, sizeof(cg));
	tier_cgroup_read(&cg);
	diag("this host: cgroup %s (%s), memory.max %llu, mems %s", cg.found ? cg.path : "none", cg.dir,
	     (unsigned long long)cg.memory_max, cg.mems);
	ok(!tier_cgroup_read(&cg), "read twice: nothing changed");
}

int main(void)
{
	test_fill();
	test_split();
	test_limit();
	test_ledger();
	test_cgroup();
	printf("1..%d\n", tap_n);
	return tap_failed != 0;
}
