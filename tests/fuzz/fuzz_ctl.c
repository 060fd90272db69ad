/* libFuzzer target: tier_mallctl names and values (src/ctl.c, knob
 * parsing and checks), over the whole library built into the fuzzer.
 * Input: byte 0 = operation (bit 0: read, bit 1: write), byte 1 = the size
 * of the read buffer, then a NUL-terminated name, then the value written.
 * Checks: no memory error (ASan), only the documented errors, the read
 * length never grows, the buffer is never written past its size. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tiermalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	unsigned op = data[0];
	size_t olen = data[1] % 72;
	const uint8_t *nm = data + 2, *end = data + size;
	const uint8_t *nul = memchr(nm, 0, (size_t)(end - nm));
	size_t nlen = nul ? (size_t)(nul - nm) : (size_t)(end - nm);
	char *name = malloc(nlen + 1);
	memcpy(name, nm, nlen);
	name[nlen] = '\0';
	const uint8_t *val = nul ? nul + 1 : end;
	size_t vlen = (size_t)(end - val);
	/* heap copies of exact size: ASan sees any read past the value */
	void *newp = (op & 2) && vlen ? malloc(vlen) : NULL;
	if (newp)
		memcpy(newp, val, vlen);
	unsigned char old[72 + 16];
	memset(old, 0xa5, sizeof(old));
	size_t oldlen = olen;
	int r = tier_mallctl(name, (op & 1) ? old : NULL, (op & 1) ? &oldlen : NULL, newp,
			     newp ? vlen : 0);
	if (r != 0 && r != ENOENT && r != EINVAL && r != EPERM && r != EFAULT && r != EAGAIN &&
	    r != EOPNOTSUPP) /* tier.cxl.report with the cxl source off */
		__builtin_trap();
	if ((op & 1) && oldlen > olen)
		__builtin_trap();
	for (size_t i = olen; i < sizeof(old); i++)
		if (old[i] != 0xa5)
			__builtin_trap(); /* written past the size given */
	free(newp);
	free(name);
	return 0;
}
