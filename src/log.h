/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Logging: one call site API for stderr and the journal.
 *
 * log_msg() writes one line. When stderr is connected to the journal
 * (JOURNAL_STREAM matches stderr) it sends a native journal entry instead, so
 * that the structured fields below can be queried. Debug lines are dropped
 * unless log_set_verbose(true). Never fails, never blocks on a full pipe for
 * long (stderr is line-buffered). */
#pragma once
#include <stdbool.h>
#include <sys/types.h>
#include <syslog.h>

void log_init(void);
void log_set_verbose(bool verbose);
bool log_is_verbose(void);

/* prio is a syslog priority (LOG_ERR … LOG_DEBUG). */
void log_msg(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Like log_msg(), but also attaches HUGECOLLAPSED_PID=, CGROUP= and RESULT=
 * fields when logging to the journal. pid <= 0, cgroup NULL or result NULL
 * leave that field out. */
void log_proc(int prio, pid_t pid, const char *cgroup, const char *result, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#define log_err(...)   log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARNING, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
