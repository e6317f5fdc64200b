/* SPDX-License-Identifier: GPL-2.0-or-later */
/* exit_status: the daemon's exit statuses, documented in hugecollapsed(8)
 * (EXIT STATUS), for daemon.c (options, --once, --check-config, --status)
 * and service.c (the long-running service) alike. */
#pragma once
#include <sysexits.h>

enum exit_status {
	EXIT_OK = 0,
	EXIT_ERROR = 1, /* a runtime error, or no MADV_COLLAPSE (before 6.1) */
	EXIT_USAGE = 2,
	EXIT_PRIVILEGE = 4,
	/* A configuration that does not load: the unit's
	 * RestartPreventExitStatus= keeps systemd from restarting it forever. */
	EXIT_CONFIG = EX_CONFIG, /* 78 */
};
