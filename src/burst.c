#include "burst.h"

void tier_burst_init(struct tier_burst *b, uint64_t now_ns)
{
	*b = (struct tier_burst){.bank_ms = TIER_BURST_BANK_MS, .last_ns = now_ns};
}

double tier_burst_step(struct tier_burst *b, uint64_t now_ns, bool gain, double base, double burst,
		       bool *started)
{
	*started = false;
	double dt = now_ns > b->last_ns ? (double)(now_ns - b->last_ns) / 1e6 : 0;
	b->last_ns = now_ns;
	/* the first burst runs (tracking started knowing nothing): paid by
	 * its own allowance, its time is burst_ms */
	bool first = b->active && b->bursts == 1;
	if (b->active) {
		if (!first)
			b->bank_ms -= dt;
		b->burst_ms += dt;
	} else {
		b->bank_ms += dt * TIER_BURST_EARN;
	}
	if (b->bank_ms > TIER_BURST_BANK_MS)
		b->bank_ms = TIER_BURST_BANK_MS;
	if (burst <= base) { /* bursts off (bg_cpu_burst 0) or no larger */
		b->active = false;
		return base;
	}
	/* a new burst needs some bank (an empty bank refilling would otherwise
	 * start a burst of one period every few periods); a running one is
	 * extended while the gain lasts and the bank holds */
	if (!b->active) {
		if (gain && b->bank_ms < TIER_BURST_START_MS)
			b->held_ns = now_ns + (uint64_t)(TIER_BURST_HOLD_MS * 1e6);
		bool held = !gain && b->held_ns && now_ns < b->held_ns;
		if ((gain || held) && b->bank_ms >= TIER_BURST_START_MS) {
			b->active = *started = true;
			b->until_ns = now_ns + (uint64_t)(TIER_BURST_MS * 1e6);
			b->bursts++;
			b->held += held;
			b->held_ns = 0;
		}
	} else {
		if (gain)
			b->until_ns = now_ns + (uint64_t)(TIER_BURST_MS * 1e6);
		if (b->bank_ms <= 0 || now_ns >= b->until_ns || (first && b->burst_ms >= TIER_BURST_BANK_MS))
			b->active = false;
	}
	return b->active ? burst : base;
}
