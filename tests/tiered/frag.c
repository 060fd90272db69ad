/* frag: leave node 0 with free memory but no free 2 MiB piece.
 *   frag MIB
 * Takes MIB MiB of node 0 in small pages (bound there, no huge pages),
 * gives every other page back, prints "ready" and holds the rest until
 * stdin closes.  What node 0 then has free lies in 4 KiB holes: a huge-page
 * fault there cannot be served whole on node 0 (the caller keeps the
 * kernel from compacting them: vm.compaction_proactiveness 0). */
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2 || atol(argv[1]) <= 0) {
		fprintf(stderr, "usage: frag MIB\n");
		return 2;
	}
	size_t len = (size_t)atol(argv[1]) << 20, pg = (size_t)sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned long node0 = 1;
	if (p == MAP_FAILED || madvise(p, len, MADV_NOHUGEPAGE) ||
	    mbind(p, len, MPOL_BIND, &node0, 2, 0)) {
		perror("frag");
		return 1;
	}
	memset(p, 1, len);
	for (size_t off = 0; off < len; off += 2 * pg)
		if (madvise(p + off, pg, MADV_DONTNEED)) {
			perror("frag: madvise");
			return 1;
		}
	printf("ready\n");
	fflush(stdout);
	char c;
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
