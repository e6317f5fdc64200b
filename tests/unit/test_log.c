/* SPDX-License-Identifier: GPL-2.0-or-later */
/* log.c through an injected sink: the caller's file, line and function (not
 * log.c's), MESSAGE_IDs, the process and extra fields, debug lines dropped
 * unless verbose; the journal fields built from a record (what journald
 * gets, checked without systemd), hostile values included; and every
 * MESSAGE_ID documented in hugecollapsed(8). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "log.h"

static struct {
	int n;
	int prio;
	char message[1100], file[256], func[64], id[40], cgroup[64], result[32], field0[64];
	unsigned line;
	pid_t pid;
	size_t nfields;
} got;

static void copy(char *dst, size_t n, const char *s)
{
	snprintf(dst, n, "%s", s ? s : "");
}

static void capture(const struct log_record *r, void *ctx)
{
	assert_ptr_equal(ctx, &got);
	got.n++;
	got.prio = r->prio;
	copy(got.message, sizeof(got.message), r->message);
	copy(got.file, sizeof(got.file), r->code_file);
	copy(got.func, sizeof(got.func), r->code_func);
	copy(got.id, sizeof(got.id), r->message_id);
	copy(got.cgroup, sizeof(got.cgroup), r->cgroup);
	copy(got.result, sizeof(got.result), r->result);
	copy(got.field0, sizeof(got.field0), r->nfields ? r->fields[0] : NULL);
	got.line = r->code_line;
	got.pid = r->pid;
	got.nfields = r->nfields;
}

static int setup(void **state)
{
	(void)state;
	memset(&got, 0, sizeof(got));
	log_set_verbose(false);
	log_set_sink(capture, &got);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	log_set_sink(NULL, NULL);
	log_set_verbose(false);
	return 0;
}

static void assert_caller(const char *func, unsigned line)
{
	size_t n = strlen(got.file), want = strlen("test_log.c");

	if (n < want || strcmp(got.file + n - want, "test_log.c") != 0)
		fail_msg("CODE_FILE %s, want this test file", got.file);
	assert_string_equal(got.func, func);
	assert_int_equal(got.line, line);
}

static void test_caller_location(void **state)
{
	unsigned line;

	(void)state;
	log_info("hello %d", 42), line = __LINE__;
	assert_int_equal(got.n, 1);
	assert_int_equal(got.prio, LOG_INFO);
	assert_string_equal(got.message, "hello 42");
	assert_caller(__func__, line);
	assert_string_equal(got.id, "");
	log_proc(LOG_WARNING, 1234, "/a/b", "enomem", "pid %d", 1234), line = __LINE__;
	assert_int_equal(got.n, 2);
	assert_caller(__func__, line);
	assert_int_equal(got.pid, 1234);
	assert_string_equal(got.cgroup, "/a/b");
	assert_string_equal(got.result, "enomem");
}

static void test_message_ids_and_fields(void **state)
{
	static const char *const f[] = {"HUGECOLLAPSED_PASS=7"};
	unsigned line;

	(void)state;
	log_id(LOG_INFO, HC_MSGID_START, "started"), line = __LINE__;
	assert_string_equal(got.id, HC_MSGID_START);
	assert_caller(__func__, line);
	log_fields(LOG_INFO, HC_MSGID_PASS, f, 1, "pass 7"), line = __LINE__;
	assert_string_equal(got.id, HC_MSGID_PASS);
	assert_int_equal(got.nfields, 1);
	assert_string_equal(got.field0, "HUGECOLLAPSED_PASS=7");
	assert_caller(__func__, line);
	log_proc_id(LOG_WARNING, HC_MSGID_BACKOFF, 9, "/c", "enomem", "backing off");
	assert_string_equal(got.id, HC_MSGID_BACKOFF);
	assert_int_equal(got.pid, 9);
}

static void test_debug_only_when_verbose(void **state)
{
	(void)state;
	log_debug("quiet");
	log_proc(LOG_DEBUG, 1, "/", "collapsed", "per-process line");
	assert_int_equal(got.n, 0);
	log_set_verbose(true);
	log_debug("loud");
	assert_int_equal(got.n, 1);
	assert_int_equal(got.prio, LOG_DEBUG);
	assert_string_equal(got.message, "loud");
}

static void test_journal_fields(void **state)
{
	static char out[LOG_FIELDS_MAX][LOG_FIELD_MAX];
	static const char *const extra[] = {"HUGECOLLAPSED_PASS=3", "no equals sign", "=empty key", NULL};
	char longmsg[3000];
	struct log_record r = {.prio = LOG_WARNING,
			       .message = "m",
			       .code_file = "src/dispatch.c",
			       .code_line = 271,
			       .code_func = "collapse_process",
			       .message_id = HC_MSGID_BACKOFF,
			       .pid = 77,
			       .cgroup = "/x",
			       .result = "enomem",
			       .fields = extra,
			       .nfields = 4};
	size_t n;

	(void)state;
	n = log_journal_fields(&r, out, LOG_FIELDS_MAX);
	assert_int_equal(n, 11); /* 6 always, id, 3 process fields, 1 valid extra */
	assert_string_equal(out[0], "MESSAGE=m");
	assert_string_equal(out[1], "PRIORITY=4");
	assert_string_equal(out[2], "SYSLOG_IDENTIFIER=hugecollapsed");
	assert_string_equal(out[3], "CODE_FILE=src/dispatch.c");
	assert_string_equal(out[4], "CODE_LINE=271");
	assert_string_equal(out[5], "CODE_FUNC=collapse_process");
	assert_string_equal(out[6], "MESSAGE_ID=" HC_MSGID_BACKOFF);
	assert_string_equal(out[7], "HUGECOLLAPSED_PID=77");
	assert_string_equal(out[8], "HUGECOLLAPSED_CGROUP=/x");
	assert_string_equal(out[9], "HUGECOLLAPSED_RESULT=enomem");
	assert_string_equal(out[10], "HUGECOLLAPSED_PASS=3");
	/* Bounded: max fields, and a long message cut at LOG_FIELD_MAX. */
	assert_int_equal(log_journal_fields(&r, out, 3), 3);
	memset(longmsg, 'a', sizeof(longmsg) - 1);
	longmsg[sizeof(longmsg) - 1] = 0;
	r = (struct log_record){.prio = LOG_INFO, .message = longmsg};
	n = log_journal_fields(&r, out, LOG_FIELDS_MAX);
	assert_int_equal(n, 6);
	assert_int_equal(strlen(out[0]), LOG_FIELD_MAX - 1);
	assert_string_equal(out[3], "CODE_FILE=?");
	assert_string_equal(out[5], "CODE_FUNC=?");
}

/* The build's absolute path is cut to "src/…" (a tree under a directory
 * named src keeps its last src/). */
static void test_short_file(void **state)
{
	(void)state;
	log_at("/home/x/src/hugecollapsed/src/engine.c", 5, "f", LOG_INFO, NULL, 0, NULL, NULL, NULL, 0, "x");
	assert_string_equal(got.file, "src/engine.c");
	log_at("engine.c", 5, "f", LOG_INFO, NULL, 0, NULL, NULL, NULL, 0, "x");
	assert_string_equal(got.file, "engine.c");
	log_at(NULL, 5, NULL, LOG_INFO, NULL, 0, NULL, NULL, NULL, 0, "x");
	assert_string_equal(got.file, "?");
}

static void test_ids_documented(void **state)
{
	static const char *const ids[] = {HC_MSGID_START, HC_MSGID_RELOAD,   HC_MSGID_BACKOFF,
					  HC_MSGID_STOP,  HC_MSGID_PRESSURE, HC_MSGID_PASS};
	FILE *f = fopen(HC_FIXTURES "/../../man/hugecollapsed.8", "r");
	static char man[1 << 20];
	size_t n;

	(void)state;
	assert_non_null(f);
	n = fread(man, 1, sizeof(man) - 1, f);
	fclose(f);
	man[n] = 0;
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		assert_int_equal(strlen(ids[i]), 32);
		if (!strstr(man, ids[i]))
			fail_msg("MESSAGE_ID %s is not in man/hugecollapsed.8", ids[i]);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(ids[i], ids[j]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_caller_location, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_message_ids_and_fields, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_debug_only_when_verbose, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_journal_fields, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_short_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ids_documented, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
