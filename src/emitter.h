/* One call prints a value as text or JSON (in the spirit of jemalloc's
 * emitter): stats.c walks its values once, and the same walk gives the
 * text stats, the JSON stats and the list of stats names with their JSON
 * paths (the check that tier_mallctl's stats all appear in the JSON).
 *
 * Text: a section per line, "title: label value, label value"; a nested
 * group continues the line ("; title: ..."); an array's items are lines
 * of their own, indented.  JSON: the keys, nested as called. */
#ifndef TIER_EMITTER_H
#define TIER_EMITTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tier_emit_mode { TIER_EMIT_TEXT, TIER_EMIT_JSON, TIER_EMIT_NAMES };
enum tier_emit_type { TIER_EV_BOOL, TIER_EV_U64, TIER_EV_INT, TIER_EV_DOUBLE, TIER_EV_STR };

#define TIER_EMIT_DEPTH 8

struct tier_emitter {
	enum tier_emit_mode mode;
	void (*write)(void *ctx, const char *s); /* gets whole pieces, NUL-terminated */
	void *ctx;
	int depth;
	bool first[TIER_EMIT_DEPTH];   /* nothing printed yet at this depth */
	bool array[TIER_EMIT_DEPTH];   /* this depth is an array */
	char path[256];                /* TIER_EMIT_NAMES: the JSON path so far */
	size_t plen[TIER_EMIT_DEPTH];
};

void tier_emit_init(struct tier_emitter *e, enum tier_emit_mode mode, void (*write)(void *, const char *),
		    void *ctx);
/* The outer object: JSON's {"tiermalloc":{, text's begin and end lines. */
void tier_emit_begin(struct tier_emitter *e);
void tier_emit_end(struct tier_emitter *e);
/* A group of values: JSON object "key", text section (or inline group)
 * titled text (NULL: the key). */
void tier_emit_dict_begin(struct tier_emitter *e, const char *key, const char *text);
void tier_emit_dict_end(struct tier_emitter *e);
/* An array of groups (the tiers): items are dicts with a NULL key. */
void tier_emit_array_begin(struct tier_emitter *e, const char *key, const char *text);
void tier_emit_array_end(struct tier_emitter *e);
/* One value: JSON "key":value, text "label value" (label NULL: the key).
 * val points at bool, uint64_t, int, double or const char *. */
void tier_emit_kv(struct tier_emitter *e, const char *key, const char *text, enum tier_emit_type type,
		  const void *val);

/* Shorthands for the common types. */
static inline void tier_emit_u64(struct tier_emitter *e, const char *key, const char *text, uint64_t v)
{
	tier_emit_kv(e, key, text, TIER_EV_U64, &v);
}
static inline void tier_emit_bool(struct tier_emitter *e, const char *key, const char *text, bool v)
{
	tier_emit_kv(e, key, text, TIER_EV_BOOL, &v);
}
static inline void tier_emit_int(struct tier_emitter *e, const char *key, const char *text, int v)
{
	tier_emit_kv(e, key, text, TIER_EV_INT, &v);
}
static inline void tier_emit_double(struct tier_emitter *e, const char *key, const char *text, double v)
{
	tier_emit_kv(e, key, text, TIER_EV_DOUBLE, &v);
}
static inline void tier_emit_str(struct tier_emitter *e, const char *key, const char *text, const char *v)
{
	tier_emit_kv(e, key, text, TIER_EV_STR, &v);
}

#endif
