/* SPDX-License-Identifier: GPL-2.0-or-later */
/* service: the long-running daemon — sd-event loop, signals, sd_notify,
 * watchdog, reload, metrics, and the khugepaged hand-over. */
#pragma once
#include <stdbool.h>

#include "paths.h"

/* Runs until SIGTERM/SIGINT. config_path is the main file; paths are the
 * files the daemon opens (paths.h). Returns the process exit status. */
int service_run(const char *config_path, const struct hc_paths *paths);
