/* cedt: the interleave arithmetic tiermalloc reads for a root decoder's
 * window from the ACPI CEDT (root only), as the cxl source does.
 *   cedt DECODER     e.g. decoder0.0
 * Prints "DECODER ways N start 0x.. size 0x.. arithmetic modulo|xor|unknown
 * translated|refused"; exit 0 when the table was read. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cxl_report.h"

static int read_hex(const char *dec, const char *file, unsigned long long *v, int base)
{
	char path[256], buf[64];
	snprintf(path, sizeof(path), "/sys/bus/cxl/devices/%s/%s", dec, file);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	*v = strtoull(buf, NULL, base);
	return 0;
}

int main(int argc, char **argv)
{
	static unsigned char t[8192];
	unsigned long long ways, start, size;
	if (argc != 2 || read_hex(argv[1], "interleave_ways", &ways, 10) || read_hex(argv[1], "start", &start, 16) ||
	    read_hex(argv[1], "size", &size, 16)) {
		fprintf(stderr, "cedt: cannot read root decoder %s\n", argc > 1 ? argv[1] : "?");
		return 2;
	}
	int fd = open("/sys/firmware/acpi/tables/CEDT", O_RDONLY);
	size_t len = 0;
	ssize_t got = 1;
	while (fd >= 0 && len < sizeof(t) && (got = read(fd, t + len, sizeof(t) - len)) > 0)
		len += (size_t)got;
	if (fd < 0 || len == 0) {
		fprintf(stderr, "cedt: cannot read the CEDT\n");
		return 3;
	}
	enum tier_cxl_arith a = tier_cxl_cedt_arith(t, len, start, size);
	printf("%s ways %llu start %#llx size %#llx arithmetic %s %s\n", argv[1], ways, start, size,
	       a == TIER_CXL_ARITH_MODULO ? "modulo" : a == TIER_CXL_ARITH_XOR ? "xor" : "unknown",
	       tier_cxl_interleave_ok((unsigned)ways, a) ? "translated" : "refused");
	return 0;
}
