#ifndef TIER_STATS_H
#define TIER_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "../include/tiermalloc.h"

extern int tier_stats_fd;

/* The CXL hot-list counters (struct tier_cxl_stats), named once for the
 * stats and for tier_mallctl (stats.heat.cxl.<name>). */
extern const size_t tier_stats_cxl_count;
const char *tier_stats_cxl_name(size_t i);
uint64_t tier_stats_cxl_counter(size_t i);

#endif
