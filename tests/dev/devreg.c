/* The interposed registration calls (preload/devreg.c), run under
 * LD_PRELOAD=libtiermalloc.so.  Built twice: tests/dev/devreg links the
 * stand-in device library (tests/dev/libfakedev.so) and checks that
 * exactly the registered ranges are pinned during registration and
 * unpinned after; tests/dev/devnone links nothing and checks that the
 * calls fail the way the APIs fail when no library is behind them, and
 * pin nothing.  Calls go through dlsym(RTLD_DEFAULT), as the program's
 * own calls would resolve: to tiermalloc's definitions first. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../preload/devabi.h"
#include "../tap.h"

static int (*ctl)(const char *, void *, size_t *, void *, size_t);
static int (*pin)(const void *, size_t), (*unpin)(const void *, size_t);
static struct ibv_mr *(*reg_mr)(struct ibv_pd *, void *, size_t, int);
static struct ibv_mr *(*reg_iova)(struct ibv_pd *, void *, size_t, uint64_t, int);
static struct ibv_mr *(*reg_iova2)(struct ibv_pd *, void *, size_t, uint64_t, unsigned);
static int (*dereg)(struct ibv_mr *);
static int (*rereg)(struct ibv_mr *, int, struct ibv_pd *, void *, size_t, int);
static int (*host_reg)(void *, size_t, unsigned), (*host_unreg)(void *);
static long (*pinned_seen)(void);

/* A counter; a failed read is a failing line of its own (and reads 0). */
static uint64_t stat(const char *name)
{
	uint64_t v = 0;
	size_t len = sizeof(v);
	if (ctl(name, &v, &len, NULL, 0) || len != sizeof(v)) {
		ok(0, "tier_mallctl reads %s", name);
		return 0;
	}
	return v;
}
static long pinned(void) { return (long)stat("stats.device.pinned_blocks"); }

/* The set of 2 MiB blocks the registered ranges cover, as a count. */
#define MAXB 256
static uintptr_t blocks[MAXB];
static int nblocks;
static void cover(const void *p, size_t len)
{
	for (uintptr_t b = (uintptr_t)p >> 21; b <= ((uintptr_t)p + len - 1) >> 21; b++) {
		int dup = 0;
		for (int i = 0; i < nblocks; i++)
			dup |= blocks[i] == b;
		if (!dup && nblocks < MAXB)
			blocks[nblocks++] = b;
	}
}
static long covered(void) { return nblocks; }
static void reset_cover(void) { nblocks = 0; }

#ifdef FAKEDEV
/* a direct reference, so that the linker keeps the library (--as-needed) */
int fakedev_calls(void);
#endif

#define SYM(v, name) (*(void **)&(v) = dlsym(RTLD_DEFAULT, name))

/* A thread registering and deregistering in a loop while the main thread
 * forks: the children register too, and must not find the table's lock
 * held by a thread they do not have. */
static _Atomic int churning = 1;
static void *reg_churn(void *arg)
{
	char *buf = arg;
	while (churning) {
		struct ibv_mr *m = reg_mr(NULL, buf, 6 << 20, 1);
		if (m)
			dereg(m);
	}
	return NULL;
}

static int fork_while_registering(char *buf, char *own, int forks)
{
	pthread_t th;
	pthread_create(&th, NULL, reg_churn, buf);
	int good = 0;
	for (int i = 0; i < forks; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			alarm(3); /* a deadlock ends as SIGALRM */
			struct ibv_mr *m = reg_mr(NULL, own, 1 << 20, 1);
			_exit(m && dereg(m) == 0 ? 0 : 1);
		}
		int st = -1;
		waitpid(pid, &st, 0);
		good += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	churning = 0;
	pthread_join(th, NULL);
	return good;
}

int main(int argc, char **argv)
{
	int fake = argc > 1 && !strcmp(argv[1], "fake");
	SYM(ctl, "tier_mallctl");
	SYM(pin, "tier_pin");
	SYM(unpin, "tier_unpin");
	if (!ok(ctl && pin && unpin, "tiermalloc is in the process")) {
		printf("1..%d\n", tap_n);
		return 1;
	}
	SYM(reg_mr, "ibv_reg_mr");
	SYM(reg_iova, "ibv_reg_mr_iova");
	SYM(reg_iova2, "ibv_reg_mr_iova2");
	SYM(dereg, "ibv_dereg_mr");
	SYM(rereg, "ibv_rereg_mr");
	SYM(host_reg, "cudaHostRegister");
	SYM(host_unreg, "cudaHostUnregister");
	SYM(pinned_seen, "fakedev_pinned_seen");
	ok(reg_mr && reg_iova && reg_iova2 && dereg && rereg && host_reg && host_unreg,
	   "tiermalloc defines the seven registration calls");
	ok(pinned() == 0, "nothing pinned at start (%ld)", pinned());

	size_t la = 6 << 20, lb = 3 << 20, lc = 1 << 20;
	char *a = malloc(la), *b = malloc(lb), *c = malloc(lc);
	memset(a, 1, la);
	memset(b, 2, lb);
	memset(c, 3, lc);

	if (!fake) {
		errno = 0;
		struct ibv_mr *mr = reg_mr(NULL, a, la, 1);
		ok(mr == NULL && errno == ENOSYS, "without libibverbs: ibv_reg_mr gives NULL, errno ENOSYS (%d)", errno);
		errno = 0;
		mr = reg_iova2(NULL, a, la, 0, 1);
		ok(mr == NULL && errno == ENOSYS, "ibv_reg_mr_iova2 likewise");
		ok(dereg((struct ibv_mr *)a) == ENOSYS, "ibv_dereg_mr gives ENOSYS");
		ok(host_reg(a, la, 0) == 999 && host_unreg(a) == 999,
		   "without the CUDA runtime: cudaHostRegister/Unregister give cudaErrorUnknown (999)");
		ok(pinned() == 0, "nothing was pinned (%ld)", pinned());
		ok(stat("stats.device.reg_missing") >= 5 && stat("stats.device.reg_calls") == 0,
		   "counted as calls with no library (%llu), not as registrations (%llu)",
		   (unsigned long long)stat("stats.device.reg_missing"),
		   (unsigned long long)stat("stats.device.reg_calls"));
		printf("1..%d\n", tap_n);
		return tap_failed != 0;
	}
#ifdef FAKEDEV
	ok(fakedev_calls() == 0, "the stand-in device library is linked, not called yet");
#endif
	if (!ok(pinned_seen != NULL, "the stand-in device library is in the process")) {
		printf("1..%d\n", tap_n);
		return 1;
	}

	/* ibv_reg_mr: the stand-in goes through ibv_reg_mr_iova2 inside */
	struct ibv_mr *ma = reg_mr(NULL, a, la, 1);
	cover(a, la);
	ok(ma && ma->addr == a, "ibv_reg_mr registered a");
	ok(pinned_seen() == covered(), "a's %ld blocks were pinned when the device mapped it (saw %ld)",
	   covered(), pinned_seen());
	ok(pinned() == covered(), "and stay pinned (%ld)", pinned());
	ok(stat("stats.device.reg_calls") == 1 && stat("stats.device.reg_pinned") == 1,
	   "one registration seen, not two (the library's inner ibv_reg_mr_iova2 is not pinned again)");
	/* pinned once: one unpin succeeds, a second finds it unpinned */
	int u1 = unpin(a, la), u2 = unpin(a, la), p1 = pin(a, la);
	ok(u1 == 0 && u2 == EINVAL && p1 == 0, "a is pinned exactly once (unpin %d, again %d; re-pinned %d)", u1, u2, p1);

	struct ibv_mr *mb = reg_iova2(NULL, b, lb, 0x1000, 1);
	cover(b, lb);
	ok(mb && pinned() == covered() && pinned_seen() == covered(),
	   "ibv_reg_mr_iova2: b pinned too, before the device saw it (%ld of %ld)", pinned(), covered());
	ok(host_reg(c, lc, 0) == 0, "cudaHostRegister(c)");
	cover(c, lc);
	ok(pinned() == covered() && pinned_seen() == covered(), "c pinned too (%ld blocks, %ld expected)",
	   pinned(), covered());

	/* foreign memory passes through, unpinned */
	char *f = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mf = reg_mr(NULL, f, 4 << 20, 1);
	ok(mf && mf->addr == f && pinned() == covered(), "a foreign range is registered and not pinned");
	ok(stat("stats.device.reg_foreign") == 1, "counted foreign (%llu)",
	   (unsigned long long)stat("stats.device.reg_foreign"));
	ok(dereg(mf) == 0 && pinned() == covered(), "and deregistered, pins unchanged");

	/* a registration the device refuses leaves nothing pinned */
	char *d = malloc(2 << 20);
	memset(d, 4, 2 << 20);
	ok(reg_mr(NULL, d, 2 << 20, 0xdead) == NULL && pinned() == covered(),
	   "a failed ibv_reg_mr leaves no pin (%ld)", pinned());
	ok(host_reg(d, 2 << 20, 0xdead) == 712 && pinned() == covered(),
	   "a failed cudaHostRegister leaves no pin, its error comes through");

	/* deregistration: pinned while the device lets go, unpinned after */
	ok(dereg(ma) == 0, "ibv_dereg_mr(a)");
	long during = pinned_seen();
	reset_cover();
	cover(b, lb);
	cover(c, lc);
	ok(pinned() == covered(), "a unpinned, b and c still pinned (%ld, %ld expected)", pinned(), covered());
	ok(during > pinned(), "a was still pinned while the device let go (%ld > %ld)", during, pinned());

	/* ibv_reg_mr_iova, then a re-registration that moves it to d */
	struct ibv_mr *mi = reg_iova(NULL, a, 1 << 20, 0, 1);
	ok(mi && stat("stats.device.reg_live") == 3, "ibv_reg_mr_iova registered (live %llu)",
	   (unsigned long long)stat("stats.device.reg_live"));
	ok(rereg(mi, 1, NULL, d, 2 << 20, 1) == 0, "ibv_rereg_mr with a new translation");
	cover(d, 2 << 20);
	ok(pinned() == covered(), "the old range unpinned, the new one pinned (%ld, %ld expected)", pinned(),
	   covered());

	ok(dereg(mb) == 0 && host_unreg(c) == 0 && dereg(mi) == 0, "the rest deregistered");
	ok(pinned() == 0 && stat("stats.device.reg_live") == 0, "nothing pinned now (%ld), nothing live",
	   pinned());
	ok(unpin(b, lb) == EINVAL, "b's pin is gone (tier_unpin refuses)");
	int good = fork_while_registering(a, b, 100);
	ok(good == 100, "100 forks while another thread registers: %d children registered and exited (none found the table locked)", good);
	ok(pinned() == 0, "nothing pinned after the churn (%ld)", pinned());
	free(a);
	free(b);
	free(c);
	free(d);
	printf("1..%d\n", tap_n);
	return tap_failed != 0;
}
