/* Prints the fast_limit in effect and AT_SECURE: tests/host/secure.sh runs
 * it as a setuid program to check that TIERMALLOC_CONF is ignored then. */
#include <stdio.h>
#include <sys/auxv.h>

#include "tiermalloc.h"

int main(void)
{
	size_t lim = 0, len = sizeof(lim);
	if (tier_mallctl("opt.fast_limit", &lim, &len, NULL, 0))
		return 1;
	printf("%zu %lu\n", lim, getauxval(AT_SECURE));
	return 0;
}
