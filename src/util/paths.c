/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The real filesystem paths (paths.h). */
#include "paths.h"

void hc_paths_default(struct hc_paths *p)
{
	*p = (struct hc_paths){
	    .proc = "/proc",
	    .thp = "/sys/kernel/mm/transparent_hugepage",
	    .mountinfo = "/proc/self/mountinfo",
	    .kpageflags = "/proc/kpageflags",
	    .self_pagemap = "/proc/self/pagemap",
	};
}
