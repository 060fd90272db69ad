/* Tunables: one table describes every knob once, for TIERMALLOC_CONF
 * (key:value) and for tier_mallctl ("tier.<key>"). */
#ifndef TIER_KNOBS_H
#define TIER_KNOBS_H

#include "tier.h"

enum tier_knob_type { TK_SIZE, TK_BOOL, TK_UINT, TK_DOUBLE, TK_NODES, TK_STATS, TK_SOURCES, TK_PATH,
		      TK_NAME, TK_SHARE };

#define TIER_PATH_MAX 256
#define TIER_NAME_MAX 64

/* A size, or a share of something (job_fast_limit: "4G" or "50%"). */
struct tier_size_share {
	size_t bytes;  /* 0 with share 0: not given */
	double share;  /* 0 < share <= 1: a share, bytes unused */
};

/* Heat sources, in probe order (bit i of a sources mask). */
enum { TIER_SRC_PERF, TIER_SRC_DAMON, TIER_SRC_PAGEMAP, TIER_SRC_RECENCY, TIER_SRC_CXL, TIER_SRC_COUNT };
_Static_assert(TIER_SRC_COUNT == 5, "struct tier_block has one sample counter per source");
#define TIER_SRC_ALL ((1u << TIER_SRC_COUNT) - 1)
/* cxl only on request (or with cxl_reports): it sees nothing without reports */
#define TIER_SRC_DEFAULT (TIER_SRC_ALL & ~(1u << TIER_SRC_CXL))

struct tier_settings {
	size_t fast_limit;              /* bytes; see knob_set for "unset" */
	bool enabled;
	tier_nodemask_t fast_nodes;     /* explicit topology override */
	tier_nodemask_t slow_nodes;
	unsigned stats_print;           /* 0 off, 1 text, 2 JSON */
	bool verbose;
	bool trace;                     /* log the policy's moves */
	/* background tiering */
	unsigned period_ms;
	unsigned heat_half_life_ms;
	unsigned promote_rate_mbps;
	unsigned demote_rate_mbps;
	double watermark_high;          /* fractions of fast_limit */
	double watermark_low;
	double hysteresis;              /* a swap needs heat ratio >= this */
	unsigned heat_sources;          /* TIER_SRC_* mask */
	bool migrate;
	double bg_cpu;                  /* budget of all background work, share of one core */
	double bg_cpu_burst;            /* the budget while a burst of tracking pays (bg.c) */
	bool advise;                    /* track heat and report the hot set, even untiered */
	bool signal_safe;               /* mark calls into jemalloc: handlers that re-enter use the pool */
	char advise_csv[TIER_PATH_MAX]; /* append the hot-set curve here once a second */
	char cxl_reports[TIER_PATH_MAX]; /* CXL hot-list records: a file or FIFO (heat_cxl.c) */
	bool always_hook;               /* extent hooks even where nothing is ever tiered */
	bool ctl;                       /* control channel even when nothing is tiered */
	char run_dir[TIER_PATH_MAX];    /* runtime directory (rundir.c); "": the default places */
	/* job-wide tiering (job.c) */
	char job[TIER_NAME_MAX];        /* job name; "": the cgroup, when job_fast_limit is given */
	struct tier_size_share job_fast_limit;
	size_t large_cache;             /* large-buffer cache slack, bytes (large.c); 0: off */
	uint32_t set;                   /* bit k: knob k given explicitly */
};

struct tier_knob {
	const char *name;
	enum tier_knob_type type;
	size_t offset;                  /* in struct tier_settings */
	double min, max;                /* numeric range, inclusive */
	bool runtime;                   /* writable through tier_mallctl */
	const char *expect;             /* what a valid value looks like */
	const char *init;               /* the default as TIERMALLOC_CONF spells it; NULL: 0 or empty */
	const char *def;                /* the default in words, where init alone says too little */
	const char *doc;                /* what it does: README, man pages and help come from here */
};

extern const struct tier_knob tier_knobs[];
extern const size_t tier_nknobs;

/* The live settings: defaults, then TIERMALLOC_CONF at boot, then knob
 * writes through tier_mallctl (under tier_ctl_lock). */
extern struct tier_settings tier_settings;
/* Serialises knob writes and actions from tier_mallctl. */
void tier_ctl_lock(void);
void tier_ctl_unlock(void);

/* The lazy boot: an entry point below init.c (a thread's first allocation
 * in arena.c, tier_mallctl, tier_pin, tier_stats_print) loads the settings
 * and the topology through this pointer, the one call that reaches up.
 * init.c defines it with a static initializer, so that it holds before any
 * constructor runs (another library's constructor may allocate first). */
extern void (*const tier_boot_fn)(void);
static inline void tier_boot(void) { tier_boot_fn(); }

/* A knob's effect: what a write through tier_mallctl must push into the
 * module that caches it.  The owner of the effect registers it at boot
 * (knobs know nothing above them); tier_knob_written runs the knob's own
 * effect, then the one for every knob (waking the background thread). */
void tier_knob_on_set(const char *name, void (*fn)(void));
void tier_knob_on_any(void (*fn)(void));
void tier_knob_written(const struct tier_knob *k);

const struct tier_knob *tier_knob_find(const char *name, size_t len);
int tier_knob_index(const struct tier_knob *k);
/* Whether the named knob was set explicitly (TIERMALLOC_CONF). */
bool tier_knob_given(const struct tier_settings *s, const char *name);
/* Parse text into the knob's field of *s; 0 ok, -1 bad value. */
int tier_knob_parse(const struct tier_knob *k, const char *v, size_t len, struct tier_settings *s);
/* Check a binary value (from tier_mallctl) for range; 0 ok, -1 bad. */
int tier_knob_check(const struct tier_knob *k, const void *val);
size_t tier_knob_size(const struct tier_knob *k);
/* Cross-knob rules (watermark_low <= watermark_high, ...); NULL when fine,
 * else a message naming the rule. */
const char *tier_settings_check(const struct tier_settings *s);
/* Every knob at the default of its row (init). */
void tier_settings_default(struct tier_settings *s);
/* The default in words: def, else init, else "none". */
const char *tier_knob_default_words(const struct tier_knob *k);
/* A knob's value as TIERMALLOC_CONF would spell it; returns buf. */
const char *tier_knob_format(const struct tier_knob *k, const struct tier_settings *s, char *buf, size_t len);
int tier_size_parse(const char *v, size_t len, size_t *out);
int tier_sources_parse(const char *v, size_t len, unsigned *out);
const char *tier_source_name(unsigned src);

/* conf.c: parse a TIERMALLOC_CONF string into *s; all or nothing.
 * Each error is passed to err() as one line; returns the error count. */
int tier_conf_parse(const char *conf, struct tier_settings *s,
                    void (*err)(void *ctx, const char *line), void *ctx);
/* Read TIERMALLOC_CONF (unless AT_SECURE) into *s, printing errors. */
void tier_conf_load(struct tier_settings *s);

#endif
