/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Logging to stderr or, when stderr is the journal, natively to journald. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

static bool verbose;
static bool to_journal;

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

static void log_v(int prio, pid_t pid, const char *cgroup, const char *result, const char *fmt, va_list ap)
{
	char text[1024];

	if (prio >= LOG_DEBUG && !verbose)
		return;
	vsnprintf(text, sizeof(text), fmt, ap);
	if (to_journal) {
		char pidf[48] = "", cgf[600] = "", resf[80] = "";

		if (pid > 0)
			snprintf(pidf, sizeof(pidf), "HUGECOLLAPSED_PID=%d", (int)pid);
		if (cgroup)
			snprintf(cgf, sizeof(cgf), "HUGECOLLAPSED_CGROUP=%s", cgroup);
		if (result)
			snprintf(resf, sizeof(resf), "HUGECOLLAPSED_RESULT=%s", result);
		/* Empty strings are not valid journal fields; pass "HUGECOLLAPSED=1"
		 * as a harmless placeholder instead. */
		sd_journal_send("MESSAGE=%s", text, "PRIORITY=%d", prio, "SYSLOG_IDENTIFIER=hugecollapsed", "%s",
				pidf[0] ? pidf : "HUGECOLLAPSED=1", "%s", cgf[0] ? cgf : "HUGECOLLAPSED=1", "%s",
				resf[0] ? resf : "HUGECOLLAPSED=1", NULL);
		return;
	}
	fprintf(stderr, "hugecollapsed: %s\n", text);
}

void log_msg(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_v(prio, 0, NULL, NULL, fmt, ap);
	va_end(ap);
}

void log_proc(int prio, pid_t pid, const char *cgroup, const char *result, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_v(prio, pid, cgroup, result, fmt, ap);
	va_end(ap);
}
