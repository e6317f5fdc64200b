/* khugepaged: hand over from the kernel's khugepaged, and give it back.
 *
 *   keep: touch nothing.
 *   idle: scan_sleep_millisecs = UINT_MAX, pages_to_scan = 1 — khugepaged
 *         stops scanning; THP at page-fault time is unchanged.
 *   off:  PMD-size THP "never": hugepages-2048kB/enabled where per-size
 *         controls exist, and the top-level enabled (which sizes set to
 *         "inherit" follow). The khugepaged thread exits; MADV_COLLAPSE still
 *         works, so hugecollapsed is the only source of PMD THPs.
 *
 * Every value written is recorded first and restored by khugepaged_restore()
 * (on exit, SIGTERM, reload to another mode, or a failed start). The sysfs
 * directory is HC_SYSFS_THP when set (tests), else
 * /sys/kernel/mm/transparent_hugepage. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "config.h"

#define KHUGEPAGED_MAX_SAVED 4

struct khugepaged_saved {
	enum khugepaged_mode mode;
	size_t n;
	struct {
		char file[64]; /* relative to the sysfs directory */
		char value[32];
	} saved[KHUGEPAGED_MAX_SAVED];
};

/* Applies mode, recording what it changes into s (which must start zeroed
 * or restored). On failure restores what it had already written, and
 * returns -errno with err saying which file failed and why. */
int khugepaged_apply(enum khugepaged_mode mode, struct khugepaged_saved *s, char *err, size_t errlen);

/* Writes back every recorded value, logging each; leaves s empty (keep).
 * Returns 0 or the first -errno. */
int khugepaged_restore(struct khugepaged_saved *s);

/* Logs khugepaged's state (enabled, scan knobs, full_scans, pages_collapsed)
 * and warns when it is still actively collapsing alongside us. */
void khugepaged_log_state(enum khugepaged_mode mode);

/* The value a knob had before the daemon first changed it, or NULL when the
 * daemon has not changed it. file is relative to the sysfs directory, e.g.
 * "enabled", "hugepages-2048kB/enabled". */
const char *khugepaged_original(const struct khugepaged_saved *s, const char *file);

/* The THP sysfs directory: HC_SYSFS_THP when set, else
 * /sys/kernel/mm/transparent_hugepage. */
const char *khugepaged_sysfs_dir(void);

/* Extracts the [selected] word of a sysfs choice file ("always [madvise]
 * never" → "madvise"). Returns 0 or -EINVAL. Pure. */
int sysfs_selected(const char *text, char *out, size_t outlen);
