/* CXL hot-list records: the versioned text format that feeds the cxl heat
 * source (heat_cxl.c), parsed and judged here without touching anything,
 * so that the rules can be unit-tested.
 *
 *   tiermalloc-cxl-hotlist v1
 *   hpa <hex host physical address> <unit bytes> <count>
 *   dpa <memdev> <hex device physical address> <unit bytes> <count>
 *   # comment
 *
 * The header comes first in every batch and stream; records before a
 * valid header, or after a header of another version, are rejected. */
#ifndef TIER_CXL_REPORT_H
#define TIER_CXL_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIER_CXL_HEADER "tiermalloc-cxl-hotlist"
#define TIER_CXL_VERSION 1
/* Units: 64 B (a cache line) to 1 GiB, powers of two. */
#define TIER_CXL_UNIT_MIN 64ull
#define TIER_CXL_UNIT_MAX (1ull << 30)
/* Physical addresses stop at 2^52 (x86-64 and arm64 architectural limit). */
#define TIER_CXL_ADDR_LIMIT (1ull << 52)
/* A count above this is treated as this: one record cannot buy more. */
#define TIER_CXL_COUNT_CAP 64u

enum tier_cxl_kind { TIER_CXL_HPA, TIER_CXL_DPA };

struct tier_cxl_rec {
	enum tier_cxl_kind kind;
	char memdev[32]; /* dpa records: "mem0" */
	uint64_t addr;   /* hpa or dpa */
	uint64_t unit;   /* bytes, power of two */
	uint64_t count;  /* accesses in the device's epoch, >= 1 */
};

/* What one line is. */
enum tier_cxl_line {
	TIER_CXL_REC,       /* a record: *rec filled */
	TIER_CXL_SKIP,      /* blank or comment */
	TIER_CXL_HDR,       /* a valid header: *version set */
	TIER_CXL_MALFORMED, /* not a record or header of this format */
	TIER_CXL_BADVER,    /* a header of a version we do not read (*version = 0), or a
			     * record while no valid header is in effect */
	TIER_CXL_RANGE,     /* well formed, but unit, address or count out of range */
};

/* Parse one line (without its newline).  *version is the stream's header
 * state: 0 until a valid header, TIER_CXL_VERSION after. */
enum tier_cxl_line tier_cxl_parse_line(const char *line, size_t len, int *version,
                                       struct tier_cxl_rec *rec);

/* Modulo interleave: the offset in its region (host physical) of offset
 * off in a device's decoded range, the device being at position pos of
 * ways, interleaved every gran bytes. */
uint64_t tier_cxl_dpa_to_hpa_offset(uint64_t off, unsigned ways, uint64_t gran, unsigned pos);

/* Interleave arithmetic.  A region interleaved across host bridges takes
 * its host-bridge arithmetic from the platform's fixed memory window (ACPI
 * CEDT, CFMWS "Interleave Arithmetic": 0 modulo, 1 modulo-XOR); the
 * kernel's sysfs does not show it (6.12), so it is read from the table.
 * Below the root (switches, devices) decoding is always modulo. */
enum tier_cxl_arith { TIER_CXL_ARITH_UNKNOWN = -1, TIER_CXL_ARITH_MODULO = 0, TIER_CXL_ARITH_XOR = 1 };
/* The arithmetic of the window [base, base+size) among the CFMWS entries
 * of a CEDT table (len bytes, as in /sys/firmware/acpi/tables/CEDT);
 * UNKNOWN when the table is malformed, has no such window, or names an
 * arithmetic we do not know. */
enum tier_cxl_arith tier_cxl_cedt_arith(const unsigned char *cedt, size_t len, uint64_t base, uint64_t size);
/* Whether tier_cxl_dpa_to_hpa_offset translates a region whose root
 * decoder interleaves root_ways host bridges with arithmetic a: one way
 * needs no arithmetic; more need modulo (XOR, or not knowing, is refused
 * rather than mistranslated). */
bool tier_cxl_interleave_ok(unsigned root_ways, enum tier_cxl_arith a);

/* The combination rule: the weight (TIER_HEAT_UNIT units per page, 16 =
 * one access per period) that a record of `count` adds to a block.
 *   cxl alone: count (capped at TIER_CXL_COUNT_CAP) accesses;
 *   with other sources running: nothing unless the block is on a slow
 *   tier, and never more than what the other sources see there now
 *   (other_rate, accesses per page per period): a hot list can at most
 *   double heat the others already see, so a lossy or wrong list alone
 *   cannot make a page they see cold look hot. */
uint32_t tier_cxl_weight(uint64_t count, bool others_running, bool on_slow, float other_rate,
                         uint32_t unit_weight);

#endif
