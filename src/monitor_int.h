/* The monitor's internals, shared by monitor.c (lists, folding, the
 * histograms, candidates, the period) and monitor_visit.c (how blocks are
 * looked at: pull-source slices and runs, probes, the watch list and the
 * sweep).  Not for any other file: monitor.h is the interface. */
#ifndef TIER_MONITOR_INT_H
#define TIER_MONITOR_INT_H

#include "heat.h"
#include "heat_hist.h"
#include "pageheat.h"

/* With a pull source, a block is armed once and then measured at each
 * visit, which re-arms what was written.  The armed part is a slice sized
 * from the block's last measurement, so that a visit finds about
 * FAULT_TARGET written pages: every one of them cost the program a write
 * fault (0.5-1 us natively, 12-20 us in the VMs these tests run on),
 * which is most of what tracking costs.  A busy block is measured on a
 * few pages (counted for the whole block), a quiet one on QUIET_PAGES
 * that move on at each look.  Never more: a quiet block armed whole that
 * turns hot costs a fault on each of its 512 pages at once, and a hot set
 * that moved onto such blocks (64 of them, natively at 4 GiB) booked
 * 27-33 ms of faults in one period. */
#define FAULT_TARGET 4.0f
#define QUIET_PAGES 64u
#define SLICE_MIN 8u   /* pages */
#define SLICE_FIRST 16u /* a block's first look: its rate is unknown */
#define WATCH_MAX 8192
#define COLD_MAX 2048
/* Slices armed for a one-period window, measured at the next period's
 * start (see due_add). */
#define DUE_MAX 4096
/* The watch list takes at most this share of the allowance; the sweep
 * keeps the rest, so the pass length stays bounded. */
#define WATCH_SHARE 0.5
/* Floors come from sweep visits, forgotten with this weight per period. */
#define FLOOR_DECAY 0.97
#define FLOOR_QUANTILE 0.1
/* Weight of one fold in the moving variance of a block's heat. */
#define HVAR_WEIGHT 0.25f
/* ... and a first fold's variance, relative to its heat squared. */
#define HVAR_FIRST 0.25f
/* Advisor time slots. */
#define SLOT_MS 250
#define NSLOTS 256

struct ref {
	struct tier_mapping *m;
	uint32_t b;
};

/* Dense blocks: written so fast that a one-period window finds their
 * slice all written (rate TIER_DENSE_RATE per page per period and up),
 * so that a hot block and a merely busy one look alike.  Their slices are
 * measured over a short window instead, SHORT_DIV times shorter than a
 * period, after the period's steps (see tier_monitor_short_at). */
#define DENSE_RATE 2.5f
#define SHORT_DIV 16
#define SHORT_MAX 512
/* periods between two sentinel looks (monitor_visit.c) */
#define SENTINEL_EVERY 4u
struct short_ref {
	struct ref r;
	uint64_t armed_ns; /* CLOCK_MONOTONIC when its slice was armed */
	uint32_t period;   /* the period that armed it */
	uint16_t pages;    /* the slice armed */
};

struct tier_mon_state {
	uint32_t period;
	double decay;
	struct ref watch[WATCH_MAX];
	uint32_t nwatch, rot;
	struct ref cold[COLD_MAX];
	uint32_t ncold;
	struct ref due[2][DUE_MAX]; /* by period parity: armed last period, armed now */
	uint32_t ndue[2];
	struct short_ref shorts[SHORT_MAX]; /* slices armed for a short window */
	uint32_t nshort;
	float short_w;       /* while one is measured: its window, in periods */
	uint64_t fixed_ns;   /* this period's sentinel look: not the allowance's */
	uint64_t carry_sched, carry_fault; /* what the short windows cost, counted in the next period */
	bool saturated;      /* the last pull fold found its part all written */
	bool cold_short;     /* ... or, over a short window, far under its estimate */
	bool slice_empty;    /* the slice just folded found nothing on a block
			      * thought written: it may sit on pages never used */
	unsigned churn;      /* surprises since the balance last asked (tier_monitor_churned) */
	float cut;           /* the policy's heat cut between the tiers (0: all fits) */
	float cut_hot;       /* clearly above the cut (cut x hysteresis^2) */
	uint32_t cold_n;     /* this period: fast blocks found gone cold together (tier_heat_cold_member) */
	bool in_due;         /* visiting the due list: no re-queueing */
	uint64_t sched_ns;   /* this period: the visits' CPU */
	int64_t fault_ns;    /* this period: faults charged (when armed) less refunds (when measured) */
	uint64_t one_fault;  /* what one costs (the pull source measured it) */
	/* sweep cursor: the next block to visit */
	struct tier_mapping *cm;
	uint64_t cseq;
	uint32_t cb;
	uint32_t pass_start;
	uint64_t pass_blocks;
	/* the pull source's answer for the cursor's 64 blocks: which hold a
	 * page (held_b: the first of them, in mapping held_seq, this period) */
	uint64_t held_seq, held_mask;
	uint32_t held_b, held_period;
	struct tier_hist hist[TIER_MAX_TIERS];
	struct tier_rate_hist rates[TIER_SRC_COUNT];
	float floor[TIER_SRC_COUNT];
	float watch_in, watch_out; /* heat to enter / stay on the watch list */
	bool idle;
	/* advisor: pages per time slot of their last access */
	_Atomic uint64_t seen[NSLOTS];
	_Atomic uint32_t slot_now; /* absolute slot number of now (>= 1) */
};
extern struct tier_mon_state tier_mon;
/* A probe's window grows up to this many periods where writes are sparse. */
#define PROBE_WIN_MAX 16
/* faults an armed part was found to cost, by kind (EXPECT_*) */
extern float tier_mon_expect[4];
enum { EXPECT_FIRST, EXPECT_SLICE, EXPECT_QUIET, EXPECT_PAGES };

static inline struct tier_block *blk_of(const struct ref *r) { return &r->m->blocks[r->b]; }

/* monitor.c */
void tier_mon_fold(struct tier_mapping *m, uint32_t b, bool pulled, bool sweep);
/* fault_ns: what the window just measured cost the program in write
 * faults, per period of it. */
void tier_mon_ph_decide(struct tier_mapping *m, uint32_t b, struct tier_ph *e, double fault_ns);
/* monitor_visit.c */
uint64_t tier_mon_spent(void);
void tier_mon_visit_due(bool pull);
void tier_mon_visit_probes(uint64_t until, bool pull);
void tier_mon_visit_watch(uint64_t until, bool pull);
void tier_mon_visit_sentinels(bool pull);
void tier_mon_sweep(uint64_t until, bool pull);
/* Arm block b's slice afresh for a one-period look (a swap's retest). */
void tier_mon_rearm(struct tier_mapping *m, uint32_t b);

#endif
