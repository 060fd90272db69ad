/* Metrics for a fleet (metrics.h): one table of metric rows, read from the
 * channel's snapshot or from a path of the library's JSON statistics, and
 * written family by family as Prometheus asks (names in base units,
 * counters ending in _total, the samples of one family together). */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

enum src {
	S_JSON,          /* the path `json` of the statistics, times `scale` */
	S_ACTIVE,        /* from here on: the snapshot */
	S_FAST_LIMIT,
	S_PLACED,        /* per tier */
	S_COMMITTED,     /* per tier */
	S_RESIDENT,      /* per tier, from the JSON's tiers[i].resident */
	S_HIT,
	S_PROMOTED,
	S_DEMOTED,
	S_BG_THREAD,
	S_BG_KDAMOND,
	S_BG_FAULTS,
	S_BG_SHARE,
	S_PERIODS,
};

struct row {
	const char *name, *type, *help;
	const char *label; /* an extra label pair, as written: source="perf" */
	enum src src;
	const char *json;
	double scale;
};

#define J(name, type, help, label, path, scale) {name, type, help, label, S_JSON, path, scale}
#define S(name, type, help, label, src, scale) {name, type, help, label, src, NULL, scale}
#define BG "CPU time of tiermalloc's background work, by kind: its thread, its share of kdamond, and the write faults tracking makes the program take"
#define SAMPLES "heat samples taken, by source"
#define REJECTED "CXL hot-list records refused, by reason"

static const struct row rows[] = {
	S("tiermalloc_tiering_active", "gauge", "1 when tiering is in effect in the process (two tiers or more, enabled)", NULL, S_ACTIVE, 1),
	S("tiermalloc_fast_limit_bytes", "gauge", "the process's fast-tier budget (fast_limit, or its share of the job's)", NULL, S_FAST_LIMIT, 1),
	S("tiermalloc_placed_bytes", "gauge", "bytes of the blocks placed on each tier", NULL, S_PLACED, 1),
	S("tiermalloc_committed_bytes", "gauge", "bytes committed in the blocks of each tier", NULL, S_COMMITTED, 1),
	S("tiermalloc_resident_bytes", "gauge", "bytes resident on each tier's nodes", NULL, S_RESIDENT, 1),
	S("tiermalloc_fast_hit_ratio", "gauge", "share of the measured heat on the fast tier (absent until heat is measured)", NULL, S_HIT, 1),
	S("tiermalloc_promoted_bytes_total", "counter", "bytes promoted to the fast tier", NULL, S_PROMOTED, 1),
	S("tiermalloc_demoted_bytes_total", "counter", "bytes demoted from the fast tier", NULL, S_DEMOTED, 1),
	J("tiermalloc_migration_failed_pages_total", "counter", "pages the kernel did not move when asked", NULL, "tiermalloc.migration.failed_pages", 1),
	J("tiermalloc_migration_seconds_total", "counter", "time spent moving memory", NULL, "tiermalloc.migration.ns", 1e-9),
	S("tiermalloc_background_cpu_seconds_total", "counter", BG, "kind=\"thread\"", S_BG_THREAD, 1e-9),
	S("tiermalloc_background_cpu_seconds_total", "counter", BG, "kind=\"kdamond\"", S_BG_KDAMOND, 1e-9),
	S("tiermalloc_background_cpu_seconds_total", "counter", BG, "kind=\"faults\"", S_BG_FAULTS, 1e-9),
	S("tiermalloc_background_cpu_ratio", "gauge", "recent share of one core taken by all background work", NULL, S_BG_SHARE, 1),
	J("tiermalloc_background_cpu_budget_ratio", "gauge", "the background CPU budget (bg_cpu), a share of one core", NULL, "tiermalloc.background.budget", 1),
	J("tiermalloc_heat_samples_total", "counter", SAMPLES, "source=\"perf\"", "tiermalloc.heat.samples.perf", 1),
	J("tiermalloc_heat_samples_total", "counter", SAMPLES, "source=\"damon\"", "tiermalloc.heat.samples.damon", 1),
	J("tiermalloc_heat_samples_total", "counter", SAMPLES, "source=\"pagemap\"", "tiermalloc.heat.samples.pagemap", 1),
	J("tiermalloc_heat_samples_total", "counter", SAMPLES, "source=\"recency\"", "tiermalloc.heat.samples.recency", 1),
	J("tiermalloc_heat_samples_total", "counter", SAMPLES, "source=\"cxl\"", "tiermalloc.heat.samples.cxl", 1),
	J("tiermalloc_cxl_records_accepted_total", "counter", "CXL hot-list records accepted", NULL, "tiermalloc.heat.cxl.accepted", 1),
	J("tiermalloc_cxl_records_rejected_total", "counter", REJECTED, "reason=\"malformed\"", "tiermalloc.heat.cxl.rejected_malformed", 1),
	J("tiermalloc_cxl_records_rejected_total", "counter", REJECTED, "reason=\"version\"", "tiermalloc.heat.cxl.rejected_version", 1),
	J("tiermalloc_cxl_records_rejected_total", "counter", REJECTED, "reason=\"range\"", "tiermalloc.heat.cxl.rejected_range", 1),
	J("tiermalloc_cxl_records_rejected_total", "counter", REJECTED, "reason=\"foreign\"", "tiermalloc.heat.cxl.rejected_foreign", 1),
	J("tiermalloc_cxl_records_rejected_total", "counter", REJECTED, "reason=\"duplicate\"", "tiermalloc.heat.cxl.rejected_duplicate", 1),
	J("tiermalloc_cxl_records_rejected_total", "counter", REJECTED, "reason=\"dpa\"", "tiermalloc.heat.cxl.rejected_dpa", 1),
	J("tiermalloc_cxl_records_rejected_total", "counter", REJECTED, "reason=\"interleave\"", "tiermalloc.heat.cxl.rejected_interleave", 1),
	J("tiermalloc_device_held_bytes", "gauge", "bytes of blocks a device holds (found unmovable: never migrated)", NULL, "tiermalloc.device.held_bytes", 1),
	J("tiermalloc_pinned_bytes", "gauge", "bytes pinned by tier_pin (never migrated)", NULL, "tiermalloc.device.pinned_bytes", 1),
	J("tiermalloc_job_members", "gauge", "live members of the process's job (0: not in a job)", NULL, "tiermalloc.job.members", 1),
	J("tiermalloc_job_fast_limit_bytes", "gauge", "the fast-tier budget of the process's job", NULL, "tiermalloc.job.fast_limit", 1),
	J("tiermalloc_job_share_bytes", "gauge", "the process's share of its job's fast-tier budget", NULL, "tiermalloc.job.share", 1),
	J("tiermalloc_job_fast_bytes", "gauge", "fast-tier bytes of all the members of the process's job", NULL, "tiermalloc.job.fast_bytes", 1),
	J("tiermalloc_reentrant_refused_total", "counter", "allocations from signal handlers refused (signal_safe off or its pool empty)", NULL, "tiermalloc.reentrant.refused", 1),
	/* last, from the snapshot: every process listed has one */
	S("tiermalloc_background_periods_total", "counter", "background periods run", NULL, S_PERIODS, 1),
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))
_Static_assert(NROWS <= TIER_METRICS_VALUES, "TIER_METRICS_VALUES too small");

/* ------------------------------------------------------------ JSON */

/* A small reader of the library's JSON: every scalar is handed to `leaf`
 * with its dotted path (array elements by index). */
struct jr {
	const char *s;
	struct tier_metrics_proc *p;
	char job_state[32];
};

static void ws(struct jr *r)
{
	while (isspace((unsigned char)*r->s))
		r->s++;
}

/* A string into buf (escapes decoded; \u as '?'); -1 when malformed. */
static int jstring(struct jr *r, char *buf, size_t len)
{
	size_t n = 0;
	if (*r->s != '"')
		return -1;
	for (r->s++; *r->s != '"'; r->s++) {
		char c = *r->s;
		if (!c)
			return -1;
		if (c == '\\') {
			c = *++r->s;
			if (!c)
				return -1;
			if (c == 'u') {
				for (int i = 0; i < 4; i++)
					if (!isxdigit((unsigned char)*++r->s))
						return -1;
				c = '?';
			} else if (c == 'n')
				c = '\n';
			else if (c == 't')
				c = '\t';
			else if (c == 'r' || c == 'b' || c == 'f')
				c = ' ';
		}
		if (n + 1 < len)
			buf[n++] = c;
	}
	r->s++;
	buf[n < len ? n : len - 1] = '\0';
	return 0;
}

static void leaf(struct jr *r, const char *path, double v, const char *str)
{
	struct tier_metrics_proc *p = r->p;
	if (str) {
		if (!strcmp(path, "tiermalloc.job.state"))
			snprintf(r->job_state, sizeof(r->job_state), "%s", str);
		else if (!strcmp(path, "tiermalloc.job.name"))
			snprintf(p->job, sizeof(p->job), "%s", str);
		return;
	}
	unsigned t;
	int end = 0;
	if (sscanf(path, "tiermalloc.tiers.%u.resident%n", &t, &end) == 1 && !path[end] && t < TIER_CHAN_TIERS) {
		p->tier_resident[t] = v;
		return;
	}
	for (size_t i = 0; i < NROWS; i++)
		if (rows[i].src == S_JSON && !strcmp(rows[i].json, path)) {
			p->v[i] = v * rows[i].scale;
			p->has[i] = true;
		}
}

static int jvalue(struct jr *r, char *path, size_t plen, int depth);

static int jmember(struct jr *r, char *path, size_t plen, const char *key, int depth)
{
	size_t n = strlen(path);
	snprintf(path + n, plen - n, "%s%s", n ? "." : "", key);
	int rc = jvalue(r, path, plen, depth + 1);
	path[n] = '\0';
	return rc;
}

static int jvalue(struct jr *r, char *path, size_t plen, int depth)
{
	char buf[1024];
	if (depth > 32)
		return -1;
	ws(r);
	char c = *r->s;
	if (c == '{' || c == '[') {
		char close = c == '{' ? '}' : ']';
		r->s++;
		ws(r);
		for (unsigned i = 0; *r->s != close; i++) {
			char key[128];
			if (c == '{') {
				if (jstring(r, key, sizeof(key)))
					return -1;
				ws(r);
				if (*r->s++ != ':')
					return -1;
			} else {
				snprintf(key, sizeof(key), "%u", i);
			}
			if (jmember(r, path, plen, key, depth))
				return -1;
			ws(r);
			if (*r->s == ',') {
				r->s++;
				ws(r);
			} else if (*r->s != close) {
				return -1;
			}
		}
		r->s++;
		return 0;
	}
	if (c == '"') {
		if (jstring(r, buf, sizeof(buf)))
			return -1;
		leaf(r, path, 0, buf);
		return 0;
	}
	if (!strncmp(r->s, "true", 4) || !strncmp(r->s, "false", 5) || !strncmp(r->s, "null", 4)) {
		bool t = c == 't';
		r->s += c == 'f' ? 5 : 4;
		if (c != 'n')
			leaf(r, path, t, NULL);
		return 0;
	}
	char *end;
	double v = strtod(r->s, &end);
	if (end == r->s)
		return -1;
	r->s = end;
	leaf(r, path, v, NULL);
	return 0;
}

int tier_metrics_parse(const char *json, struct tier_metrics_proc *p)
{
	struct jr r = {.s = json, .p = p};
	char path[512] = "";
	/* the command's object: {"pid":..,"live":{..},"tiermalloc":{..}} or
	 * the library's alone */
	int rc = jvalue(&r, path, sizeof(path), 0);
	/* a job label only for a member: a refused or absent job is no job */
	if (strcmp(r.job_state, "member"))
		p->job[0] = '\0';
	p->json = rc == 0;
	if (rc)
		memset(p->has, 0, sizeof(p->has));
	return rc;
}

/* ------------------------------------------------------------ output */

static void label_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void sample(FILE *f, const struct row *w, const struct tier_metrics_proc *p, int tier, double v)
{
	fprintf(f, "%s{pid=\"%ld\",comm=\"", w->name, p->pid);
	label_value(f, p->comm);
	fputs("\",job=\"", f);
	label_value(f, p->job);
	fputc('"', f);
	if (p->ns_pid)
		fprintf(f, ",ns_pid=\"%ld\"", p->ns_pid);
	if (tier >= 0) {
		fprintf(f, ",tier=\"%d\",nodes=\"", tier);
		label_value(f, p->snap.nodes[tier]);
		fputc('"', f);
	}
	if (w->label)
		fprintf(f, ",%s", w->label);
	/* %.17g keeps a 64-bit counter exact up to 2^53 */
	fprintf(f, "} %.17g\n", v);
}

static bool snap_value(const struct row *w, const struct tier_metrics_proc *p, int tier, double *v)
{
	const struct tier_chan_snap *s = &p->snap;
	switch (w->src) {
	case S_JSON:
		return false;
	case S_ACTIVE: *v = s->active != 0; break;
	case S_FAST_LIMIT: *v = (double)s->fast_limit; break;
	case S_PLACED: *v = (double)s->placed[tier]; break;
	case S_COMMITTED: *v = (double)s->committed[tier]; break;
	case S_RESIDENT:
		if (!p->json)
			return false;
		*v = p->tier_resident[tier];
		break;
	case S_HIT:
		if (s->hit < 0)
			return false; /* nothing measured yet: no sample, not a 0 */
		*v = s->hit;
		break;
	case S_PROMOTED: *v = (double)s->promoted_bytes; break;
	case S_DEMOTED: *v = (double)s->demoted_bytes; break;
	case S_BG_THREAD: *v = (double)s->bg_cpu_ns; break;
	case S_BG_KDAMOND: *v = (double)s->bg_kernel_ns; break;
	case S_BG_FAULTS: *v = (double)s->bg_fault_ns; break;
	case S_BG_SHARE: *v = s->bg_share; break;
	case S_PERIODS: *v = (double)s->periods; break;
	}
	*v *= w->scale;
	return true;
}

void tier_metrics_write(FILE *f, const struct tier_metrics_proc *procs, int n)
{
	for (size_t i = 0; i < NROWS; i++) {
		const struct row *w = &rows[i];
		if (!i || strcmp(w->name, rows[i - 1].name))
			fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", w->name, w->help, w->name, w->type);
		bool per_tier = w->src == S_PLACED || w->src == S_COMMITTED || w->src == S_RESIDENT;
		for (int k = 0; k < n; k++) {
			const struct tier_metrics_proc *p = &procs[k];
			double v = 0;
			if (w->src == S_JSON) {
				if (p->has[i])
					sample(f, w, p, -1, p->v[i]);
				continue;
			}
			uint32_t nt = p->snap.ntiers < TIER_CHAN_TIERS ? p->snap.ntiers : TIER_CHAN_TIERS;
			for (int t = per_tier ? 0 : -1; t < (per_tier ? (int)nt : 0); t++)
				if (snap_value(w, p, t, &v))
					sample(f, w, p, t, v);
		}
	}
}
