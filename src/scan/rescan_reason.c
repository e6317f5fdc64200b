/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Why a process is read again; the order is documented in rescan_reason.h. */
#include "rescan_reason.h"

#include <stddef.h>

bool rescan_facts_changed(const struct rescan_facts *f)
{
	return !f->scanned || f->maps_changed || f->faults_changed || f->rss_changed;
}

enum rescan_reason rescan_reason(const struct rescan_facts *f)
{
	bool changed = rescan_facts_changed(f);

	if (f->force)
		return RESCAN_FORCED;
	if (f->unlimited)
		return RESCAN_UNLIMITED;
	if (f->resuming)
		return RESCAN_RESUME;
	/* A grown or shrunk address space may hold a block now, however
	 * small the RSS: only that takes a scanned small process further. */
	if (f->small && (!f->scanned || !f->maps_changed))
		return RESCAN_SKIP_SMALL;
	if (f->full_due)
		return RESCAN_FULL_DUE;
	if (f->policy_recheck_due)
		return RESCAN_POLICY_RECHECK;
	if (f->access_sample_due)
		return RESCAN_ACCESS_SAMPLE;
	if (f->cold_recheck_due)
		return RESCAN_COLD_RECHECK;
	if (f->advised)
		return RESCAN_ADVISED;
	if (changed && !f->closed) {
		if (!f->scanned)
			return RESCAN_NEW;
		if (f->maps_changed)
			return RESCAN_MAPS;
		if (f->faults_changed)
			return RESCAN_FAULTS;
		return RESCAN_RSS;
	}
	if (!f->policy_known)
		return RESCAN_NO_POLICY;
	return changed ? RESCAN_SKIP_CLOSED : RESCAN_SKIP_UNCHANGED;
}

bool rescan_reason_reads(enum rescan_reason r)
{
	return r >= RESCAN_FORCED && r < RESCAN_NR_REASONS;
}

const char *rescan_reason_name(enum rescan_reason r)
{
	static const char *const names[RESCAN_NR_REASONS] = {
	    [RESCAN_SKIP_SMALL] = "skip_small",
	    [RESCAN_SKIP_UNCHANGED] = "skip_unchanged",
	    [RESCAN_SKIP_CLOSED] = "skip_closed",
	    [RESCAN_FORCED] = "forced",
	    [RESCAN_UNLIMITED] = "unlimited",
	    [RESCAN_RESUME] = "resume",
	    [RESCAN_FULL_DUE] = "full_due",
	    [RESCAN_POLICY_RECHECK] = "policy_recheck",
	    [RESCAN_ACCESS_SAMPLE] = "access_sample",
	    [RESCAN_COLD_RECHECK] = "cold_recheck",
	    [RESCAN_ADVISED] = "advised",
	    [RESCAN_NEW] = "new",
	    [RESCAN_MAPS] = "maps",
	    [RESCAN_FAULTS] = "faults",
	    [RESCAN_RSS] = "rss",
	    [RESCAN_NO_POLICY] = "no_policy",
	};

	if ((unsigned)r >= RESCAN_NR_REASONS || !names[r])
		return "?";
	return names[r];
}
