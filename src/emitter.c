/* The emitter (emitter.h): text, JSON, or the names with their JSON paths. */
#include <stdio.h>
#include <string.h>

#include "emitter.h"

void tier_emit_init(struct tier_emitter *e, enum tier_emit_mode mode, void (*write)(void *, const char *),
		    void *ctx)
{
	memset(e, 0, sizeof(*e));
	e->mode = mode;
	e->write = write;
	e->ctx = ctx;
	e->first[0] = true;
}

static void put(struct tier_emitter *e, const char *s)
{
	if (e->mode != TIER_EMIT_NAMES)
		e->write(e->ctx, s);
}

/* JSON string: quotes, backslashes and control characters escaped. */
static void put_jstr(struct tier_emitter *e, const char *s)
{
	char buf[256];
	size_t n = 0;
	put(e, "\"");
	for (; *s; s++) {
		if (n + 8 > sizeof(buf)) {
			buf[n] = '\0';
			put(e, buf);
			n = 0;
		}
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			buf[n++] = '\\';
			buf[n++] = (char)c;
		} else if (c < 0x20) {
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\\u%04x", c);
		} else {
			buf[n++] = (char)c;
		}
	}
	buf[n] = '\0';
	put(e, buf);
	put(e, "\"");
}

/* Before an entry at the current depth: the separator, and in JSON the key;
 * in names mode, the entry's path. */
static void entry(struct tier_emitter *e, const char *key, const char *text)
{
	int d = e->depth;
	bool first = e->first[d];
	e->first[d] = false;
	if (e->mode == TIER_EMIT_NAMES) {
		size_t n = d ? e->plen[d - 1] : 0;
		e->path[n] = '\0';
		if (key)
			snprintf(e->path + n, sizeof(e->path) - n, "%s%s", n ? "." : "", key);
		return;
	}
	if (e->mode == TIER_EMIT_JSON) {
		if (!first)
			put(e, ",");
		if (key && !e->array[d]) {
			put_jstr(e, key);
			put(e, ":");
		}
		return;
	}
	/* text: sections at depth 1 start lines; array items are lines */
	const char *label = text ? text : key;
	if (d <= 1 || e->array[d]) {
		put(e, e->array[d] ? "  " : "");
		if (label) {
			put(e, label);
			put(e, ":");
		}
	} else {
		put(e, first ? " " : ", ");
		if (label) {
			put(e, label);
			put(e, " ");
		}
	}
}

void tier_emit_begin(struct tier_emitter *e)
{
	if (e->mode == TIER_EMIT_JSON)
		put(e, "{\"tiermalloc\":{");
	else
		put(e, "___ Begin tiermalloc statistics ___\n");
	e->depth = 1;
	e->first[1] = true;
	e->array[1] = false;
	e->plen[0] = 0;
}

void tier_emit_end(struct tier_emitter *e)
{
	if (e->mode == TIER_EMIT_JSON)
		put(e, "}}\n");
	else
		put(e, "___ End tiermalloc statistics ___\n");
	e->depth = 0;
}

static void open_group(struct tier_emitter *e, const char *key, const char *text, bool array)
{
	int d = e->depth;
	bool inline_group = e->mode == TIER_EMIT_TEXT && d >= 2 && !e->array[d];
	if (inline_group) {
		/* a group inside a section's line: "; title:" */
		e->first[d] = false;
		put(e, "; ");
		put(e, text ? text : key);
		put(e, ":");
	} else {
		entry(e, key, text);
	}
	if (e->mode == TIER_EMIT_NAMES)
		e->plen[d] = strlen(e->path);
	if (e->mode == TIER_EMIT_JSON)
		put(e, array ? "[" : "{");
	if (e->mode == TIER_EMIT_TEXT && array)
		put(e, "\n");
	if (d + 1 < TIER_EMIT_DEPTH) {
		e->depth = d + 1;
		e->first[d + 1] = true;
		e->array[d + 1] = array;
	}
}

static void close_group(struct tier_emitter *e, bool array)
{
	if (e->depth > 1)
		e->depth--;
	if (e->mode == TIER_EMIT_JSON)
		put(e, array ? "]" : "}");
	/* text: a section (or an array item) ends its line */
	if (e->mode == TIER_EMIT_TEXT && !array && (e->depth <= 1 || e->array[e->depth]))
		put(e, "\n");
}

void tier_emit_dict_begin(struct tier_emitter *e, const char *key, const char *text)
{
	open_group(e, key, text, false);
}

void tier_emit_dict_end(struct tier_emitter *e)
{
	close_group(e, false);
}

void tier_emit_array_begin(struct tier_emitter *e, const char *key, const char *text)
{
	open_group(e, key, text, true);
}

void tier_emit_array_end(struct tier_emitter *e)
{
	close_group(e, true);
}

void tier_emit_kv(struct tier_emitter *e, const char *key, const char *text, enum tier_emit_type type,
		  const void *val)
{
	entry(e, key, text);
	if (e->mode == TIER_EMIT_NAMES) {
		e->write(e->ctx, e->path);
		e->write(e->ctx, "\n");
		return;
	}
	char buf[64];
	const char *v = buf;
	switch (type) {
	case TIER_EV_BOOL: v = *(const bool *)val ? "true" : "false"; break;
	case TIER_EV_U64: snprintf(buf, sizeof(buf), "%llu", (unsigned long long)*(const uint64_t *)val); break;
	case TIER_EV_INT: snprintf(buf, sizeof(buf), "%d", *(const int *)val); break;
	case TIER_EV_DOUBLE: snprintf(buf, sizeof(buf), "%.6g", *(const double *)val); break;
	case TIER_EV_STR: v = *(const char *const *)val; break;
	}
	bool line = e->mode == TIER_EMIT_TEXT && e->depth <= 1; /* a value of its own line */
	if (line)
		put(e, " ");
	if (type == TIER_EV_STR && e->mode == TIER_EMIT_JSON)
		put_jstr(e, v);
	else
		put(e, v);
	if (line)
		put(e, "\n");
}
