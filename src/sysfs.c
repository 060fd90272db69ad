#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sysfs.h"
#include "tier.h"

TIER_STARTUP long tier_read_file(const char *path, char *buf, size_t len)
{
	return tier_read_file_at(AT_FDCWD, path, buf, len);
}

TIER_STARTUP long tier_read_file_at(int dirfd, const char *path, char *buf, size_t len)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	while (n + 1 < len) {
		ssize_t r = read(fd, buf + n, len - 1 - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return (long)n;
}

TIER_STARTUP int tier_read_long(const char *path, long long *out)
{
	return tier_read_long_at(AT_FDCWD, path, out);
}

TIER_STARTUP int tier_read_long_at(int dirfd, const char *path, long long *out)
{
	char buf[64], *end;
	if (tier_read_file_at(dirfd, path, buf, sizeof(buf)) <= 0)
		return -1;
	errno = 0;
	long long v = strtoll(buf, &end, 0);
	if (errno || end == buf)
		return -1;
	*out = v;
	return 0;
}

TIER_STARTUP long long tier_digits(const char *s, const char **end)
{
	long long v = 0;
	const char *c = s;
	for (; *c >= '0' && *c <= '9' && v < (1LL << 56); c++)
		v = v * 10 + (*c - '0');
	*end = c;
	return c == s ? -1 : v;
}

TIER_STARTUP const char *tier_blanks(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* "Node <id> <key> <kB>": the key (up to its blank) and the number. */
TIER_STARTUP static bool meminfo_line(const char *l, const char **key, size_t *klen, unsigned long long *kb)
{
	const char *c;
	if (strncmp(l, "Node", 4) || tier_digits(tier_blanks(l + 4), &c) < 0)
		return false;
	*key = tier_blanks(c);
	for (c = *key; *c && *c != ' ' && *c != '\t' && *c != '\n'; c++)
		;
	*klen = (size_t)(c - *key);
	long long v = tier_digits(tier_blanks(c), &c);
	*kb = (unsigned long long)v;
	return v >= 0;
}

TIER_STARTUP bool tier_meminfo_parse(const char *text, size_t *total, size_t *free)
{
	bool got_free = false, got_total = false;
	*total = *free = 0;
	/* MemTotal and MemFree are the first lines: stop once both are read */
	for (const char *l = text; !(got_free && got_total) && l && *l;
	     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		unsigned long long kb;
		const char *key;
		size_t klen;
		if (!meminfo_line(l, &key, &klen, &kb))
			continue;
		if (klen == 9 && !strncmp(key, "MemTotal:", 9))
			*total = (size_t)kb << 10, got_total = true;
		else if (klen == 8 && !strncmp(key, "MemFree:", 8))
			*free = (size_t)kb << 10, got_free = true;
	}
	return got_free;
}

int tier_write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = strlen(s);
	ssize_t w = write(fd, s, len);
	int e = w < 0 ? errno : 0;
	close(fd);
	if (w < 0)
		return -e;
	return (size_t)w == len ? 0 : -EIO;
}

/* getdents64 directly: opendir() would malloc its DIR. */
TIER_STARTUP int tier_dir_each(const char *path, int (*fn)(const char *name, void *arg), void *arg)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int ret = tier_dir_fd_each(fd, fn, arg);
	close(fd);
	return ret;
}

TIER_STARTUP int tier_dir_fd_each(int fd, int (*fn)(const char *name, void *arg), void *arg)
{
	char buf[4096] __attribute__((aligned(8)));
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (n <= 0)
			return 0;
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			off += d->d_reclen;
			if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
				continue;
			int ret = fn(d->d_name, arg);
			if (ret)
				return ret;
		}
	}
}

unsigned long long tier_proc_start_time(long pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (tier_read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	char *p = strrchr(buf, ')'); /* comm may hold spaces and ')' */
	if (!p)
		return 0;
	/* field 22; p is at the end of field 2 */
	int field = 2;
	for (; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	return strtoull(p, NULL, 10);
}

unsigned long long tier_pidns(long pid)
{
	char path[64];
	struct stat st;
	if (pid)
		snprintf(path, sizeof(path), "/proc/%ld/ns/pid", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/pid");
	return stat(path, &st) == 0 ? (unsigned long long)st.st_ino : 0;
}
