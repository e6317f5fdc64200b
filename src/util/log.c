/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Logging to stderr or, when stderr is the journal, natively to journald. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
/* CODE_FILE= and friends are the caller's (log_at's arguments): without
 * this, sd_journal_sendv() would add log.c's own. */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

static bool verbose;
static bool to_journal;
static log_sink_fn sink;
static void *sink_ctx;

/* JOURNAL_STREAM is "DEV:INODE" of the stream systemd connected; it only
 * counts if stderr is still that stream (a child may have redirected it). */
void log_init(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	/* A malformed value just does not match: sscanf's lack of errors is fine. */
	// NOLINTNEXTLINE(cert-err34-c)
	to_journal = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
		     (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_set_verbose(bool v)
{
	verbose = v;
}

bool log_is_verbose(void)
{
	return verbose;
}

void log_set_sink(log_sink_fn fn, void *ctx)
{
	sink = fn;
	sink_ctx = ctx;
}

/* "src/collapse/dispatch.c", not the build's absolute path to it. */
static const char *short_file(const char *file)
{
	const char *s = file ? strstr(file, "/src/") : NULL;

	if (!file)
		return "?";
	for (const char *n = s; n; n = strstr(n + 1, "/src/"))
		s = n;
	return s ? s + 1 : file;
}

size_t log_journal_fields(const struct log_record *r, char (*out)[LOG_FIELD_MAX], size_t max)
{
	size_t n = 0;

#define FIELD(...)                                                                                                     \
	do {                                                                                                           \
		if (n < max)                                                                                           \
			snprintf(out[n++], LOG_FIELD_MAX, __VA_ARGS__);                                                \
	} while (0)
	FIELD("MESSAGE=%s", r->message);
	FIELD("PRIORITY=%d", r->prio);
	FIELD("SYSLOG_IDENTIFIER=hugecollapsed");
	FIELD("CODE_FILE=%s", r->code_file ? r->code_file : "?");
	FIELD("CODE_LINE=%u", r->code_line);
	FIELD("CODE_FUNC=%s", r->code_func ? r->code_func : "?");
	if (r->message_id)
		FIELD("MESSAGE_ID=%s", r->message_id);
	if (r->pid > 0)
		FIELD("HUGECOLLAPSED_PID=%d", (int)r->pid);
	if (r->cgroup)
		FIELD("HUGECOLLAPSED_CGROUP=%s", r->cgroup);
	if (r->result)
		FIELD("HUGECOLLAPSED_RESULT=%s", r->result);
	for (size_t i = 0; i < r->nfields; i++)
		if (r->fields[i] && strchr(r->fields[i], '=') && r->fields[i][0] != '=')
			FIELD("%s", r->fields[i]);
#undef FIELD
	return n;
}

static void default_sink(const struct log_record *r)
{
	char f[LOG_FIELDS_MAX][LOG_FIELD_MAX];
	struct iovec iov[LOG_FIELDS_MAX];
	size_t n;

	if (!to_journal) {
		fprintf(stderr, "hugecollapsed: %s\n", r->message);
		return;
	}
	n = log_journal_fields(r, f, LOG_FIELDS_MAX);
	for (size_t i = 0; i < n; i++)
		iov[i] = (struct iovec){.iov_base = f[i], .iov_len = strlen(f[i])};
	sd_journal_sendv(iov, (int)n);
}

void log_at(const char *file, unsigned line, const char *func, int prio, const char *message_id, pid_t pid,
	    const char *cgroup, const char *result, const char *const *fields, size_t nfields, const char *fmt, ...)
{
	struct log_record r = {.prio = prio,
			       .code_file = short_file(file),
			       .code_line = line,
			       .code_func = func,
			       .message_id = message_id,
			       .pid = pid,
			       .cgroup = cgroup,
			       .result = result,
			       .fields = fields,
			       .nfields = nfields};
	char text[1024];
	va_list ap;

	if (prio >= LOG_DEBUG && !verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	r.message = text;
	if (sink)
		sink(&r, sink_ctx);
	else
		default_sink(&r);
}
