/* Reading and writing small kernel files (sysfs, procfs) without stdio or
 * malloc, so that it is safe before and inside the allocator. */
#ifndef TIER_SYSFS_H
#define TIER_SYSFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Read a whole file into buf (NUL-terminated, trailing newline stripped).
 * Returns the length, or -1 (errno set). */
long tier_read_file(const char *path, char *buf, size_t len);
/* A process's start time (field 22 of /proc/PID/stat, clock ticks since
 * boot): with the pid, it names the process even after pid reuse.  0 when
 * unreadable. */
unsigned long long tier_proc_start_time(long pid);
/* The pid namespace of process pid (0: this process), as the inode number
 * of /proc/PID/ns/pid, which is the same seen from any namespace; 0 when
 * it cannot be read.  Channels and ledger slots carry it, so that a pid is
 * only ever judged within its own namespace. */
unsigned long long tier_pidns(long pid);
/* Read one integer; returns 0 on success. */
int tier_read_long(const char *path, long long *out);
/* The same, path relative to an open directory: many small files under
 * one deep directory cost one path walk each, from there. */
long tier_read_file_at(int dirfd, const char *path, char *buf, size_t len);
int tier_read_long_at(int dirfd, const char *path, long long *out);
/* Leading decimal digits of s (at least one), or -1; *end past them.
 * tier_blanks: s past its blanks and tabs. */
long long tier_digits(const char *s, const char **end);
const char *tier_blanks(const char *s);
/* A node's meminfo text ("Node 0 MemTotal:  755000 kB" lines): MemTotal
 * and MemFree in bytes (0 where a line is missing).  False without a
 * MemFree line that carries a number. */
bool tier_meminfo_parse(const char *text, size_t *total, size_t *free);
/* Write a string to a file; returns 0 or -errno. */
int tier_write_file(const char *path, const char *s);
/* Call fn(name, arg) for each entry of a directory but "." and "..";
 * stops when fn returns non-zero and returns that value; -1 if unreadable. */
int tier_dir_each(const char *path, int (*fn)(const char *name, void *arg), void *arg);
/* The same over an open directory (read from its current position). */
int tier_dir_fd_each(int fd, int (*fn)(const char *name, void *arg), void *arg);

#endif
