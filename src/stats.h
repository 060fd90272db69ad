#ifndef TIER_STATS_H
#define TIER_STATS_H

#include "../include/tiermalloc.h"

extern int tier_stats_fd;

#endif
