/* kernel_features: what this kernel offers the daemon, found out at start.
 *
 *   process_madvise        Linux 5.10   collapsing another process at all
 *   MADV_COLLAPSE          Linux 6.1    the collapse itself: without it, refuse to start
 *   PAGEMAP_SCAN           Linux 6.7    page tables by ioctl (else pagemap reads)
 *   per-size THP knobs     Linux 6.8    hugepages-<size>kB/enabled (mTHP)
 *   except-advised prctl   Linux 6.18   PR_THP_DISABLE_EXCEPT_ADVISED; before it,
 *                                       /proc/PID/status THP_enabled is exact
 *   khugepaged mTHP        Linux 7.2    khugepaged collapses anonymous memory to
 *                                       the enabled mTHP orders too, which
 *                                       MADV_COLLAPSE (PMD only) cannot make
 *
 * Everything comes through struct kernel_probe: the THP sysfs directory,
 * the release string and one probe function, so that the fixtures of each
 * kernel generation (tests/fixtures/kernels/) drive the same code as the
 * real kernel. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

enum kernel_probe_what {
	KPROBE_PROCESS_MADVISE,
	KPROBE_MADV_COLLAPSE,
	KPROBE_PAGEMAP_SCAN,
	KPROBE_EXCEPT_ADVISED,
};

struct kernel_probe {
	const char *sysfs_thp; /* the THP sysfs directory */
	const char *release;   /* uname -r; NULL: uname(2) */
	/* 1: present, 0: absent, -errno: could not tell. NULL: the real one. */
	int (*probe)(enum kernel_probe_what what, void *arg);
	void *arg;
};

/* Bit n of an order mask stands for pages of 4 KiB << n (order n). */
#define KF_PMD_ORDER 9

struct kernel_features {
	char release[65];
	unsigned major, minor; /* 0.0 when the release does not parse */
	bool process_madvise, madv_collapse, pagemap_scan, per_size, except_advised;
	bool mthp_collapse;    /* khugepaged makes mTHPs: Linux 7.2 and later */
	uint32_t anon_orders;  /* per-size anonymous orders enabled (always, madvise, inherit of an enabled enabled) */
	uint32_t shmem_orders; /* per-size shmem orders not never; before 6.11, PMD where shmem_enabled allows */
};

/* The real probes: syscalls that change nothing (madvise of an empty range,
 * process_madvise of no range, an ioctl with no argument), and the prctl in
 * a short-lived child. */
int kernel_probe_real(enum kernel_probe_what what, void *arg);

/* Fills out from p. Returns 0; a probe that cannot tell counts as present
 * (the daemon then fails where it would have, with the kernel's errno). */
int kernel_features_detect(const struct kernel_probe *p, struct kernel_features *out);

/* "kernel 6.18.0: process_madvise yes, MADV_COLLAPSE yes, PAGEMAP_SCAN yes,
 * per-size THP yes, except-advised prctl yes, khugepaged mTHP collapse no,
 * THP sizes enabled: anonymous 64kB 2048kB, shmem none" (sizes: per-size
 * knobs, and on 6.8-6.10 shmem_enabled for the shmem PMD size; "-" without
 * per-size knobs). Pure. */
void kernel_features_describe(const struct kernel_features *f, char *buf, size_t len);

/* false, with why ("MADV_COLLAPSE needs Linux 6.1 or later (this is
 * 5.15.0)"), when the daemon cannot collapse on this kernel. Pure. */
bool kernel_features_usable(const struct kernel_features *f, char *why, size_t len);

/* The anonymous orders khugepaged would collapse to and the daemon cannot
 * make (all but PMD), lost when mode parks or stops khugepaged; 0 when none
 * are, or under keep. Pure. */
uint32_t kernel_mthp_lost(const struct kernel_features *f, enum khugepaged_mode mode);

/* "64kB 128kB" for an order mask. Pure. */
void kernel_orders_name(uint32_t orders, char *buf, size_t len);

/* Warns, naming them, about the mTHP sizes mode would lose (start, reload). */
void kernel_features_warn_mthp(const struct kernel_features *f, enum khugepaged_mode mode);

/* At start: detects the real kernel (THP sysfs dir sysfs_thp), logs the
 * one line (at debug level when quiet), warns about the mTHP orders mode
 * would lose, and returns 0, or -ENOTSUP (logged) when collapse is
 * impossible here. */
int kernel_features_start(const char *sysfs_thp, enum khugepaged_mode mode, bool quiet, struct kernel_features *out);
