/* The policy's rules on constructed candidates. */
#include <math.h>
#include <string.h>

#include "../tap.h"
#include "policy.h"

#define MB (1u << 20)
static struct tier_cand fast[64], slow[64];

static void mk(struct tier_cand *c, size_t n, uint8_t tier, const float *heat)
{
	for (size_t i = 0; i < n; i++)
		c[i] = (struct tier_cand){.block = (uint32_t)i, .bytes = 2 * MB, .heat = heat[i], .lo = heat[i], .tier = tier,
					  .judged = tier == 0};
}

/* fast and slow candidates of given heats, each side with one standard error */
static void sides(const float *fh, size_t nf, float fse, const float *sh, size_t ns, float sse)
{
	mk(fast, nf, 0, fh);
	mk(slow, ns, 1, sh);
	for (size_t i = 0; i < nf; i++)
		fast[i].se = fse;
	for (size_t i = 0; i < ns; i++)
		slow[i].se = sse;
}

static size_t chosen(const struct tier_cand *c, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += c[i].chosen;
	return k;
}

static struct tier_policy_in base(size_t limit, size_t used)
{
	return (struct tier_policy_in){.fast_limit = limit, .fast_used = used, .wm_high = 0.9,
				       .wm_low = 0.7, .hysteresis = 2.0, .promote_budget = 1u << 30,
				       .demote_budget = 1u << 30, .min_heat = 0.05f, .swap_gap = 0.05f,
				       .wide_margin = 100};
}

/* The fast tier full to its high watermark, swaps judged at TIER_SWAP_Z. */
static struct tier_policy_in full(size_t bytes)
{
	struct tier_policy_in in = base(bytes, bytes);
	in.wm_high = 1.0;
	in.z = TIER_SWAP_Z;
	return in;
}

/* A slow block at 45 +- 23 (lo given) against a fast one at 0.7 +- 0.2,
 * the fast tier full: does it swap in? */
static bool swaps_in_all_written(float lo, bool unsure)
{
	float fh[1] = {0.7f}, shh[1] = {45.0f};
	struct tier_policy_out out;
	mk(fast, 1, 0, fh);
	mk(slow, 1, 1, shh);
	fast[0].se = 0.2f;
	slow[0].se = 23.0f;
	slow[0].lo = lo;
	slow[0].unsure = unsure;
	struct tier_policy_in in = full(2 * MB);
	tier_policy_decide(&in, fast, 1, slow, 1, &out);
	return slow[0].chosen;
}

int main(void)
{
	struct tier_policy_out out;
	struct tier_policy_in in;

	/* room: promote the hottest first, up to the high watermark */
	float sh[6] = {0.1f, 5, 0, 3, 0.01f, 1};
	mk(slow, 6, 1, sh);
	in = base(20 * MB, 10 * MB); /* high = 18 MB: room for 4 blocks */
	tier_policy_decide(&in, fast, 0, slow, 6, &out);
	ok(out.promote_blocks == 4 && slow[0].heat == 5 && slow[0].chosen && slow[3].chosen &&
		   !slow[4].chosen,
	   "room for 4 blocks: the 4 hottest are promoted (%zu)", out.promote_blocks);
	ok(out.fast_after == 18 * MB, "fast tier ends at the high watermark");

	/* min heat: nothing cold moves */
	float cold[3] = {0.01f, 0, 0.04f};
	mk(slow, 3, 1, cold);
	in = base(100 * MB, 0);
	tier_policy_decide(&in, fast, 0, slow, 3, &out);
	ok(out.promote_blocks == 0, "blocks under min_heat stay where they are");

	/* above the high watermark: demote the coldest to the low watermark */
	float fh[8] = {4, 0.5f, 9, 0, 2, 7, 1, 3};
	mk(fast, 8, 0, fh);
	in = base(16 * MB, 16 * MB); /* high 14.4, low 11.2: demote 3 blocks (16 -> 10) */
	tier_policy_decide(&in, fast, 8, slow, 0, &out);
	ok(out.demote_blocks == 3 && fast[0].heat == 0 && fast[1].heat == 0.5f && fast[2].heat == 1 &&
		   chosen(fast, 8) == 3,
	   "over the high watermark: the 3 coldest are demoted");

	/* full: swap only when hotter by the hysteresis factor */
	float f2[3] = {1, 3, 5}, s2[3] = {2.5f, 1.9f, 10};
	mk(fast, 3, 0, f2);
	mk(slow, 3, 1, s2);
	in = base(6 * MB, 6 * MB); /* high 5.4: no room, and over it... */
	in.wm_high = 1.0;
	in.wm_low = 0.9;
	tier_policy_decide(&in, fast, 3, slow, 3, &out);
	/* slow sorted: 10, 2.5, 1.9; fast sorted: 1, 3, 5.  10 >= 2*1: swap; 2.5 < 2*3: stop */
	ok(out.swaps == 1 && slow[0].chosen && fast[0].chosen && !slow[1].chosen && !fast[1].chosen,
	   "one swap (10 vs 1), then 2.5 is not 2x hotter than 3: stop");

	/* a full block needs two half-empty cold ones to give way */
	mk(fast, 4, 0, (float[]){0, 0.1f, 8, 9});
	fast[0].bytes = fast[1].bytes = 1 * MB;
	mk(slow, 2, 1, (float[]){6, 5});
	in = base(6 * MB, 6 * MB);
	in.wm_high = 1.0;
	in.wm_low = 0.5;
	tier_policy_decide(&in, fast, 4, slow, 2, &out);
	ok(out.promote_blocks == 1 && out.demote_blocks == 2 && slow[0].chosen && !slow[1].chosen &&
		   out.fast_after == 6 * MB,
	   "two 1 MB cold blocks make room for one 2 MB hot block; the next finds only hot ones");

	/* a wide absolute gap is enough even under the ratio */
	mk(fast, 1, 0, (float[]){3});
	mk(slow, 1, 1, (float[]){5});
	in = base(2 * MB, 2 * MB);
	in.wm_high = 1.0;
	tier_policy_decide(&in, fast, 1, slow, 1, &out);
	ok(out.swaps == 0, "5 vs 3: under the factor 2, gap 2 under a margin of 100: no swap");
	in.wide_margin = 1.5f;
	tier_policy_decide(&in, fast, 1, slow, 1, &out);
	ok(out.swaps == 1, "5 vs 3 with a margin of 1.5: swap");

	/* swap_gap: cold against cold is noise, even at twice the heat */
	mk(fast, 1, 0, (float[]){0.09f});
	mk(slow, 1, 1, (float[]){0.2f});
	in = base(2 * MB, 2 * MB);
	in.wm_high = 1.0;
	in.swap_gap = 0.5f;
	tier_policy_decide(&in, fast, 1, slow, 1, &out);
	ok(out.swaps == 0 && out.promote_blocks == 0, "0.2 vs 0.09: over the factor 2, under swap_gap 0.5: no swap");
	mk(slow, 1, 1, (float[]){0.8f});
	tier_policy_decide(&in, fast, 1, slow, 1, &out);
	ok(out.swaps == 1 && slow[0].chosen && fast[0].chosen, "0.8 vs 0.09: gap 0.71 >= 0.5: swap");

	/* rate limits */
	float s3[4] = {9, 8, 7, 6};
	mk(slow, 4, 1, s3);
	in = base(100 * MB, 0);
	in.promote_budget = 5 * MB;
	tier_policy_decide(&in, fast, 0, slow, 4, &out);
	ok(out.promote_blocks == 2 && out.promote_bytes == 4 * MB, "promote budget 5 MB: 2 blocks");
	float f4[4] = {0, 0, 0, 0};
	mk(fast, 4, 0, f4);
	in = base(8 * MB, 8 * MB);
	in.demote_budget = 2 * MB;
	tier_policy_decide(&in, fast, 4, slow, 0, &out);
	ok(out.demote_blocks == 1, "demote budget 2 MB: 1 block");

	/* sort */
	struct tier_cand v[7];
	float h[7] = {3, 1, 4, 1, 5, 9, 2};
	mk(v, 7, 0, h);
	/* regret: moves that undo recent ones raise the swap thresholds */
	float r = 0;
	for (int i = 0; i < 32; i++)
		r = tier_regret_move(r, true);
	ok(r > 0.85f && r < 1, "32 moves that each undid a recent one: regret %.2f", (double)r);
	float r2 = r;
	for (int i = 0; i < 32; i++)
		r2 = tier_regret_move(r2, false);
	ok(r2 < 0.15f, "then 32 that did not: %.2f", (double)r2);
	ok(tier_regret_decay(0.5f, 0.5) == 0.25f, "decay halves it at factor 0.5");

	/* the heat a decision brings: promotions and second looks, less
	 * demotions (pages x heat; 2 MiB = 512 pages) */
	{
		struct tier_cand f[2], s[3];
		float fh[2] = {0.9f, 0.5f}, sh[3] = {40, 1.5f, 30};
		mk(f, 2, 0, fh);
		mk(s, 3, 1, sh);
		ok(tier_policy_moved_heat(f, 2, s, 3, 1.0f) == 0, "nothing chosen: nothing brought");
		s[0].chosen = true;
		f[0].chosen = true;
		s[2].retest = true;
		s[1].bytes = 8 << 10; /* not chosen: not counted whatever its size */
		double want = 512.0 * (40.0 + (30.0 - 1.0) - (double)0.9f);
		ok(fabs(tier_policy_moved_heat(f, 2, s, 3, 1.0f) - want) < 1e-6,
		   "a hot block in, one to look again at (above the cut 1), a warm one out: %.1f",
		   tier_policy_moved_heat(f, 2, s, 3, 1.0f));
		s[0].chosen = s[2].retest = false;
		s[1].chosen = true;
		s[1].bytes = 2 * MB;
		ok(tier_policy_moved_heat(f, 2, s, 3, 1.0f) < 512.0 * 0.61 && tier_policy_moved_heat(f, 2, s, 3, 1.0f) > 0,
		   "a warm swap (1.5 for 0.9) brings little");
		s[1].chosen = false;
		s[1].retest = true;
		ok(tier_policy_moved_heat(f, 2, s, 3, 2.0f) == -512.0 * (double)0.9f,
		   "a second look at a block under the cut brings nothing");
	}

	tier_cand_sort(v, 7, true);
	int sorted = 1;
	for (int i = 1; i < 7; i++)
		sorted &= v[i - 1].heat >= v[i].heat;
	ok(sorted && v[0].heat == 9, "hottest-first sort");
	tier_cand_sort(v, 7, false);
	sorted = 1;
	for (int i = 1; i < 7; i++)
		sorted &= v[i - 1].heat <= v[i].heat;
	ok(sorted && v[0].heat == 1, "coldest-first sort");
	/* significance: a swap needs a gap of TIER_SWAP_Z standard errors */
	{
		float fh[1] = {0.4f}, shh[1] = {1.0f};
		mk(fast, 1, 0, fh);
		mk(slow, 1, 1, shh);
		in = base(2 * MB, 2 * MB);
		in.wm_high = 1.0; /* full, not over: only a swap can bring the slow block in */
		in.z = TIER_SWAP_Z;
		fast[0].se = 0.25f;
		slow[0].se = 0.25f; /* gap 0.6 < 2 x 0.35 */
		tier_policy_decide(&in, fast, 1, slow, 1, &out);
		ok(out.swaps == 0 && !slow[0].chosen, "a gap within the noise (0.6 against se 0.25 each): no swap");
		mk(fast, 1, 0, fh);
		mk(slow, 1, 1, shh);
		fast[0].se = 0.1f;
		slow[0].se = 0.1f; /* gap 0.6 > 2 x 0.14 */
		tier_policy_decide(&in, fast, 1, slow, 1, &out);
		ok(out.swaps == 1 && slow[0].chosen && fast[0].chosen,
		   "the same gap with se 0.1 each: swapped (%zu)", out.swaps);
	}
	/* a noisy candidate (a block of a few pages) at the head of the fast
	 * list is passed over, not allowed to stop every swap behind it */
	{
		float fh[2] = {0.2f, 0.5f}, shh[1] = {2.5f};
		mk(fast, 2, 0, fh);
		mk(slow, 1, 1, shh);
		fast[0].bytes = 6 * 4096;
		fast[0].se = 3.0f; /* 2.3 within its noise */
		fast[1].se = 0.05f;
		slow[0].se = 0.05f;
		in = base(4 * MB, 4 * MB); /* full: the 2 MB block in needs 2 MB out */
		in.wm_high = 1.0;
		in.z = TIER_SWAP_Z;
		tier_policy_decide(&in, fast, 2, slow, 1, &out);
		ok(out.swaps == 1 && slow[0].chosen && !fast[0].chosen && fast[1].chosen,
		   "a 6-page block with se 3 first in line: passed over, the next one gives way (%zu swaps)", out.swaps);
	}
	/* a fast block not known to be cold (every page written: "at
	 * least") does not give way; the next does */
	{
		float fh[2] = {0.2f, 0.5f}, shh[1] = {2.5f};
		sides(fh, 2, 0.05f, shh, 1, 0.05f);
		fast[0].unsure = true;
		in = base(4 * MB, 4 * MB);
		in.wm_high = 1.0;
		in.z = TIER_SWAP_Z;
		tier_policy_decide(&in, fast, 2, slow, 1, &out);
		ok(out.swaps == 1 && slow[0].chosen && !fast[0].chosen && fast[1].chosen,
		   "an unsure fast block (0.2, all written) passed over, 0.5 gives way to 2.5 (%zu swaps)", out.swaps);
		mk(fast, 1, 0, fh);
		mk(slow, 1, 1, shh);
		fast[0].unsure = true;
		in = base(2 * MB, 2 * MB);
		in.wm_high = 1.0;
		in.z = TIER_SWAP_Z;
		tier_policy_decide(&in, fast, 1, slow, 1, &out);
		ok(out.swaps == 0 && !slow[0].chosen, "only an unsure fast block: no swap");
	}
	/* a slow block over the cut only by chance does not displace fast
	 * memory: what it surely is (lo) must clear the cut */
	{
		float fh[1] = {0.2f}, shh[2] = {3.0f, 2.6f};
		mk(fast, 1, 0, fh);
		mk(slow, 2, 1, shh);
		fast[0].se = 0.05f;
		slow[0].se = 0.5f;
		slow[0].lo = 2.0f; /* under the cut of 2.2 */
		slow[1].se = 0.2f;
		slow[1].lo = 2.4f;
		in = base(2 * MB, 2 * MB);
		in.wm_high = 1.0;
		in.z = TIER_SWAP_Z;
		in.swap_min = 2.2f;
		tier_policy_decide(&in, fast, 1, slow, 2, &out);
		ok(out.swaps == 1 && !slow[0].chosen && slow[1].chosen,
		   "3.0, surely 2.0, over a cut of 2.2 stays; 2.6, surely 2.4, ranked after it, swaps in (%zu swaps)",
		   out.swaps);
	}
	/* a slow block ranked first on its own looks is looked at again
	 * before it displaces fast memory; the room it would have taken goes
	 * to the next, and a block judged on later looks swaps in */
	{
		float fh[2] = {0.5f, 0.6f}, shh[2] = {8.0f, 6.0f};
		mk(fast, 2, 0, fh);
		mk(slow, 2, 1, shh);
		slow[0].picked_on_own = true;
		in = full(4 * MB);
		tier_policy_decide(&in, fast, 2, slow, 2, &out);
		ok(!slow[0].chosen && slow[0].retest && slow[1].chosen && !slow[1].retest && out.retests == 1 &&
			   out.swaps == 1 && fast[0].chosen && !fast[1].chosen,
		   "8.0 picked on its own looks: looked at again, 6.0 (judged on later looks) takes the coldest "
		   "fast block (%zu retests, %zu swaps)", out.retests, out.swaps);
		mk(fast, 2, 0, fh);
		mk(slow, 1, 1, shh);
		slow[0].picked_on_own = true;
		in = base(4 * MB, 2 * MB); /* room: no swap, no retest */
		in.wm_high = 1.0;
		tier_policy_decide(&in, fast, 2, slow, 1, &out);
		ok(slow[0].chosen && !slow[0].retest && out.retests == 0, "with room it moves at once");
	}
	/* a slow block found all written ("at least"): its se is the spread
	 * of such reads, as large as the rate; its lo clearing the fast
	 * block's heat by z of that block's errors is the test */
	{
		ok(!swaps_in_all_written(17.0f, false),
		   "45 +- 23, surely 17, against 0.7 +- 0.2, read from some pages (too noisy): stays");
		ok(swaps_in_all_written(17.0f, true), "... found all written (its lo judges): swaps in");
		ok(!swaps_in_all_written(0.9f, true), "... all written, but surely only 0.9: stays");
	}
	/* parts of split blocks are candidates like blocks, by their bytes */
	{
		float fh[2] = {0.01f, 0.02f}, shh[1] = {2.0f};
		mk(fast, 2, 0, fh);
		mk(slow, 1, 1, shh);
		slow[0].bytes = 64 * 4096;
		slow[0].part = TIER_PART_UP;
		fast[0].bytes = fast[1].bytes = 48 * 4096;
		fast[0].part = fast[1].part = TIER_PART_DOWN;
		in = base(1 * MB, 1 * MB); /* full: 64 pages in need 96 pages out under high */
		tier_policy_decide(&in, fast, 2, slow, 1, &out);
		ok(slow[0].chosen && fast[0].chosen && fast[1].chosen && out.promote_bytes == 64 * 4096,
		   "a hot part of 64 pages displaces two cold parts of 48 (%zu bytes in)", out.promote_bytes);
	}
	/* the fast nodes' free room (room.h): the budget has room for 4
	 * blocks, the node for 1; a swap's demotions make its room */
	{
		float sh[4] = {9, 8, 7, 6}, fh[2] = {0.1f, 0.2f};
		mk(slow, 4, 1, sh);
		in = base(20 * MB, 10 * MB); /* high 18 MB: room for 4 blocks */
		in.room_capped = true;
		in.fast_room = 3 * MB;
		tier_policy_decide(&in, fast, 0, slow, 4, &out);
		ok(out.promote_blocks == 1 && slow[0].chosen && !slow[1].chosen && out.room_short == 3,
		   "budget room for 4 blocks, node room for 1: one promoted, the other three held back (%zu, %zu)",
		   out.promote_blocks, out.room_short);
		in.fast_room = 0;
		mk(slow, 4, 1, sh);
		tier_policy_decide(&in, fast, 0, slow, 4, &out);
		ok(out.promote_blocks == 0 && out.demote_blocks == 0,
		   "no node room and nothing cold to give way: nothing moves");
		in.room_capped = false;
		mk(slow, 4, 1, sh);
		tier_policy_decide(&in, fast, 0, slow, 4, &out);
		ok(out.promote_blocks == 4 && out.room_short == 0, "room not known: the budget alone decides");
		/* under the budget's high watermark but the node full: a hot
		 * block still swaps in for a cold one, the room the demotion frees */
		mk(slow, 1, 1, sh);
		mk(fast, 2, 0, fh);
		in = base(20 * MB, 4 * MB);
		in.z = TIER_SWAP_Z;
		in.room_capped = true;
		in.fast_room = 0;
		tier_policy_decide(&in, fast, 2, slow, 1, &out);
		ok(slow[0].chosen && out.demote_blocks == 1 && fast[0].chosen && !fast[1].chosen && out.swaps == 1,
		   "node full, budget not: one cold block gives way for the hot one (%zu out)", out.demote_blocks);
		/* over the budget's high watermark: demotions are the budget's, the
		 * node's room never forces one */
		mk(fast, 2, 0, fh);
		in = base(4 * MB, 4 * MB);
		in.room_capped = true;
		in.fast_room = 0;
		in.wm_high = 1.0;
		tier_policy_decide(&in, fast, 2, slow, 0, &out);
		ok(out.demote_blocks == 0, "a full node under the budget's watermark demotes nothing");
	}
	/* alike looks: a fast block judged on its long windows gives way only
	 * once looked at over the slow block's window, after the pick */
	{
		float fh[2] = {1.2f, 1.5f}, shh[1] = {6.0f};
		sides(fh, 2, 0.3f, shh, 1, 1.0f);
		fast[0].judged = false;
		in = full(4 * MB);
		tier_policy_decide(&in, fast, 2, slow, 1, &out);
		ok(!slow[0].chosen && !fast[0].chosen && fast[0].retest && !fast[1].retest && !slow[0].retest &&
			   out.swaps == 0 && out.retests == 1,
		   "6.0 judged against 1.2 not looked at since: no swap, the fast block looks again (%zu swaps)", out.swaps);
		fast[0].retest = false;
		fast[0].judged = true;
		tier_policy_decide(&in, fast, 2, slow, 1, &out);
		ok(slow[0].chosen && fast[0].chosen && out.swaps == 1, "... once judged, it gives way (%zu swaps)", out.swaps);
		/* a slow block picked on its own: it and an unjudged victim both look again */
		sides(fh, 2, 0.3f, shh, 1, 1.0f);
		slow[0].picked_on_own = true;
		fast[0].judged = false;
		tier_policy_decide(&in, fast, 2, slow, 1, &out);
		ok(slow[0].retest && fast[0].retest && !fast[1].retest && out.swaps == 0,
		   "picked on its own looks: the slow block and the fast one it would displace look again together");
		/* two slow blocks, two unjudged fast ones: each has its own looked at */
		float fh3[2] = {1.2f, 1.3f}, sh3[2] = {6.0f, 5.5f};
		sides(fh3, 2, 0.3f, sh3, 2, 1.0f);
		fast[0].judged = fast[1].judged = false;
		tier_policy_decide(&in, fast, 2, slow, 2, &out);
		ok(fast[0].retest && fast[1].retest && out.swaps == 0 && out.retests == 2,
		   "two slow blocks waiting: both unjudged fast blocks look again in one round (%zu retests)", out.retests);
	}
	/* a swap takes no more than its room needs: the coldest fast blocks
	 * of a few pages (uniform GUPS's small data, read by DAMON as 0.003-
	 * 0.2) are not moved in front of the 2 MiB block that alone makes room */
	{
		float fh[4] = {0.003f, 0.1f, 0.2f, 0.7f}, shh[1] = {25.0f};
		sides(fh, 4, 0.1f, shh, 1, 1.0f);
		fast[0].bytes = 4096;
		fast[1].bytes = 24 * 1024;
		fast[2].bytes = 56 * 1024;
		size_t tot = 2 * MB + 84 * 1024;
		in = full(tot);
		tier_policy_decide(&in, fast, 4, slow, 1, &out);
		ok(slow[0].chosen && fast[3].chosen && !fast[0].chosen && !fast[1].chosen && !fast[2].chosen &&
			   out.demote_blocks == 1 && out.demote_bytes == 2 * MB,
		   "three small cold blocks and a 2 MiB one, room for 2 MiB needed: only the 2 MiB one gives way "
		   "(%zu out, %zu bytes)", out.demote_blocks, out.demote_bytes);
		/* 8 KiB more than the big one frees: the smallest that makes it up stays picked */
		float fh2[3] = {0.01f, 0.02f, 0.5f};
		sides(fh2, 3, 0.1f, shh, 1, 1.0f);
		fast[0].bytes = 4096;
		fast[1].bytes = 8192;
		slow[0].bytes = 2 * MB + 8192;
		in = full(2 * MB + 12288);
		tier_policy_decide(&in, fast, 3, slow, 1, &out);
		ok(slow[0].chosen && !fast[0].chosen && fast[1].chosen && fast[2].chosen && out.demote_blocks == 2,
		   "2 MiB + 8 KiB in: the 8 KiB block and the 2 MiB one give way, the 4 KiB one stays (%zu out)",
		   out.demote_blocks);
	}
	return done();
}
