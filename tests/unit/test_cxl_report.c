/* CXL hot-list records: the parser's verdicts, and the combination rule
 * against a list that names cold pages. */
#include <string.h>

#include "../tap.h"
#include "cxl_report.h"
#include "policy.h"

#define UNIT 16u /* TIER_HEAT_UNIT */

static enum tier_cxl_line parse(const char *s, int *ver, struct tier_cxl_rec *r)
{
	return tier_cxl_parse_line(s, strlen(s), ver, r);
}

/* Blocks of the combination rule's case, heat from another source
 * (`other`) plus, where listed, what tier_cxl_weight gives a record of 64
 * accesses; the real policy decides.  Returns the slow blocks chosen
 * (-1: with others running, a block of the hot set was given up). */
static int combined_swaps(bool others_running)
{
	struct { float other; bool slow, listed; } blk[] = {
		{8.0f, false, false}, {6.0f, false, false}, {5.0f, false, false}, /* hot set, fast */
		{0.2f, false, true},                                              /* cold, fast, listed */
		{0.0f, true, true}, {0.0f, true, true}, {0.1f, true, true},       /* cold, listed */
		{0.0f, true, false},
	};
	struct tier_cand fast[8], slow[8];
	size_t nf = 0, ns = 0;
	for (uint32_t i = 0; i < sizeof(blk) / sizeof(*blk); i++) {
		float heat = blk[i].other;
		if (blk[i].listed)
			heat += (float)tier_cxl_weight(64, others_running, blk[i].slow, blk[i].other, UNIT) / UNIT;
		/* (fast: judged, as the monitor has them with no written-bit
		 * looks to wait for) */
		struct tier_cand c = {.block = i, .bytes = 2u << 20, .heat = heat, .tier = blk[i].slow,
				      .judged = !blk[i].slow};
		if (blk[i].slow)
			slow[ns++] = c;
		else
			fast[nf++] = c;
	}
	struct tier_policy_in in = {.fast_limit = nf * (2u << 20), .fast_used = nf * (2u << 20), .wm_high = 1.0,
				    .wm_low = 0.9, .hysteresis = 2.0, .promote_budget = SIZE_MAX,
				    .demote_budget = SIZE_MAX, .wide_margin = 1e9f};
	struct tier_policy_out out;
	tier_policy_decide(&in, fast, nf, slow, ns, &out);
	int chosen = 0;
	for (size_t i = 0; i < ns; i++)
		chosen += slow[i].chosen;
	for (size_t i = 0; i < nf; i++)
		if (others_running && fast[i].chosen && blk[fast[i].block].other >= 5.0f)
			return -1;
	return chosen;
}

int main(void)
{
	struct tier_cxl_rec r;
	int ver = 0;

	/* header state */
	ok(parse("hpa 0x100000000 4096 3", &ver, &r) == TIER_CXL_BADVER, "record before a header rejected");
	ok(parse("tiermalloc-cxl-hotlist v2", &ver, &r) == TIER_CXL_BADVER && ver == 0,
	   "unknown version rejected");
	ok(parse("hpa 0x100000000 4096 3", &ver, &r) == TIER_CXL_BADVER, "records after it rejected too");
	ok(parse("tiermalloc-cxl-hotlist v1", &ver, &r) == TIER_CXL_HDR && ver == 1, "v1 header accepted");
	ok(parse("tiermalloc-cxl-hotlist", &ver, &r) == TIER_CXL_MALFORMED && ver == 1,
	   "header without version malformed, state kept");
	ok(parse("tiermalloc-cxl-hotlist vx", &ver, &r) == TIER_CXL_MALFORMED, "header with bad version malformed");

	/* records */
	ok(parse("hpa 0x100000000 4096 3", &ver, &r) == TIER_CXL_REC && r.kind == TIER_CXL_HPA &&
	   r.addr == 0x100000000ull && r.unit == 4096 && r.count == 3, "hpa record parsed");
	ok(parse("  hpa\t1f000 4096 1\r", &ver, &r) == TIER_CXL_REC && r.addr == 0x1f000,
	   "hex without 0x, tabs, CR tolerated");
	ok(parse("dpa mem0 0x200000 2097152 9", &ver, &r) == TIER_CXL_REC && r.kind == TIER_CXL_DPA &&
	   !strcmp(r.memdev, "mem0") && r.addr == 0x200000 && r.unit == 2097152, "dpa record parsed");
	ok(parse("", &ver, &r) == TIER_CXL_SKIP && parse("   ", &ver, &r) == TIER_CXL_SKIP &&
	   parse("# hot list of epoch 7", &ver, &r) == TIER_CXL_SKIP, "blank and comment lines skipped");

	/* malformed */
	static const char *const bad[] = {
		"hpa", "hpa 0x1000", "hpa 0x1000 4096", "hpa 0x1000 4096 1 extra", "hpa 0xg000 4096 1",
		"hpa 0x1000 4k 1", "hpa 0x1000 4096 -1", "hpa 0x1000 4096 1 2 3 4", "HPA 0x1000 4096 1",
		"dpa 0x1000 4096 1", "dpa mem0123456789012345678901234567890 0x1000 4096 1",
		"hpa 0x1000 99999999999999999999999 1", "hpa 0x 4096 1", "garbage",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ok(parse(bad[i], &ver, &r) == TIER_CXL_MALFORMED, "malformed: \"%s\"", bad[i]);

	/* out of range */
	static const char *const range[] = {
		"hpa 0x1000 4095 1",            /* not a power of two */
		"hpa 0x1000 32 1",              /* below 64 B */
		"hpa 0x0 2147483648 1",         /* above 1 GiB */
		"hpa 0x1800 4096 1",            /* not aligned to its unit */
		"hpa 0x1000 4096 0",            /* count 0 */
		"hpa 0x10000000000000 4096 1",  /* at 2^52 */
		"hpa 0xfffffffffffff000 4096 1", /* wraps */
	};
	for (size_t i = 0; i < sizeof(range) / sizeof(*range); i++)
		ok(parse(range[i], &ver, &r) == TIER_CXL_RANGE, "out of range: \"%s\"", range[i]);
	ok(parse("hpa 0xffffffffff000 4096 1", &ver, &r) == TIER_CXL_REC, "last page below 2^52 accepted");

	/* device to host offsets: one way is the identity; two ways at 256 B
	 * alternate granules between the devices */
	ok(tier_cxl_dpa_to_hpa_offset(0x12345, 1, 256, 0) == 0x12345, "1 way: identity");
	ok(tier_cxl_dpa_to_hpa_offset(0, 2, 256, 1) == 256 && tier_cxl_dpa_to_hpa_offset(256, 2, 256, 0) == 512 &&
	   tier_cxl_dpa_to_hpa_offset(256 + 17, 2, 256, 1) == 768 + 17,
	   "2 ways, 256 B: position 1 starts at 256, granule 1 of position 0 at 512, offsets kept");

	/* interleave arithmetic: a CEDT with a host bridge (CHBS) and two
	 * windows (CFMWS), one modulo, one XOR */
	unsigned char cedt[36 + 32 + 40 + 40];
	memset(cedt, 0, sizeof(cedt));
	memcpy(cedt, "CEDT", 4);
	cedt[4] = sizeof(cedt);
	unsigned char *t = cedt + 36;
	t[0] = 0, t[2] = 32;                          /* CHBS */
	t += 32;
	t[0] = 1, t[2] = 40;                          /* CFMWS: 0x1000000000, 8 GiB, modulo */
	t[12] = 0x10, t[20] = 0x02, t[24] = 1, t[25] = 0;
	t += 40;
	t[0] = 1, t[2] = 40;                          /* CFMWS: 0x2000000000, 8 GiB, XOR */
	t[12] = 0x20, t[20] = 0x02, t[24] = 1, t[25] = 1;
	ok(tier_cxl_cedt_arith(cedt, sizeof(cedt), 0x1000000000ull, 0x200000000ull) == TIER_CXL_ARITH_MODULO,
	   "CEDT: the modulo window found");
	ok(tier_cxl_cedt_arith(cedt, sizeof(cedt), 0x2000000000ull, 0x200000000ull) == TIER_CXL_ARITH_XOR,
	   "CEDT: the XOR window found");
	ok(tier_cxl_cedt_arith(cedt, sizeof(cedt), 0x3000000000ull, 0x200000000ull) == TIER_CXL_ARITH_UNKNOWN &&
	   tier_cxl_cedt_arith(cedt, sizeof(cedt), 0x1000000000ull, 0x100000000ull) == TIER_CXL_ARITH_UNKNOWN,
	   "CEDT: no such window (base or size differ): unknown");
	ok(tier_cxl_cedt_arith(cedt, 36 + 32 + 20, 0x1000000000ull, 0x200000000ull) == TIER_CXL_ARITH_UNKNOWN,
	   "CEDT: a subtable cut short: unknown");
	cedt[36 + 32 + 2] = 2; /* a subtable length below its header: no endless loop */
	ok(tier_cxl_cedt_arith(cedt, sizeof(cedt), 0x1000000000ull, 0x200000000ull) == TIER_CXL_ARITH_UNKNOWN,
	   "CEDT: a subtable length under 4: unknown");
	cedt[36 + 32 + 2] = 40;
	cedt[36 + 32 + 25] = 7;
	ok(tier_cxl_cedt_arith(cedt, sizeof(cedt), 0x1000000000ull, 0x200000000ull) == TIER_CXL_ARITH_UNKNOWN,
	   "CEDT: an arithmetic we do not know: unknown");
	ok(tier_cxl_cedt_arith((const unsigned char *)"DSDT", 4, 0, 0) == TIER_CXL_ARITH_UNKNOWN,
	   "not a CEDT: unknown");
	ok(tier_cxl_interleave_ok(1, TIER_CXL_ARITH_UNKNOWN) && tier_cxl_interleave_ok(1, TIER_CXL_ARITH_XOR),
	   "one host bridge: translated whatever the arithmetic");
	ok(tier_cxl_interleave_ok(2, TIER_CXL_ARITH_MODULO), "two host bridges, modulo: translated");
	ok(!tier_cxl_interleave_ok(2, TIER_CXL_ARITH_XOR) && !tier_cxl_interleave_ok(4, TIER_CXL_ARITH_UNKNOWN),
	   "two or more host bridges, XOR or unknown: refused");

	/* the combination rule: alone, a record is believed */
	ok(tier_cxl_weight(3, false, true, 0, UNIT) == 3 * UNIT, "alone: count accesses");
	ok(tier_cxl_weight(3, false, false, 0, UNIT) == 3 * UNIT, "alone: fast blocks keep their heat");
	ok(tier_cxl_weight(1000000, false, true, 0, UNIT) == 64 * UNIT, "alone: count capped");
	/* with other sources: only slow blocks, at most what they see */
	ok(tier_cxl_weight(5, true, false, 9.0f, UNIT) == 0, "with others: nothing on the fast tier");
	ok(tier_cxl_weight(5, true, true, 0.0f, UNIT) == 0, "with others: nothing where they see no access");
	ok(tier_cxl_weight(5, true, true, 2.0f, UNIT) == 2 * UNIT, "with others: capped at their rate");
	ok(tier_cxl_weight(1, true, true, 2.0f, UNIT) == 1 * UNIT, "with others: below the cap unchanged");

	/* A hot list naming only cold pages, with another source that sees a
	 * hot set on the fast tier, through the policy itself: the fast tier
	 * is full (at its high watermark), so a listed slow block could only
	 * get in by displacing the hot set, which it must not. */
	ok(combined_swaps(true) == 0, "a list of cold pages displaces nothing another source sees hot");
	/* and alone, the same list promotes what it names */
	ok(combined_swaps(false) >= 1, "alone, the listed pages get heat and displace a cold fast block");
	return done();
}
