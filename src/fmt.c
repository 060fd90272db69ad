/* A formatter for the few conversions start-up text needs.  libc's printf
 * code sits in pages that a program which never prints does not map; one
 * snprintf at start-up maps them (fault-around: 64 KiB at a time, about
 * 192 KiB of libc on glibc 2.36), which every process would pay. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fmt.h"
#include "tier.h"

struct out {
	char *buf;
	size_t len, n;
};

TIER_STARTUP static void put(struct out *o, char c)
{
	if (o->n + 1 < o->len)
		o->buf[o->n] = c;
	o->n++;
}

TIER_STARTUP static void put_u(struct out *o, unsigned long long v, unsigned base)
{
	char t[24];
	int k = 0;
	do
		t[k++] = "0123456789abcdef"[v % base];
	while ((v /= base) != 0);
	while (k)
		put(o, t[--k]);
}

TIER_STARTUP int tier_vfmt(char *buf, size_t len, const char *fmt, va_list ap)
{
	struct out o = {buf, len, 0};
	for (const char *f = fmt; *f; f++) {
		if (*f != '%') {
			put(&o, *f);
			continue;
		}
		int lng = 0; /* 1: l or z, 2: ll */
		f++;
		if (*f == 'z') {
			lng = 1, f++;
		} else {
			while (*f == 'l' && lng < 2)
				lng++, f++;
		}
		switch (*f) {
		case '%': put(&o, '%'); break;
		case 'c': put(&o, (char)va_arg(ap, int)); break;
		case 's': {
			const char *s = va_arg(ap, const char *);
			for (s = s ? s : "(null)"; *s; s++)
				put(&o, *s);
			break;
		}
		case 'd': {
			long long v = lng == 2 ? va_arg(ap, long long) : lng ? va_arg(ap, long) : va_arg(ap, int);
			if (v < 0)
				put(&o, '-');
			put_u(&o, v < 0 ? 0 - (unsigned long long)v : (unsigned long long)v, 10);
			break;
		}
		case 'u': case 'x': {
			unsigned long long v = lng == 2 ? va_arg(ap, unsigned long long)
				: lng ? va_arg(ap, unsigned long) : va_arg(ap, unsigned);
			put_u(&o, v, *f == 'x' ? 16 : 10);
			break;
		}
		default: /* not one of ours: the caller must use snprintf */
			if (len)
				buf[0] = '\0';
			return -1;
		}
	}
	if (len)
		buf[o.n < len ? o.n : len - 1] = '\0';
	return (int)o.n;
}

TIER_STARTUP int tier_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = tier_vfmt(buf, len, fmt, ap);
	va_end(ap);
	return r;
}
