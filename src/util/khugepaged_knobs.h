/* SPDX-License-Identifier: GPL-2.0-or-later */
/* khugepaged_knobs: the THP sysfs knobs the daemon changes (khugepaged.h
 * says when and why), and the record of the values they had before, which
 * khugepaged.c keeps, khugepaged_state.c stores and the THP policy
 * (thp_policy.h) reads to judge VMAs as the kernel would without us. Pure. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h" /* enum khugepaged_mode */

/* A knob, and the modes that set it to ours. */
#define KHUGEPAGED_MODE_BIT(m) (1u << (m))
struct khugepaged_knob {
	const char *file; /* relative to the THP sysfs directory */
	const char *ours;
	unsigned modes; /* KHUGEPAGED_MODE_BIT() of the modes that set it */
	bool optional;  /* absent on kernels without per-size THP controls */
};

/* In the order the modes write them. */
extern const struct khugepaged_knob khugepaged_knobs[];
extern const size_t khugepaged_nknobs;

/* The knob of file, or NULL if the daemon never writes that file. */
const struct khugepaged_knob *khugepaged_knob_of(const char *file);

#define KHUGEPAGED_MAX_SAVED 4

struct khugepaged_saved {
	enum khugepaged_mode mode;
	size_t n;
	struct {
		char file[64]; /* relative to the sysfs directory */
		char value[32];
	} saved[KHUGEPAGED_MAX_SAVED];
	/* Where the record is kept across crashes; "" keeps it in memory only.
	 * Set with khugepaged_init(). */
	char state_file[PATH_MAX];
	bool on_disk;          /* state_file exists: written or adopted, not removed yet */
	int lock_fd;           /* holds state_file's lock while the record is ours; -1 */
	const char *sysfs_dir; /* the THP sysfs directory the knobs are in */
	/* Test seam: writes value to the knob file (relative to the sysfs
	 * directory); returns 0 or -errno. NULL = the real write. */
	int (*write_knob)(const char *file, const char *value, void *arg);
	void *write_arg;
};

/* The value a knob had before the daemon first changed it (from the record,
 * which survives restarts), or NULL when the daemon has not changed it.
 * file is relative to the THP sysfs directory ("enabled",
 * "hugepages-2048kB/enabled"). */
const char *khugepaged_original(const struct khugepaged_saved *s, const char *file);

/* The value the daemon writes to file (relative to the THP sysfs
 * directory), or NULL if it never writes that file. */
const char *khugepaged_knob_target(const char *file);
