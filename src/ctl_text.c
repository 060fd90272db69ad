/* tier_mallctl in text: what the control channel serves.  Values are
 * parsed with the knob table's parsers (the same words TIERMALLOC_CONF
 * takes), then handed to tier_mallctl itself, so types, range checks and
 * errors are exactly those of a call made inside the program. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/tiermalloc.h"
#include "ctl.h"
#include "knobs.h"

const char *tier_ctl_type_name(enum tier_ctl_type t)
{
	static const char *const n[] = {"bool", "unsigned", "size_t", "uint64_t", "double",
					"const char *", "size_t (w: bytes to move)",
					"float (w: uintptr_t address)", "write-only text (w: records)"};
	return (unsigned)t < sizeof(n) / sizeof(*n) ? n[t] : "?";
}

static const char *errname(int e)
{
	switch (e) {
	case ENOENT: return "ENOENT";
	case EINVAL: return "EINVAL";
	case EPERM: return "EPERM";
	case EFAULT: return "EFAULT";
	default: return "error";
	}
}

#define FAIL(e, ...)                                                                     \
	do {                                                                             \
		int n_ = snprintf(reply, len, "%s: ", errname(e));                       \
		if (n_ > 0 && (size_t)n_ < len)                                          \
			snprintf(reply + n_, len - (size_t)n_, __VA_ARGS__);             \
		return e;                                                                \
	} while (0)

static int print_value(const char *name, enum tier_ctl_type t, const void *v, char *reply, size_t len)
{
	switch (t) {
	case TC_BOOL: snprintf(reply, len, "%s=%s", name, *(const bool *)v ? "true" : "false"); break;
	case TC_UNSIGNED: snprintf(reply, len, "%s=%u", name, *(const unsigned *)v); break;
	case TC_SIZE: case TC_MOVE: snprintf(reply, len, "%s=%zu", name, *(const size_t *)v); break;
	case TC_U64: snprintf(reply, len, "%s=%" PRIu64, name, *(const uint64_t *)v); break;
	case TC_DOUBLE: snprintf(reply, len, "%s=%g", name, *(const double *)v); break;
	case TC_HEAT_OF: snprintf(reply, len, "%s=%g", name, (double)*(const float *)v); break;
	case TC_STR: {
		const char *s = *(const char *const *)v;
		snprintf(reply, len, "%s=%s", name, s ? s : "");
		break;
	}
	case TC_REPORT: snprintf(reply, len, "%s: write-only", name); break;
	}
	return 0;
}

static size_t type_size(enum tier_ctl_type t)
{
	switch (t) {
	case TC_BOOL: return sizeof(bool);
	case TC_UNSIGNED: return sizeof(unsigned);
	case TC_DOUBLE: return sizeof(double);
	case TC_HEAT_OF: return sizeof(float);
	case TC_STR: return sizeof(const char *);
	default: return sizeof(uint64_t);
	}
}

int tier_ctl_text(const char *req, char *reply, size_t len)
{
	char name[128];
	const char *eq = strchr(req, '=');
	size_t nlen = eq ? (size_t)(eq - req) : strlen(req);
	if (nlen == 0 || nlen >= sizeof(name))
		FAIL(EINVAL, "malformed request: a name of 1 to %zu bytes is expected", sizeof(name) - 1);
	for (size_t i = 0; i < nlen; i++) {
		char c = req[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_'))
			FAIL(EINVAL, "malformed request: bad character 0x%02x in the name", (unsigned char)c);
	}
	memcpy(name, req, nlen);
	name[nlen] = '\0';
	enum tier_ctl_type t;
	bool writable;
	const struct tier_knob *k;
	if (tier_ctl_type(name, &t, &writable, &k))
		FAIL(ENOENT, "no such name \"%s\" (tiermalloc ctl PID --list shows them)", name);

	union { bool b; unsigned u; size_t z; uint64_t q; double d; float f; const char *s; } old;
	size_t oldlen = type_size(t);
	if (!eq) {
		if (t == TC_MOVE || t == TC_HEAT_OF || t == TC_REPORT)
			FAIL(EINVAL, "%s needs a value (%s)", name, tier_ctl_type_name(t));
		int e = tier_mallctl(name, &old, &oldlen, NULL, 0);
		if (e)
			FAIL(e, "%s: %s", name, strerror(e));
		return print_value(name, t, &old, reply, len);
	}

	const char *v = eq + 1;
	size_t vlen = strlen(v);
	if (!writable)
		FAIL(EPERM, "%s is read-only", name);
	if (t == TC_REPORT) { /* the text as it is: one line per request here */
		int e = tier_mallctl(name, NULL, NULL, (void *)v, vlen);
		if (e)
			FAIL(e, "%s: %s", name, strerror(e));
		snprintf(reply, len, "%s: %zu bytes queued", name, vlen);
		return 0;
	}
	union { bool b; unsigned u; size_t z; uint64_t q; double d; uintptr_t a; } nv;
	size_t nvlen;
	struct tier_settings tmp = tier_settings;
	if (k) {
		/* the knob table's parser: the words TIERMALLOC_CONF takes */
		if (tier_knob_parse(k, v, vlen, &tmp))
			FAIL(EINVAL, "bad value \"%.64s\" for %s (expected %s)", v, name, k->expect);
		nvlen = tier_knob_size(k);
		memcpy(&nv, (char *)&tmp + k->offset, nvlen);
	} else if (t == TC_MOVE) {
		if (tier_size_parse(v, vlen, &nv.z))
			FAIL(EINVAL, "bad value \"%.64s\" for %s (expected a size such as 512M)", v, name);
		nvlen = sizeof(size_t);
	} else if (t == TC_HEAT_OF) {
		char *end;
		errno = 0;
		unsigned long long a = strtoull(v, &end, 0);
		if (!vlen || *end || errno)
			FAIL(EINVAL, "bad value \"%.64s\" for %s (expected an address such as 0x7f0000000000)", v,
			     name);
		nv.a = (uintptr_t)a;
		nvlen = sizeof(uintptr_t);
	} else {
		FAIL(EPERM, "%s is read-only", name);
	}
	int e = tier_mallctl(name, &old, &oldlen, &nv, nvlen);
	if (e == EINVAL && k)
		FAIL(e, "%s=%.64s refused (%s)", name, v,
		     tier_settings_check(&tmp) ? tier_settings_check(&tmp) : k->expect);
	if (e)
		FAIL(e, "%s: %s", name, strerror(e));
	if (t == TC_MOVE || t == TC_HEAT_OF)
		return print_value(name, t, &old, reply, len);
	/* read back what is in effect now */
	char was[160];
	print_value(name, t, &old, was, sizeof(was));
	oldlen = type_size(t);
	if (tier_mallctl(name, &old, &oldlen, NULL, 0) == 0)
		print_value(name, t, &old, reply, len);
	size_t n = strlen(reply);
	if (n + 8 < len)
		snprintf(reply + n, len - n, " (was %s)", strchr(was, '=') + 1);
	return 0;
}
