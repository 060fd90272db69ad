/* The cxl source's reverse map (page frame -> block slot, page): insert,
 * update, remove, lookup; a block that moved drops its old frames; bounds;
 * and a random run against a plain reference. */
#include <stdint.h>
#include <string.h>

#include "../tap.h"
#include "cxl_map.h"

static int owner_a, owner_b, owner_c;

static bool at(struct tier_cxl_map *mp, uint64_t pfn, uint32_t slot, uint32_t page)
{
	uint32_t s, p;
	return tier_cxl_map_lookup(mp, pfn, &s, &p) && s == slot && p == page;
}

static bool absent(struct tier_cxl_map *mp, uint64_t pfn)
{
	uint32_t s, p;
	return !tier_cxl_map_lookup(mp, pfn, &s, &p);
}

static void count_fn(uint64_t pfn, uint32_t slot, uint32_t page, void *ctx)
{
	(void)pfn, (void)slot, (void)page;
	(*(uint64_t *)ctx)++;
}

/* The reference: frame -> slot * 512 + page + 1 (0: nobody). */
#define UNIVERSE 3000u
#define RSLOTS 24u
static uint32_t ref_owner[UNIVERSE];
static uint32_t ref_slot_of[RSLOTS]; /* map slot of reference block k, or NONE */
static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return rng;
}

int main(void)
{
	struct tier_cxl_map m;
	uint64_t pfn[512];
	ok(tier_cxl_map_init(&m, 8, 1u << 20) == 0, "init");
	uint32_t a = tier_cxl_map_slot_new(&m, &owner_a, 7), b = tier_cxl_map_slot_new(&m, &owner_b, 0);
	ok(a != b && a != TIER_CXL_MAP_NONE && b != TIER_CXL_MAP_NONE, "two slots");
	ok(absent(&m, 100), "an empty map holds nothing");

	memset(pfn, 0, sizeof(pfn));
	for (int p = 0; p < 10; p++)
		pfn[p] = 100 + (uint64_t)p;
	pfn[3] = 0; /* not present */
	ok(tier_cxl_map_set(&m, a, pfn, 512), "block A: 9 frames");
	uint64_t pb[5] = {200, 201, 202, 203, 204};
	ok(tier_cxl_map_set(&m, b, pb, 5), "block B: 5 frames");
	ok(at(&m, 105, a, 5) && at(&m, 100, a, 0) && at(&m, 203, b, 3), "lookups find slot and page");
	ok(absent(&m, 103) && absent(&m, 300) && absent(&m, 0), "absent page, foreign frame, frame 0: none");
	ok(m.live == 14, "14 live entries (%llu)", (unsigned long long)m.live);

	/* A moved: all its pages have new frames */
	for (int p = 0; p < 10; p++)
		pfn[p] = 500 + (uint64_t)p;
	ok(tier_cxl_map_set(&m, a, pfn, 10), "block A moved: new frames");
	int old_gone = 1;
	for (uint64_t f = 100; f < 110; f++)
		old_gone &= absent(&m, f);
	ok(old_gone, "its old frames are gone");
	ok(at(&m, 505, a, 5) && at(&m, 503, a, 3) && at(&m, 201, b, 1), "its new frames found, B untouched");
	ok(m.live == 15, "15 live entries (%llu)", (unsigned long long)m.live);

	/* a frame read again for another block belongs to that one */
	uint64_t one = 505;
	uint32_t c = tier_cxl_map_slot_new(&m, &owner_c, 1);
	ok(tier_cxl_map_set(&m, c, &one, 1) && at(&m, 505, c, 0) && m.slots[a].npfn == 9 && m.live == 15,
	   "a frame seen in block C leaves block A (A holds 9, live 15)");

	/* remove: B freed (its mapping gone) */
	tier_cxl_map_slot_drop(&m, b);
	ok(absent(&m, 200) && absent(&m, 204) && m.live == 10, "dropped block B: its frames gone, live 10");
	ok(!tier_cxl_map_slot_is(&m, b, &owner_b, 0), "B's slot number no longer names it");
	uint32_t d = tier_cxl_map_slot_new(&m, &owner_b, 9);
	ok(d == b && absent(&m, 202), "its slot reused: the old frames do not come back");
	ok(tier_cxl_map_slot_is(&m, d, &owner_b, 9) && !tier_cxl_map_slot_is(&m, d, &owner_b, 0) &&
	   !tier_cxl_map_slot_is(&m, 1000, &owner_b, 9), "slot_is checks owner, block and range");
	uint64_t n = 0;
	tier_cxl_map_each(&m, count_fn, &n);
	ok(n == m.live, "the sweep sees every live entry once (%llu)", (unsigned long long)n);

	/* bounds */
	for (uint32_t i = tier_cxl_map_slot_new(&m, &owner_c, 2); i != TIER_CXL_MAP_NONE;
	     i = tier_cxl_map_slot_new(&m, &owner_c, 3))
		;
	ok(m.nslots == 8, "no more than max_slots slots (%u)", m.nslots);
	tier_cxl_map_free(&m);

	ok(tier_cxl_map_init(&m, 4, 16) == 0, "a map of at most 16 pages");
	a = tier_cxl_map_slot_new(&m, &owner_a, 0);
	for (int p = 0; p < 20; p++)
		pfn[p] = 1000 + (uint64_t)p;
	ok(!tier_cxl_map_set(&m, a, pfn, 20) && absent(&m, 1000) && m.live == 0,
	   "20 pages refused: the block holds none");
	ok(tier_cxl_map_set(&m, a, pfn, 16) && at(&m, 1015, a, 15), "16 fit");
	tier_cxl_map_free(&m);

	/* growth: 200 blocks of 512 frames, frames scattered */
	ok(tier_cxl_map_init(&m, 256, 1u << 20) == 0, "a bigger map");
	int good = 1;
	for (uint32_t k = 0; k < 200; k++) {
		uint32_t s = tier_cxl_map_slot_new(&m, &owner_a, k);
		for (uint32_t p = 0; p < 512; p++)
			pfn[p] = (uint64_t)p * 7919 + k + 1;
		good &= tier_cxl_map_set(&m, s, pfn, 512);
	}
	for (uint32_t k = 0; k < 200; k += 13)
		for (uint32_t p = 0; p < 512; p += 31)
			good &= at(&m, (uint64_t)p * 7919 + k + 1, k, p);
	ok(good && m.live == 200 * 512 && m.rebuilds > 3 && m.occupied <= m.cap / 10 * 7,
	   "102400 frames: all found, %llu rebuilds, %llu of %llu entries used",
	   (unsigned long long)m.rebuilds, (unsigned long long)m.occupied, (unsigned long long)m.cap);
	/* the same with the room reserved first: one table, no doublings */
	struct tier_cxl_map m2;
	ok(tier_cxl_map_init(&m2, 256, 1u << 20) == 0 && tier_cxl_map_reserve(&m2, 200 * 512) &&
	   m2.rebuilds == 1, "room for 102400 frames reserved at once");
	for (uint32_t k = 0; k < 200; k++) {
		uint32_t s = tier_cxl_map_slot_new(&m2, &owner_a, k);
		for (uint32_t p = 0; p < 512; p++)
			pfn[p] = (uint64_t)p * 7919 + k + 1;
		good &= tier_cxl_map_set(&m2, s, pfn, 512);
	}
	ok(good && m2.rebuilds == 1 && m2.live == 200 * 512 && at(&m2, 7919 * 3 + 5 + 1, 5, 3),
	   "filled without another rebuild (%llu)", (unsigned long long)m2.rebuilds);
	tier_cxl_map_free(&m2);
	/* every block moves once: the table does not grow without bound */
	uint64_t cap0 = m.cap;
	for (uint32_t k = 0; k < 200; k++) {
		for (uint32_t p = 0; p < 512; p++)
			pfn[p] = (uint64_t)p * 7919 + k + 1 + 5000000;
		good &= tier_cxl_map_set(&m, k, pfn, 512);
	}
	good &= absent(&m, 1) && at(&m, 5000001, 0, 0);
	ok(good && m.cap <= 2 * cap0 && m.live == 200 * 512, "after every block moved: %llu entries (was %llu)",
	   (unsigned long long)m.cap, (unsigned long long)cap0);
	tier_cxl_map_free(&m);

	/* generations wrap (2^23 updates of one block): old frames stay gone */
	ok(tier_cxl_map_init(&m, 2, 64) == 0, "a small map");
	a = tier_cxl_map_slot_new(&m, &owner_a, 0);
	one = 42;
	tier_cxl_map_set(&m, a, &one, 1);
	one = 43;
	for (uint32_t i = 0; i < (1u << 23); i++) /* back to the first one's generation */
		tier_cxl_map_set(&m, a, &one, 1);
	ok(absent(&m, 42) && at(&m, 43, a, 0) && m.live == 1, "after 2^23 updates the first frame is still gone");
	tier_cxl_map_free(&m);

	/* random operations against a reference */
	ok(tier_cxl_map_init(&m, RSLOTS, 1u << 16) == 0, "random run");
	for (uint32_t k = 0; k < RSLOTS; k++)
		ref_slot_of[k] = TIER_CXL_MAP_NONE;
	int agree = 1;
	uint32_t ops = 0;
	for (; ops < 20000 && agree; ops++) {
		uint32_t k = (uint32_t)(rnd() % RSLOTS), r = (uint32_t)(rnd() % 8);
		if (r == 0 && ref_slot_of[k] != TIER_CXL_MAP_NONE) { /* free the block */
			tier_cxl_map_slot_drop(&m, ref_slot_of[k]);
			for (uint32_t f = 0; f < UNIVERSE; f++)
				if (ref_owner[f] && (ref_owner[f] - 1) / 512 == ref_slot_of[k])
					ref_owner[f] = 0;
			ref_slot_of[k] = TIER_CXL_MAP_NONE;
			continue;
		}
		if (ref_slot_of[k] == TIER_CXL_MAP_NONE)
			ref_slot_of[k] = tier_cxl_map_slot_new(&m, &owner_a, k);
		uint32_t s = ref_slot_of[k], np = 1 + (uint32_t)(rnd() % 40);
		for (uint32_t p = 0; p < np; p++)
			pfn[p] = rnd() % 3 ? 1 + rnd() % (UNIVERSE - 1) : 0;
		for (uint32_t f = 0; f < UNIVERSE; f++)
			if (ref_owner[f] && (ref_owner[f] - 1) / 512 == s)
				ref_owner[f] = 0;
		for (uint32_t p = 0; p < np; p++)
			if (pfn[p])
				ref_owner[pfn[p]] = s * 512 + p + 1;
		agree &= tier_cxl_map_set(&m, s, pfn, np);
		uint64_t nlive = 0;
		for (uint32_t f = 1; f < UNIVERSE; f++) {
			nlive += ref_owner[f] != 0;
			agree &= ref_owner[f] ? at(&m, f, (ref_owner[f] - 1) / 512, (ref_owner[f] - 1) % 512)
					      : absent(&m, f);
		}
		agree &= nlive == m.live;
	}
	ok(agree, "20000 random sets and drops: lookups agree with the reference (%u ops, %llu rebuilds)", ops,
	   (unsigned long long)m.rebuilds);
	tier_cxl_map_free(&m);
	return done();
}
