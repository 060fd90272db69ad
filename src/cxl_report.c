/* CXL hot-list records: parsing and the combination rule (pure). */
#include <string.h>

#include "cxl_report.h"

/* Next space-separated word of [*p, end): its start and length. */
static size_t word(const char **p, const char *end, const char **w)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
	*w = *p;
	while (*p < end && **p != ' ' && **p != '\t')
		(*p)++;
	return (size_t)(*p - *w);
}

static bool is(const char *w, size_t n, const char *lit)
{
	return n == strlen(lit) && !memcmp(w, lit, n);
}

/* Digits only, no sign, no overflow; hex with an optional 0x. */
static bool num(const char *w, size_t n, int base, uint64_t *out)
{
	if (base == 16 && n > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X'))
		w += 2, n -= 2;
	if (n == 0 || n > 20)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned d;
		char c = w[i];
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return false;
		if (v > (UINT64_MAX - d) / (uint64_t)base)
			return false;
		v = v * (uint64_t)base + d;
	}
	*out = v;
	return true;
}

enum tier_cxl_line tier_cxl_parse_line(const char *line, size_t len, int *version,
                                       struct tier_cxl_rec *rec)
{
	const char *p = line, *end = line + len, *w[6];
	size_t n[6];
	int nw = 0;
	if (len && end[-1] == '\r')
		end--;
	for (; nw < 6; nw++)
		if (!(n[nw] = word(&p, end, &w[nw])))
			break;
	if (nw == 0 || w[0][0] == '#')
		return TIER_CXL_SKIP;
	if (word(&p, end, &w[5]))
		return TIER_CXL_MALFORMED; /* more words than any line has */
	if (is(w[0], n[0], TIER_CXL_HEADER)) {
		uint64_t v;
		if (nw != 2 || n[1] < 2 || w[1][0] != 'v' || !num(w[1] + 1, n[1] - 1, 10, &v))
			return TIER_CXL_MALFORMED;
		*version = v == TIER_CXL_VERSION ? TIER_CXL_VERSION : 0;
		return *version ? TIER_CXL_HDR : TIER_CXL_BADVER;
	}
	memset(rec, 0, sizeof(*rec));
	int a; /* index of the address word */
	if (is(w[0], n[0], "hpa") && nw == 4) {
		rec->kind = TIER_CXL_HPA;
		a = 1;
	} else if (is(w[0], n[0], "dpa") && nw == 5) {
		rec->kind = TIER_CXL_DPA;
		if (n[1] >= sizeof(rec->memdev))
			return TIER_CXL_MALFORMED;
		memcpy(rec->memdev, w[1], n[1]);
		a = 2;
	} else {
		return TIER_CXL_MALFORMED;
	}
	if (!num(w[a], n[a], 16, &rec->addr) || !num(w[a + 1], n[a + 1], 10, &rec->unit) ||
	    !num(w[a + 2], n[a + 2], 10, &rec->count))
		return TIER_CXL_MALFORMED;
	if (*version != TIER_CXL_VERSION)
		return TIER_CXL_BADVER;
	if (rec->unit < TIER_CXL_UNIT_MIN || rec->unit > TIER_CXL_UNIT_MAX || (rec->unit & (rec->unit - 1)) ||
	    rec->addr & (rec->unit - 1) || rec->addr >= TIER_CXL_ADDR_LIMIT ||
	    rec->addr + rec->unit > TIER_CXL_ADDR_LIMIT || rec->count == 0)
		return TIER_CXL_RANGE;
	return TIER_CXL_REC;
}

uint64_t tier_cxl_dpa_to_hpa_offset(uint64_t off, unsigned ways, uint64_t gran, unsigned pos)
{
	return ((off / gran) * ways + pos) * gran + off % gran;
}

static uint64_t le(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

enum tier_cxl_arith tier_cxl_cedt_arith(const unsigned char *cedt, size_t len, uint64_t base, uint64_t size)
{
	/* ACPI header (36 bytes: "CEDT", u32 length, ...), then subtables:
	 * u8 type, u8 reserved, u16 length.  CFMWS (type 1): u64 base at 8,
	 * u64 size at 16, u8 encoded ways at 24, u8 arithmetic at 25. */
	if (!cedt || len < 36 || memcmp(cedt, "CEDT", 4))
		return TIER_CXL_ARITH_UNKNOWN;
	uint64_t total = le(cedt + 4, 4);
	if (total < len)
		len = (size_t)total;
	for (size_t off = 36; off + 4 <= len;) {
		const unsigned char *t = cedt + off;
		size_t tl = (size_t)le(t + 2, 2);
		if (tl < 4 || off + tl > len)
			return TIER_CXL_ARITH_UNKNOWN;
		if (t[0] == 1 && tl >= 36 && le(t + 8, 8) == base && le(t + 16, 8) == size)
			return t[25] == 0 ? TIER_CXL_ARITH_MODULO : t[25] == 1 ? TIER_CXL_ARITH_XOR
									   : TIER_CXL_ARITH_UNKNOWN;
		off += tl;
	}
	return TIER_CXL_ARITH_UNKNOWN;
}

bool tier_cxl_interleave_ok(unsigned root_ways, enum tier_cxl_arith a)
{
	return root_ways <= 1 || a == TIER_CXL_ARITH_MODULO;
}

uint32_t tier_cxl_weight(uint64_t count, bool others_running, bool on_slow, float other_rate,
                         uint32_t unit_weight)
{
	uint64_t c = count > TIER_CXL_COUNT_CAP ? TIER_CXL_COUNT_CAP : count;
	uint32_t w = (uint32_t)c * unit_weight;
	if (!others_running)
		return w;
	if (!on_slow || !(other_rate > 0.0f))
		return 0;
	float cap = other_rate * (float)unit_weight;
	return (float)w > cap ? (uint32_t)cap : w;
}
