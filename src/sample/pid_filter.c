/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which processes a pass looks at. */
#include "pid_filter.h"

bool pid_filter_match(const struct pid_filter *f, pid_t pid)
{
	if (pid == f->self)
		return false;
	if (!f->npids)
		return true;
	for (size_t i = 0; i < f->npids; i++)
		if (f->pids[i] == pid)
			return true;
	return false;
}
