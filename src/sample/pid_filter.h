/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pid_filter: the processes a pass looks at (--pid), for the scanner and
 * the selection alike. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Which processes take part in a pass: never self (the daemon), and only
 * pids[] when npids > 0 (--pid). */
struct pid_filter {
	const pid_t *pids;
	size_t npids;
	pid_t self;
};

bool pid_filter_match(const struct pid_filter *f, pid_t pid);
