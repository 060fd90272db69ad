/* Prints the fast_limit in effect and AT_SECURE: tests/host/secure.sh runs
 * it as a setuid program to check that TIERMALLOC_CONF is ignored then.
 * An argument: stay that many milliseconds (for the advisor's CSV). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "tiermalloc.h"

int main(int argc, char **argv)
{
	size_t lim = 0, len = sizeof(lim);
	if (tier_mallctl("opt.fast_limit", &lim, &len, NULL, 0))
		return 1;
	printf("%zu %lu\n", lim, getauxval(AT_SECURE));
	if (argc > 1)
		usleep((useconds_t)atoi(argv[1]) * 1000);
	return 0;
}
