/* prctl_iter: the record parser and lookup on hostile buffers, and the
 * real iterator on this kernel: a child's prctl(PR_SET_THP_DISABLE) modes,
 * set, inherited through fork and exec, and cleared again. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "prctl_iter.h"

#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1 << 1)
#endif

static void test_parse(void **state)
{
	(void)state;
	struct prctl_iter_rec in[] = {{.tgid = 30, .mode = 0},
				      {.tgid = 7, .mode = PRCTL_ITER_EXCEPT_ADVISED},
				      {.tgid = 12, .mode = PRCTL_ITER_COMPLETELY}};
	struct prctl_table t = {0};
	enum thp_prctl m = THP_PRCTL_UNKNOWN;

	assert_int_equal(parse_prctl_iter_buf(in, sizeof(in), &t), 0);
	assert_int_equal(t.n, 3);
	assert_true(prctl_table_find(&t, 7, &m));
	assert_int_equal(m, THP_PRCTL_EXCEPT_ADVISED);
	assert_true(prctl_table_find(&t, 12, &m));
	assert_int_equal(m, THP_PRCTL_COMPLETELY);
	assert_true(prctl_table_find(&t, 30, &m));
	assert_int_equal(m, THP_PRCTL_NONE);
	/* Not in the walk: started after it. The caller keeps the safe rule. */
	assert_false(prctl_table_find(&t, 8, &m));
	assert_false(prctl_table_find(&t, 0, &m));
	assert_false(prctl_table_find(&t, -1, &m));

	/* A torn record, unknown bits, pid 0: nothing is believed. */
	assert_int_equal(parse_prctl_iter_buf(in, sizeof(in) - 1, &t), -EINVAL);
	in[1].mode = 4;
	assert_int_equal(parse_prctl_iter_buf(in, sizeof(in), &t), -EINVAL);
	assert_int_equal(t.n, 0);
	assert_false(prctl_table_find(&t, 30, &m));
	in[1].mode = 0;
	in[2].tgid = 0;
	assert_int_equal(parse_prctl_iter_buf(in, sizeof(in), &t), -EINVAL);
	in[2].tgid = 0x80000000u;
	assert_int_equal(parse_prctl_iter_buf(in, sizeof(in), &t), -EINVAL);
	/* An empty walk is valid. */
	assert_int_equal(parse_prctl_iter_buf(NULL, 0, &t), 0);
	assert_int_equal(t.n, 0);
	prctl_table_free(&t);
}

/* A child that sets mode (0: clears) and, if exec, execs sleep. */
static pid_t child(unsigned long mode, int exec, int ready[2])
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	if (mode && prctl(PR_SET_THP_DISABLE, 1, mode == 2 ? PR_THP_DISABLE_EXCEPT_ADVISED : 0, 0, 0))
		_exit(2);
	if (!mode && prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0))
		_exit(2);
	if (exec) {
		/* Inherited through fork and exec: the grandchild reports. */
		pid_t g = fork();

		if (g == 0) {
			close(ready[0]);
			(void)!write(ready[1], "x", 1);
			execlp("sleep", "sleep", "30", (char *)NULL);
			_exit(3);
		}
		waitpid(g, NULL, 0);
		_exit(0);
	}
	(void)!write(ready[1], "x", 1);
	pause();
	_exit(0);
}

static void expect(struct prctl_iter *it, pid_t pid, enum thp_prctl want)
{
	enum thp_prctl m = THP_PRCTL_UNKNOWN;
	struct prctl_table t = {0};

	assert_int_equal(prctl_iter_read_pid(it, pid, &m), 0);
	assert_int_equal(m, want);
	assert_int_equal(prctl_iter_read(it, &t), 0);
	m = THP_PRCTL_UNKNOWN;
	assert_true(prctl_table_find(&t, pid, &m));
	assert_int_equal(m, want);
	prctl_table_free(&t);
}

static void test_kernel(void **state)
{
	(void)state;
	struct prctl_iter *it = NULL;
	int r = prctl_iter_open(&it), ready[2];
	char c;

	if (r == -ENOSYS || r == -EPERM)
		skip(); /* built without BPF, or not root: CI fails a skip */
	assert_int_equal(r, 0);
	expect(it, getpid(), THP_PRCTL_NONE);
	for (unsigned long mode = 0; mode <= 2; mode++) {
		pid_t pid;

		assert_int_equal(pipe(ready), 0);
		pid = child(mode, 0, ready);
		assert_true(pid > 0);
		assert_int_equal(read(ready[0], &c, 1), 1);
		expect(it, pid,
		       mode == 0   ? THP_PRCTL_NONE
		       : mode == 1 ? THP_PRCTL_COMPLETELY
				   : THP_PRCTL_EXCEPT_ADVISED);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(ready[0]);
		close(ready[1]);
	}
	/* A launcher sets except-advised, forks and execs: the program has it. */
	assert_int_equal(pipe(ready), 0);
	pid_t launcher = child(2, 1, ready);
	assert_int_equal(read(ready[0], &c, 1), 1);
	struct prctl_table t = {0};
	size_t found = 0;
	/* The exec may not be done yet: poll to a generous deadline. */
	for (int tries = 0; tries < 500 && !found; tries++, usleep(10000)) {
		assert_int_equal(prctl_iter_read(it, &t), 0);
		for (size_t i = 0; i < t.n; i++) {
			char path[64], comm[32] = "";
			FILE *f;

			snprintf(path, sizeof(path), "/proc/%u/stat", t.rec[i].tgid);
			f = fopen(path, "r");
			if (!f)
				continue;
			int ppid = 0;
			if (fscanf(f, "%*d (%31[^)]) %*c %d", comm, &ppid) == 2 && ppid == launcher &&
			    !strcmp(comm, "sleep")) {
				assert_int_equal(t.rec[i].mode, PRCTL_ITER_EXCEPT_ADVISED);
				found++;
			}
			fclose(f);
		}
	}
	assert_int_equal(found, 1);
	prctl_table_free(&t);
	kill(launcher, SIGKILL);
	waitpid(launcher, NULL, 0);
	close(ready[0]);
	close(ready[1]);
	/* A pid that is no process. */
	enum thp_prctl m;
	assert_int_equal(prctl_iter_read_pid(it, 0x3fffffff, &m), -ESRCH);
	prctl_iter_close(it);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_kernel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
