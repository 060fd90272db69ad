/* recency: the last resort.  Memory just committed is memory about to be
 * used; the commit hook reports each newly committed page once (see
 * tier_place_commit), which is all this source needs to switch on. */
#include "heat.h"

static int rec_probe(char *why, size_t len)
{
	(void)why, (void)len;
	return 0;
}

static int rec_start(char *why, size_t len)
{
	(void)why, (void)len;
	atomic_store(&tier_heat_recency_on, true);
	return 0;
}

static void rec_stop(void)
{
	atomic_store(&tier_heat_recency_on, false);
}

const struct tier_heat_ops tier_heat_recency = {
	.name = "recency",
	.probe = rec_probe,
	.start = rec_start,
	.stop = rec_stop,
	.forget = rec_stop,
};
