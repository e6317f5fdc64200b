/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Logging: one call site API for stderr and the journal.
 *
 * Every macro below records its caller's file, line and function: in the
 * journal they are CODE_FILE=, CODE_LINE= and CODE_FUNC= of the call, not of
 * log.c. A line goes to a sink: by default a native journal entry when
 * stderr is connected to the journal (JOURNAL_STREAM matches stderr), so
 * that the structured fields below can be queried, else one line on stderr;
 * tests install their own (log_set_sink). Debug lines are dropped unless
 * log_set_verbose(true). Never fails, never blocks on a full pipe for long
 * (stderr is line-buffered). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <syslog.h>

/* MESSAGE_ID= of the daemon's life-cycle events (sd-id128, as
 * `systemd-id128 new` makes them), documented in hugecollapsed(8), JOURNAL:
 * journalctl MESSAGE_ID=... finds them whatever the text says. */
#define HC_MSGID_START    "2090787b62c44c32868819164d1098bf" /* started, with its configuration */
#define HC_MSGID_RELOAD   "b95f8208538340599384bdb6f237473d" /* a reload: HUGECOLLAPSED_RELOAD=ok|failed */
#define HC_MSGID_BACKOFF  "d0eb80b0c02f4beca2d2784f6850044b" /* a process backs off after ENOMEM */
#define HC_MSGID_STOP     "f73c7eb69f674fc0b831ad0ca250cc9d" /* asked to stop (SIGTERM/SIGINT) */
#define HC_MSGID_PRESSURE "b67e963d78da4a4b99efd7e1bf43aad5" /* collapsing paused for host memory pressure */
#define HC_MSGID_PASS     "5692c92062134328adaa942f95896018" /* the one line of a pass */

/* What a sink receives: the formatted message and where it came from. */
struct log_record {
	int prio; /* LOG_ERR … LOG_DEBUG */
	const char *message;
	const char *code_file; /* the caller's __FILE__, from "src/" on */
	unsigned code_line;
	const char *code_func;
	const char *message_id;    /* 32 hex digits, or NULL */
	pid_t pid;                 /* HUGECOLLAPSED_PID=, if > 0 */
	const char *cgroup;        /* HUGECOLLAPSED_CGROUP=, or NULL */
	const char *result;        /* HUGECOLLAPSED_RESULT=, or NULL */
	const char *const *fields; /* more "KEY=value" journal fields */
	size_t nfields;
};
typedef void (*log_sink_fn)(const struct log_record *r, void *ctx);

void log_init(void);
void log_set_verbose(bool verbose);
bool log_is_verbose(void);
/* NULL puts the default sink (journal or stderr) back. */
void log_set_sink(log_sink_fn sink, void *ctx);

/* The journal fields of r, "KEY=value" each, into out[max] (each of at most
 * LOG_FIELD_MAX bytes, cut there): MESSAGE, PRIORITY, SYSLOG_IDENTIFIER,
 * CODE_FILE, CODE_LINE, CODE_FUNC, then MESSAGE_ID and the process fields
 * where set, then r->fields. Returns how many. Pure. */
#define LOG_FIELD_MAX  1100
#define LOG_FIELDS_MAX 16
size_t log_journal_fields(const struct log_record *r, char (*out)[LOG_FIELD_MAX], size_t max);

/* The one entry point; use the macros. */
void log_at(const char *file, unsigned line, const char *func, int prio, const char *message_id, pid_t pid,
	    const char *cgroup, const char *result, const char *const *fields, size_t nfields, const char *fmt, ...)
    __attribute__((format(printf, 11, 12)));

/* prio is a syslog priority (LOG_ERR … LOG_DEBUG). */
#define log_msg(prio, ...) log_at(__FILE__, __LINE__, __func__, prio, NULL, 0, NULL, NULL, NULL, 0, __VA_ARGS__)
/* With a MESSAGE_ID (HC_MSGID_*). */
#define log_id(prio, id, ...) log_at(__FILE__, __LINE__, __func__, prio, id, 0, NULL, NULL, NULL, 0, __VA_ARGS__)
/* With a MESSAGE_ID and n more "KEY=value" fields. */
#define log_fields(prio, id, fields, n, ...)                                                                           \
	log_at(__FILE__, __LINE__, __func__, prio, id, 0, NULL, NULL, fields, n, __VA_ARGS__)
/* Attaches HUGECOLLAPSED_PID=, CGROUP= and RESULT= fields when logging to
 * the journal. pid <= 0, cgroup NULL or result NULL leave that field out. */
#define log_proc(prio, pid, cgroup, result, ...)                                                                       \
	log_at(__FILE__, __LINE__, __func__, prio, NULL, pid, cgroup, result, NULL, 0, __VA_ARGS__)
#define log_proc_id(prio, id, pid, cgroup, result, ...)                                                                \
	log_at(__FILE__, __LINE__, __func__, prio, id, pid, cgroup, result, NULL, 0, __VA_ARGS__)

#define log_err(...)   log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARNING, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
