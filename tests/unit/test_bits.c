/* Registry bitmap helpers and the internal pool. */
#include <string.h>

#include "../tap.h"
#include "pool.h"
#include "registry.h"

int main(void)
{
	_Atomic uint64_t w[4];
	memset(w, 0, sizeof(w));
	ok(tier_bits_set(w, 3, 70) == 70, "set 70 bits across a word boundary");
	ok(tier_bits_set(w, 0, 10) == 3, "setting overlapping bits counts only new ones");
	ok(tier_bits_count(w, 0, 256) == 73, "count = 73");
	ok(tier_bit_test(w, 72) && !tier_bit_test(w, 73), "bit 72 set, 73 clear");
	ok(tier_bits_clear(w, 60, 100) == 13, "clear counts only set bits");
	ok(tier_bits_count(w, 0, 256) == 60, "60 left");
	ok(tier_bits_set(w, 0, 256) == 196 && tier_bits_count(w, 0, 256) == 256, "fill all four words");
	ok(tier_bits_clear(w, 64, 64) == 64 && w[1] == 0 && w[0] == ~0ull && w[2] == ~0ull,
	   "a whole-word clear touches only that word");

	void *a = tier_pool_alloc(100), *b = tier_pool_alloc(100);
	ok(a && b && a != b, "pool gives distinct blocks");
	memset(a, 0xff, 100);
	tier_pool_free(a, 100);
	void *c = tier_pool_alloc(90);
	ok(c == a && ((unsigned char *)c)[50] == 0, "freed block is reused, zeroed");
	void *big = tier_pool_alloc(1 << 20);
	ok(big && ((char *)big)[(1 << 20) - 1] == 0, "large request gets its own mapping");
	size_t before = tier_pool_mapped();
	tier_pool_free(big, 1 << 20);
	ok(tier_pool_mapped() == before - (1 << 20), "large block is unmapped on free");
	return done();
}
