/* PAGEMAP_SCAN and userfaultfd async write-protect (Linux 6.7).  Debian
 * 12's kernel headers (6.1) predate them, so the ABI is declared here when
 * the system headers lack it. */
#ifndef TIER_PAGEMAP_SCAN_H
#define TIER_PAGEMAP_SCAN_H

#include <linux/fs.h>
#include <linux/types.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>

#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif

#ifndef PAGEMAP_SCAN
#define PM_SCAN_WP_MATCHING (1 << 0)
#define PM_SCAN_CHECK_WPASYNC (1 << 1)
#define PAGE_IS_WPALLOWED (1 << 0)
#define PAGE_IS_WRITTEN (1 << 1)
#define PAGE_IS_FILE (1 << 2)
#define PAGE_IS_PRESENT (1 << 3)

struct page_region {
	__u64 start;
	__u64 end;
	__u64 categories;
};

struct pm_scan_arg {
	__u64 size;
	__u64 flags;
	__u64 start;
	__u64 end;
	__u64 walk_end;
	__u64 vec;
	__u64 vec_len;
	__u64 max_pages;
	__u64 category_inverted;
	__u64 category_mask;
	__u64 category_anyof_mask;
	__u64 return_mask;
};

#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#endif
#ifndef PAGE_IS_HUGE
#define PAGE_IS_HUGE (1 << 6)
#endif
#ifndef PAGE_IS_SWAPPED
#define PAGE_IS_SWAPPED (1 << 4)
#endif

#endif
