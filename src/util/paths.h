/* SPDX-License-Identifier: GPL-2.0-or-later */
/* paths: every fixed filesystem path the daemon opens, in one struct.
 *
 * Why: a test points any of them at a fixture tree by filling its own
 * struct, and nothing in the daemon reads the environment to find them.
 * hc_paths_default() fills the real ones; the daemon passes one struct to
 * the engine and the service, which pass its fields down. The strings must
 * outlive every user (the defaults are literals). */
#pragma once
#include <stdbool.h>

struct hc_paths {
	/* PID directories, vmstat, meminfo, swaps, pressure/memory, zoneinfo,
	 * self/cgroup, self/mountinfo (tmpfs mounts), sys/kernel/random */
	const char *proc;
	const char *thp;          /* the THP sysfs directory (--sysfs-thp, for testing) */
	const char *mountinfo;    /* the daemon's own: its cgroup v1 memory and v2 mounts */
	const char *kpageflags;   /* the page flags behind PFNs (lazy-free pages) */
	const char *self_pagemap; /* the daemon's own: the PAGEMAP_SCAN and PFN probes */
	/* Not a path, but how one is read: true reads /proc/PID/pagemap with
	 * plain chunked reads, as on kernels before 6.7, even where the
	 * PAGEMAP_SCAN ioctl exists (--pagemap-read, for tests and benchmarks
	 * of that path). */
	bool pagemap_read;
};

/* The real paths, and the PAGEMAP_SCAN ioctl where the kernel has it. */
void hc_paths_default(struct hc_paths *p);
