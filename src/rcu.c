/* liburcu-bp on demand.  Only hooked processes (two tiers, advise, or
 * always_hook) publish and read the registry under RCU; the others never
 * take a read lock, yet a DT_NEEDED liburcu-bp cost every start a library
 * mapped and relocated, one more object in every symbol lookup's scope,
 * its constructor's two membarrier calls and five page faults (3% of
 * /bin/true's start under jemalloc).
 *
 * The urcu-bp names that <urcu-bp.h> maps rcu_read_lock() and friends to
 * are defined here (hidden: -fvisibility=hidden), so every caller in the
 * library binds to these, which forward to the real ones once dlopen'ed.
 * rcu_dereference and rcu_assign_pointer are inline (Makefile.am defines
 * URCU_INLINE_SMALL_FUNCTIONS).  Without liburcu-bp the read side and
 * synchronize_rcu do nothing: the boot then installs no hooks, and without
 * hooks nothing is ever removed from the registry under readers. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <urcu-bp.h>

#include "rcu.h"

/* The ABI this was built against (liburcu 0.12-0.14: soname 8). */
#define URCU_BP_SONAME "liburcu-bp.so.8"

static struct {
	void (*read_lock)(void);
	void (*read_unlock)(void);
	void (*synchronize)(void);
	void (*before_fork)(void);
	void (*after_parent)(void);
	void (*after_child)(void);
} fn;
static _Atomic int state; /* 0 not tried, 1 loaded, -1 not there */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static void *sym(void *h, const char *name, bool *ok)
{
	void *p = dlsym(h, name);
	*ok &= p != NULL;
	return p;
}

bool tier_rcu_load(void)
{
	int s = atomic_load_explicit(&state, memory_order_acquire);
	if (s)
		return s > 0;
	pthread_mutex_lock(&load_lock);
	if (!atomic_load_explicit(&state, memory_order_relaxed)) {
		void *h = dlopen(URCU_BP_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
		bool ok = h != NULL;
		if (h) {
			fn.read_lock = (void (*)(void))sym(h, "urcu_bp_read_lock", &ok);
			fn.read_unlock = (void (*)(void))sym(h, "urcu_bp_read_unlock", &ok);
			fn.synchronize = (void (*)(void))sym(h, "urcu_bp_synchronize_rcu", &ok);
			fn.before_fork = (void (*)(void))sym(h, "urcu_bp_before_fork", &ok);
			fn.after_parent = (void (*)(void))sym(h, "urcu_bp_after_fork_parent", &ok);
			fn.after_child = (void (*)(void))sym(h, "urcu_bp_after_fork_child", &ok);
		}
		atomic_store_explicit(&state, ok ? 1 : -1, memory_order_release);
	}
	pthread_mutex_unlock(&load_lock);
	return atomic_load_explicit(&state, memory_order_relaxed) > 0;
}

void urcu_bp_read_lock(void)
{
	if (tier_rcu_load())
		fn.read_lock();
}

void urcu_bp_read_unlock(void)
{
	if (atomic_load_explicit(&state, memory_order_acquire) > 0)
		fn.read_unlock();
}

void urcu_bp_synchronize_rcu(void)
{
	if (atomic_load_explicit(&state, memory_order_acquire) > 0)
		fn.synchronize();
}

/* fork: the prepare step runs after jemalloc's has taken its locks, so it
 * must not wait for a load (dlopen allocates); it notes whether the
 * library was there, and the other steps follow that note. */
static bool fork_loaded;

void urcu_bp_before_fork(void)
{
	fork_loaded = atomic_load_explicit(&state, memory_order_acquire) > 0;
	if (fork_loaded)
		fn.before_fork();
}

void urcu_bp_after_fork_parent(void)
{
	if (fork_loaded)
		fn.after_parent();
}

void urcu_bp_after_fork_child(void)
{
	if (fork_loaded)
		fn.after_child();
	/* a load another thread of the parent was making is nobody's here */
	pthread_mutex_init(&load_lock, NULL);
}
