// C++ operator new/delete through tiermalloc: every form resolves to the
// library, memory is ours, failures throw std::bad_alloc or return nullptr,
// and the new_handler is honoured.
#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "../tap.h"
#include "tiermalloc.h"

static bool ours(const void *p)
{
	if (tier_pin(p, 1))
		return false;
	return tier_unpin(p, 1) == 0;
}

static bool from_tiermalloc(void *fn)
{
	Dl_info info;
	return dladdr(fn, &info) && info.dli_fname && strstr(info.dli_fname, "libtiermalloc");
}

struct alignas(256) Wide {
	char c[300];
};

static int handler_calls;
static void handler()
{
	handler_calls++;
	std::set_new_handler(nullptr); // give up on the next failure
}

static volatile size_t huge = SIZE_MAX / 4;

int main(int argc, char **argv)
{
	(void)argc;
	/* these check the hooks: on a one-tier host they are off by default */
	tap_rerun_with(argv, "TIERMALLOC_CONF", "always_hook:true");
	void *(*op_new)(size_t) = &::operator new;
	void (*op_del)(void *) = &::operator delete;
	void *(*op_new_al)(size_t, std::align_val_t) = &::operator new;
	ok(from_tiermalloc((void *)op_new) && from_tiermalloc((void *)op_del) &&
		   from_tiermalloc((void *)op_new_al),
	   "operator new, delete and aligned new resolve to libtiermalloc");

	int *a = new int[1000];
	a[999] = 7;
	ok(ours(a), "new[] memory is ours");
	delete[] a;

	std::vector<std::string> v;
	for (int i = 0; i < 10000; i++)
		v.push_back(std::string(100, 'x') + std::to_string(i));
	ok(v[9999].size() == 104 && ours(v.data()) && ours(v[5000].data()),
	   "std::vector<std::string> lives in our memory");
	v.clear();
	v.shrink_to_fit();

	Wide *w = new Wide;
	ok(reinterpret_cast<uintptr_t>(w) % 256 == 0 && ours(w), "aligned new (alignas 256)");
	delete w;
	Wide *wa = new Wide[3];
	ok(reinterpret_cast<uintptr_t>(wa) % 256 == 0, "aligned new[]");
	delete[] wa;

	bool threw = false;
	try {
		char *p = new char[huge];
		p[0] = 1;
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	ok(threw, "an impossible new throws std::bad_alloc");
	ok(new (std::nothrow) char[huge] == nullptr, "nothrow new returns nullptr");
	ok(::operator new(huge, std::align_val_t(64), std::nothrow) == nullptr,
	   "nothrow aligned new returns nullptr");

	std::set_new_handler(handler);
	threw = false;
	try {
		(void)::operator new(huge);
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	ok(threw && handler_calls == 1, "the new_handler runs, then bad_alloc (%d call)", handler_calls);

	void *z1 = ::operator new(0), *z2 = ::operator new(0);
	ok(z1 && z2 && z1 != z2, "operator new(0) gives unique pointers");
	::operator delete(z1, size_t(0));
	::operator delete(z2);
	void *s = ::operator new(5000);
	::operator delete(s, size_t(5000)); // sized delete
	void *al = ::operator new(100, std::align_val_t(4096));
	ok(reinterpret_cast<uintptr_t>(al) % 4096 == 0, "operator new(100, align 4096)");
	::operator delete(al, size_t(100), std::align_val_t(4096));

	size_t bad = 1, len = sizeof(bad);
	tier_mallctl("debug.check", &bad, &len, nullptr, 0);
	ok(bad == 0, "registry exact after sized and aligned deletes");
	return done();
}
