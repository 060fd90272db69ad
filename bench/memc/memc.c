/* memc: a small Zipf client for memcached's text protocol over loopback,
 * the load generator of the server bench (bench/servers/guest.sh).
 *
 *   memc [options]
 *     -p PORT    memcached's TCP port on 127.0.0.1 (11211)
 *     -k KEYS    keyspace (100000)           -d BYTES  value size (512)
 *     -g SHARE   share of gets (0.9), the rest sets
 *     -s S       Zipf exponent (0.99)        -t SECS   measured time (5)
 *     -n N       stop after N requests instead (0: time only)
 *     -F         fill only: set every key once (pipelined), then exit
 *     -W PID     where: no requests; find each key's value in memcached
 *                PID's memory (/proc/PID/mem, root), ask the kernel which
 *                node holds it (move_pages), and print the share of the
 *                Zipf gets that node 0 serves, beside the best share any
 *                placement of -f MIB of its pages on node 0 could give
 *     -f MIB     with -W: the fast tier's size (16)
 * Popular ranks map to keys through a fixed random permutation, so the
 * hot items are scattered over memcached's slabs as a real cache's are.
 * One connection, one request in flight: each latency is one round trip.
 * Prints one CSV row (with -F: the fill's):
 *   requests,seconds,rps,p50_us,p99_us,miss_ratio
 * With -W: "where found=N hit=X page_oracle=Y".  Each value begins with a
 * tag "#K<key>:<seq>#", seq growing with every set (microseconds at the
 * client's start, plus one a set), so that of the copies a key leaves in
 * memory (freed items keep their bytes) the newest, the live one, counts. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <numaif.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "../common.h"

static int fd;
static char rbuf[1 << 16];
static size_t rlen, roff;

static void die(const char *what)
{
	fprintf(stderr, "memc: %s\n", what);
	exit(1);
}

static void send_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, 0);
		if (w <= 0)
			die("send failed (server gone?)");
		p += w;
		n -= (size_t)w;
	}
}

static int getc_sock(void)
{
	if (roff == rlen) {
		ssize_t r = recv(fd, rbuf, sizeof(rbuf), 0);
		if (r <= 0)
			die("connection closed by the server");
		rlen = (size_t)r;
		roff = 0;
	}
	return (unsigned char)rbuf[roff++];
}

/* one reply line, without its \r\n */
static void read_line(char *line, size_t cap)
{
	size_t n = 0;
	for (;;) {
		int c = getc_sock();
		if (c == '\n')
			break;
		if (c != '\r' && n + 1 < cap)
			line[n++] = (char)c;
	}
	line[n] = 0;
}

/* a get's reply: true on a hit */
static bool read_get(void)
{
	char line[256];
	bool hit = false;
	for (;;) {
		read_line(line, sizeof(line));
		if (!strcmp(line, "END"))
			return hit;
		unsigned flags;
		size_t len;
		char key[200];
		if (sscanf(line, "VALUE %199s %u %zu", key, &flags, &len) != 3)
			die("unexpected reply to get");
		for (size_t i = 0; i < len + 2; i++)
			(void)getc_sock();
		hit = true;
	}
}

static void read_stored(void)
{
	char line[256];
	read_line(line, sizeof(line));
	if (strcmp(line, "STORED"))
		die("set not STORED (memory limit too low?)");
}

static char *value;
static size_t vlen;
static unsigned long long seq;

/* values of at least TAG_MIN bytes carry their key's tag (-W finds them) */
#define TAG_MIN 48

static size_t set_cmd(char *out, long key)
{
	size_t n = (size_t)sprintf(out, "set k%ld 0 0 %zu\r\n", key, vlen);
	memcpy(out + n, value, vlen);
	if (vlen >= TAG_MIN) {
		char tag[TAG_MIN];
		int t = snprintf(tag, sizeof(tag), "#K%ld:%llu#", key, seq++);
		memcpy(out + n, tag, (size_t)t);
	}
	memcpy(out + n + vlen, "\r\n", 2);
	return n + vlen + 2;
}

/* The Zipf ranks' cdf (total *sum) and a fixed permutation rank -> key;
 * returns the generator's state after it (the load draws on from there) */
static uint64_t zipf_keys(long keys, double s_exp, double *cdf, long *perm, double *sum)
{
	*sum = 0;
	for (long r = 0; r < keys; r++) {
		*sum += 1.0 / pow((double)(r + 1), s_exp);
		cdf[r] = *sum;
		perm[r] = r;
	}
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	for (long r = keys - 1; r > 0; r--) {
		long j = (long)(rng(&seed) % (uint64_t)(r + 1)), x = perm[r];
		perm[r] = perm[j];
		perm[j] = x;
	}
	return seed;
}

/* -W: where the live copy of each key's value lies, and what share of the
 * Zipf gets (prob[k]) node 0 serves; against the best FAST MiB of pages */
static int where(long pid, long keys, const double *prob, long fast_mib)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
	FILE *maps = fopen(path, "r");
	snprintf(path, sizeof(path), "/proc/%ld/mem", pid);
	int mem = open(path, O_RDONLY);
	uintptr_t *at = calloc((size_t)keys, sizeof(*at));
	unsigned long long *best = calloc((size_t)keys, sizeof(*best));
	enum { CHUNK = 1 << 20, OVER = TAG_MIN };
	char *buf = malloc(CHUNK + OVER);
	if (!maps || mem < 0 || !at || !best || !buf) {
		perror("memc: -W");
		return 1;
	}
	char line[512];
	while (fgets(line, sizeof(line), maps)) {
		unsigned long lo, hi, ino;
		char perm[8];
		if (sscanf(line, "%lx-%lx %7s %*s %*s %lu", &lo, &hi, perm, &ino) != 4 || perm[0] != 'r' ||
		    perm[1] != 'w' || ino != 0)
			continue; /* the server's anonymous read-write memory */
		for (unsigned long a = lo; a < hi; a += CHUNK) {
			size_t want = hi - a < (unsigned long)CHUNK + OVER ? hi - a : (size_t)CHUNK + OVER;
			ssize_t got = pread(mem, buf, want, (off_t)a);
			if (got <= 0)
				continue;
			size_t end = (size_t)got < (size_t)CHUNK ? (size_t)got : (size_t)CHUNK;
			for (size_t i = 0; i < end; i++) {
				if (buf[i] != '#' || i + 2 >= (size_t)got || buf[i + 1] != 'K')
					continue;
				char *e;
				long k = strtol(buf + i + 2, &e, 10);
				if (e >= buf + got || *e != ':' || k < 0 || k >= keys)
					continue;
				unsigned long long q = strtoull(e + 1, &e, 10);
				if (e >= buf + got || *e != '#')
					continue;
				if (q >= best[k]) {
					best[k] = q;
					at[k] = a + i;
				}
			}
		}
	}
	fclose(maps);
	close(mem);
	/* the node of each value's first byte */
	long found = 0;
	void **pages = malloc((size_t)keys * sizeof(*pages));
	long *who = malloc((size_t)keys * sizeof(*who));
	int *status = malloc((size_t)keys * sizeof(*status));
	struct bench_pw *pw = malloc((size_t)keys * sizeof(*pw));
	if (!pages || !who || !status || !pw)
		return 1;
	for (long k = 0; k < keys; k++)
		if (at[k]) {
			pages[found] = (void *)(at[k] & ~(uintptr_t)4095);
			who[found++] = k;
		}
	for (long off = 0; off < found; off += 4096) {
		unsigned long c = (unsigned long)(found - off < 4096 ? found - off : 4096);
		if (move_pages((int)pid, c, pages + off, NULL, status + off, 0)) {
			perror("memc: move_pages");
			return 1;
		}
	}
	double all = 0, fast = 0;
	for (long i = 0; i < found; i++) {
		double w = prob[who[i]];
		all += w;
		fast += status[i] == 0 ? w : 0;
		pw[i] = (struct bench_pw){(uintptr_t)pages[i], w};
	}
	/* the page oracle: the fast tier's worth of the pages drawing most gets */
	long np = bench_pw_pages(pw, found);
	qsort(pw, (size_t)np, sizeof(*pw), bench_pw_by_weight);
	double top = 0;
	for (long i = 0; i < np && i < fast_mib * 256; i++)
		top += pw[i].w;
	printf("where found=%ld hit=%.4f page_oracle=%.4f\n", found, all > 0 ? fast / all : 0, all > 0 ? top / all : 0);
	return found ? 0 : 1;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int port = 11211, opt;
	long keys = 100000, maxreq = 0, wpid = 0, fast_mib = 16;
	double gets = 0.9, s_exp = 0.99, secs = 5;
	bool fill = false;
	vlen = 512;
	while ((opt = getopt(argc, argv, "p:k:d:g:s:t:n:FW:f:")) != -1) {
		switch (opt) {
		case 'p': port = atoi(optarg); break;
		case 'k': keys = atol(optarg); break;
		case 'd': vlen = (size_t)atol(optarg); break;
		case 'g': gets = atof(optarg); break;
		case 's': s_exp = atof(optarg); break;
		case 't': secs = atof(optarg); break;
		case 'n': maxreq = atol(optarg); break;
		case 'F': fill = true; break;
		case 'W': wpid = atol(optarg); break;
		case 'f': fast_mib = atol(optarg); break;
		default: return 2;
		}
	}
	if (keys < 1 || vlen < 1 || vlen > (1 << 20) || gets < 0 || gets > 1 || port <= 0 || wpid < 0 ||
	    fast_mib < 0) {
		fprintf(stderr, "memc: bad option value\n");
		return 2;
	}
	/* Zipf over ranks: cdf, then a permutation rank -> key */
	double *cdf = malloc((size_t)keys * sizeof(*cdf)), sum = 0;
	long *perm = malloc((size_t)keys * sizeof(*perm));
	if (!cdf || !perm)
		return 1;
	uint64_t seed = zipf_keys(keys, s_exp, cdf, perm, &sum);
	if (wpid) { /* each key's share of the gets, in place of its cdf */
		double *prob = malloc((size_t)keys * sizeof(*prob));
		if (!prob)
			return 1;
		for (long r = 0; r < keys; r++)
			prob[perm[r]] = (cdf[r] - (r ? cdf[r - 1] : 0)) / sum;
		return where(wpid, keys, prob, fast_mib);
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	seq = (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("memc: connect");
		return 1;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	value = malloc(vlen);
	char *cmd = malloc(vlen + 256);
	for (size_t i = 0; i < vlen; i++)
		value[i] = (char)('a' + i % 26);
	double t0 = now();
	if (fill) {
		/* pipelined in batches: the fill is set-up, not measured */
		enum { BATCH = 32 };
		for (long k = 0; k < keys; k += BATCH) {
			long e = k + BATCH < keys ? k + BATCH : keys;
			for (long j = k; j < e; j++)
				send_all(cmd, set_cmd(cmd, j));
			for (long j = k; j < e; j++)
				read_stored();
		}
		double t = now() - t0;
		printf("%ld,%.3f,%.0f,0,0,0\n", keys, t, (double)keys / t);
		return 0;
	}
	size_t cap = 1 << 16, n = 0;
	double *lat = malloc(cap * sizeof(*lat));
	long misses = 0, ngets = 0;
	uint64_t pg = (uint64_t)(gets * 4294967296.0);
	double t = t0;
	while ((maxreq ? (long)n < maxreq : 1) && (maxreq || t - t0 < secs)) {
		uint64_t r = rng(&seed);
		double u = (double)(rng(&seed) >> 11) / 9007199254740992.0 * sum;
		long key = perm[cdf_rank(cdf, keys, u)];
		double s0 = now();
		if ((r & 0xffffffffu) < pg) {
			int len = sprintf(cmd, "get k%ld\r\n", key);
			send_all(cmd, (size_t)len);
			misses += !read_get();
			ngets++;
		} else {
			send_all(cmd, set_cmd(cmd, key));
			read_stored();
		}
		t = now();
		if (n == cap) {
			cap *= 2;
			lat = realloc(lat, cap * sizeof(*lat));
			if (!lat)
				die("out of memory");
		}
		lat[n++] = (t - s0) * 1e6;
	}
	double el = t - t0;
	if (!n)
		die("no request completed");
	qsort(lat, n, sizeof(*lat), cmp_d);
	printf("%zu,%.3f,%.0f,%.1f,%.1f,%.4f\n", n, el, (double)n / el, lat[n / 2],
	       lat[(size_t)((double)n * 0.99)], ngets ? (double)misses / (double)ngets : 0);
	close(fd);
	return 0;
}
