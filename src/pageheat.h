/* Per-page heat of the blocks looked at page by page.
 *
 * Whole 2 MiB blocks are the right unit for memory whose heat is even
 * across the block (arrays, a contiguous hot set), and the wrong one for
 * what key-value stores and caches hold: popular items scattered over
 * every block.  With perfect knowledge, placing whole blocks reaches 25-50%
 * of an object-level oracle on such data, 4 KiB pages 73-84% (DESIGN.md
 * §8).  So a block whose heat is neither clearly hot nor clearly cold is
 * probed: its transparent huge page (if any) is split, it is measured page
 * by page over a few windows, and if its heat turns out concentrated on
 * some pages (the counts are over-dispersed against what even heat would
 * give) it is split: placed page by page, hot pages fast, the rest slow.
 * A split block whose heat evens out is joined again.
 *
 * Per-page state exists only for the blocks in the table (TIER_PH_MAX
 * entries, about 700 bytes each, mapped on first use): bounded whatever
 * the footprint.  Everything here runs in the background thread under the
 * balance lock.  Heat sources mark pages (tier_ph_mark) while they report;
 * the monitor closes a window at each visit (tier_ph_window). */
#ifndef TIER_PAGEHEAT_H
#define TIER_PAGEHEAT_H

#include <stdbool.h>
#include <stdint.h>

#include "heat_hist.h"
#include "registry.h"

#define TIER_PH_MAX 4096
/* Counts halve once a block has this many windows: heat decays by
 * measurements seen, not by wall time. */
#define TIER_PH_WINDOWS 16
/* A probe decides after this many windows. */
#define TIER_PH_PROBE_WINDOWS 8
/* Over-dispersion (variance of the per-page counts over what even heat
 * gives) that makes a block split, and under which a split block joins. */
#define TIER_PH_SPLIT_AT 1.6f
#define TIER_PH_JOIN_AT 1.25f
/* ... and only where splitting pays: the coldest half of the pages holds
 * under this share of the block's heat (even heat: 0.5).  Over-dispersion
 * alone splits a block whose pages are all hot but for a few never
 * touched (an allocation's padding: the binomial variance of saturated
 * counts is ~0), which gains a few pages and costs a probe's upkeep.
 * A split block whose coldest half came to hold TIER_PH_COLD_JOIN joins,
 * when TIER_PH_JOIN_RUN windows in a row say so: tested at every window,
 * sparse counts dip under the join bounds by chance. */
#define TIER_PH_COLD_SPLIT 0.3f
#define TIER_PH_COLD_JOIN 0.4f
#define TIER_PH_JOIN_RUN 4

/* JOIN: its heat evened out; the balance round brings its pages home and
 * drops it. */
enum tier_ph_state { TIER_PH_FREE, TIER_PH_PROBE, TIER_PH_SPLIT, TIER_PH_JOIN };

#define TIER_PH_WORDS ((int)(TIER_PAGES_PER_BLOCK / 64))

struct tier_ph {
	struct tier_mapping *m;
	uint32_t b;
	uint32_t placements;        /* the block's placements when taken: new data resets */
	uint32_t drops;             /* the block's drops when its away pages were last checked */
	uint32_t wsum;              /* periods covered by the counted windows */
	uint32_t last_period;       /* the period of the last window */
	uint16_t windows;           /* windows counted in cnt */
	uint16_t win;               /* a probe's window, periods: long enough to see some pages */
	uint32_t seen_total;        /* pages seen over the probe's windows */
	uint8_t state;              /* enum tier_ph_state */
	uint8_t nh;                 /* histogram contribution entries */
	uint8_t even_run;           /* a split block's windows in a row that read even */
	uint64_t seen[TIER_PH_WORDS]; /* pages seen accessed in the open window */
	uint64_t away[TIER_PH_WORDS]; /* pages moved off the block's tier */
	uint8_t cnt[TIER_PAGES_PER_BLOCK]; /* windows in which each page was seen */
	struct {
		uint8_t tier, bucket;
		uint16_t pages;
	} h[2 * (TIER_PH_WINDOWS + 1)];
};

struct tier_ph_stats {
	_Atomic uint64_t probes, splits, joins, uniform; /* uniform: probes that found even heat */
	_Atomic uint64_t pauses;                         /* times probing paused after even outcomes */
	_Atomic uint64_t costly;                         /* probes let go: they cost more faults than the budget */
	_Atomic uint32_t probing, split;                 /* blocks in each state now */
	_Atomic uint64_t thp_splits;                     /* huge pages split to probe */
	_Atomic uint64_t pages_promoted, pages_demoted;  /* page moves of split blocks */
};
extern struct tier_ph_stats tier_ph_stats;

/* The entry of block b of m, or NULL. */
struct tier_ph *tier_ph_of(const struct tier_mapping *m, uint32_t b);
/* Start probing block b of m (splits its huge page); NULL when the table
 * is full. */
struct tier_ph *tier_ph_take(struct tier_mapping *m, uint32_t b, uint32_t period);
/* Forget the entry (the caller moved its away pages home or accounted
 * them); hist: the histograms to take its contribution out of. */
void tier_ph_drop(struct tier_ph *e, struct tier_hist *hist);
/* Pages [p0, p0+n) of block b of m were seen accessed (any source). */
void tier_ph_mark(struct tier_mapping *m, uint32_t b, uint32_t p0, uint32_t n);
/* Close the open window of e (a visit measured the whole block); returns
 * how many pages were seen in it. */
uint32_t tier_ph_window(struct tier_ph *e, uint32_t period);
/* The shape of a block's page heat over its committed pages, from one
 * pass over their counts: over-dispersion (1 for even heat, much more when
 * a few pages take it; 0 while nothing was seen), tier_ph_cold_half_of,
 * and the mean share of the pages that a window saw. */
struct tier_ph_shape {
	float dispersion, cold_half, seen_share;
};
void tier_ph_shape(const struct tier_ph *e, struct tier_ph_shape *out);
/* Whether page p is on the block's tier (its home) or away. */
static inline bool tier_ph_away(const struct tier_ph *e, uint32_t p)
{
	return e->away[p / 64] >> (p % 64) & 1;
}
void tier_ph_set_away(struct tier_ph *e, uint32_t p, bool away);
uint32_t tier_ph_naway(const struct tier_ph *e);
/* Replace e's contribution to the per-tier histograms: its committed pages
 * by page heat, on their tier (home for pages at home). */
void tier_ph_hist(struct tier_ph *e, float block_heat, int home, struct tier_hist *hist);
/* The pages of a split block to move: to the fast tier (fast: true) its
 * pages now elsewhere whose heat is at least thr, or to the slow tier its
 * pages on the fast tier whose heat is under thr.  Indexes into idx (may
 * be NULL: count only); returns how many, their mean heat in *heat. */
uint32_t tier_ph_select(const struct tier_ph *e, float block_heat, int home, bool fast, float thr,
			uint16_t *idx, float *heat);
/* The table, for walks (reconcile, gone, fork). */
struct tier_ph *tier_ph_at(uint32_t i);
uint32_t tier_ph_used(void);
void tier_ph_state_count(void);

/* Pure: over-dispersion of counts cnt[0..n) each out of w windows. */
float tier_ph_dispersion_of(const uint8_t *cnt, uint32_t n, uint32_t w);
/* The share of the summed counts held by the coldest half of the n pages
 * (0.5: even; 0.5 too when nothing was seen). */
float tier_ph_cold_half_of(const uint8_t *cnt, uint32_t n);

#endif
