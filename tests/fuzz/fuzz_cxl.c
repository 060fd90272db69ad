/* libFuzzer target: the CXL hot-list parser (src/cxl_report.c), line by
 * line as the cxl source reads a stream.  Beyond memory errors (ASan), it
 * checks the parser's promises: a record it accepts is in range (unit a
 * power of two within bounds, address aligned to it and under the limit,
 * count at least one, memdev NUL-terminated), records are only taken
 * after a valid header, and the header state is 0 or the version. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cxl_report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int version = 0;
	size_t i = 0;
	while (i <= size) {
		size_t j = i;
		while (j < size && data[j] != '\n')
			j++;
		int before = version;
		struct tier_cxl_rec rec;
		memset(&rec, 0xa5, sizeof(rec));
		enum tier_cxl_line r = tier_cxl_parse_line((const char *)data + i, j - i, &version, &rec);
		if (version != 0 && version != TIER_CXL_VERSION)
			__builtin_trap();
		if (r == TIER_CXL_REC) {
			if (before != TIER_CXL_VERSION)
				__builtin_trap(); /* a record without a valid header */
			if (rec.unit < TIER_CXL_UNIT_MIN || rec.unit > TIER_CXL_UNIT_MAX || (rec.unit & (rec.unit - 1)))
				__builtin_trap();
			if (rec.addr % rec.unit || rec.addr >= TIER_CXL_ADDR_LIMIT || rec.count < 1)
				__builtin_trap();
			if (rec.kind == TIER_CXL_DPA && !memchr(rec.memdev, '\0', sizeof(rec.memdev)))
				__builtin_trap();
		}
		i = j + 1;
	}
	return 0;
}
