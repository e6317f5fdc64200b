/* SPDX-License-Identifier: GPL-2.0-or-later */
/* procs: parsers and readers over captured and hostile /proc fixtures, and
 * procs_sample() on the live system. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "paths.h"
#include "procfs.h"
#include "procs.h"
#include "stat_fds.h"
#include "units.h"

#define FIXTURES HC_FIXTURES "/proc"

/* Opens a fixture directory under a fixture proc root, as the daemon would
 * under paths->proc. */
static int open_fixture_dir(const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", FIXTURES, name);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	return fd;
}

static char buf[65536];

/* Reads hostile/<name> into buf; returns its length. */
static size_t load_hostile(const char *name)
{
	int dfd = open_fixture_dir("hostile");
	ssize_t n = read_small_file_at(dfd, name, buf, sizeof(buf));
	close(dfd);
	if (n < 0)
		fail_msg("read %s: %s", name, strerror((int)-n));
	return (size_t)n;
}

/* ---- stat ---- */

static void test_real_stat(void **state)
{
	(void)state;
	struct proc_sample s;
	int dfd = open_fixture_dir("real");

	assert_int_equal(read_proc_stat(dfd, &s), 0);
	close(dfd);
	assert_int_equal(s.pid, 13948);
	assert_string_equal(s.comm, "hc-fixture");
	assert_int_equal(s.minflt, 2156);
	assert_int_equal(s.majflt, 0);
	assert_int_equal(s.cpu_ticks, 7 + 1);
	assert_int_equal(s.start_ticks, 57057);
	assert_int_equal(s.vsize, 10928128);
	assert_int_equal(s.rss_pages, 2308);
}

/* execve() keeps PID and start time; the exec fingerprint must change with
 * the image's addresses (code, stack, data, brk, args, env) and nothing else. */
static void test_exec_fingerprint(void **state)
{
	(void)state;
	/* Fields 1-52 of a real 6.18 line; 26-28 and 45-51 are the addresses. */
	static const char a[] =
	    "42 (x) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 555 1000 50 18446744073709551615 "
	    "94000000000000 94000000100000 140720000000000 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 "
	    "94000000200000 94000000300000 94000000400000 140720000001000 140720000002000 140720000002000 "
	    "140720000003000 0\n";
	char b[sizeof(a)], c[sizeof(a)];
	struct proc_sample pa, pb, pc;

	memcpy(b, a, sizeof(a));
	memcpy(c, a, sizeof(a));
	b[strlen("42 (x) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 555 1000 50 18446744073709551615 9")] =
	    '5';                                            /* another start_code: a new image */
	c[strlen("42 (x) S 1 42 42 0 -1 4194560 1")] = '9'; /* another minflt: same image */
	assert_int_equal(parse_stat_buf(a, strlen(a), &pa), 0);
	assert_int_equal(parse_stat_buf(b, strlen(b), &pb), 0);
	assert_int_equal(parse_stat_buf(c, strlen(c), &pc), 0);
	assert_int_equal(pa.start_ticks, pb.start_ticks);
	assert_true(pa.exec_id != 0);
	assert_true(pa.exec_id != pb.exec_id);
	assert_true(pa.minflt != pc.minflt);
	assert_true(pa.exec_id == pc.exec_id);
}

static void test_comm_with_spaces_and_parens(void **state)
{
	(void)state;
	struct proc_sample s;
	int dfd = open_fixture_dir("comm_parens");

	assert_int_equal(read_proc_stat(dfd, &s), 0);
	close(dfd);
	assert_int_equal(s.pid, 13955);
	assert_string_equal(s.comm, "(a) b)");
	assert_int_equal(s.minflt, 2158);
	assert_int_equal(s.cpu_ticks, 12 + 1);
	assert_int_equal(s.start_ticks, 57072);
	assert_int_equal(s.rss_pages, 2329);
}

static void test_kthread_stat(void **state)
{
	(void)state;
	struct proc_sample s;
	int dfd = open_fixture_dir("kthread");

	assert_int_equal(read_proc_stat(dfd, &s), 0);
	close(dfd);
	assert_int_equal(s.pid, 2);
	assert_string_equal(s.comm, "kthreadd");
	assert_int_equal(s.vsize, 0);
	assert_int_equal(s.rss_pages, 0);
	assert_int_equal(s.start_ticks, 18);
}

static void test_hostile_stat_rejected(void **state)
{
	(void)state;
	static const char *const names[] = {
	    "stat_truncated", "stat_truncated_early", "stat_empty",
	    "stat_garbage",   "stat_no_close_paren",  "stat_bad_number",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct proc_sample s = {.pid = 77};
		size_t n = load_hostile(names[i]);
		if (parse_stat_buf(buf, n, &s) != -EINVAL)
			fail_msg("%s was accepted", names[i]);
		assert_int_equal(s.pid, 77); /* untouched on failure */
	}
}

static void test_long_comm_truncated(void **state)
{
	(void)state;
	struct proc_sample s;
	size_t n = load_hostile("stat_long_comm");

	assert_int_equal(parse_stat_buf(buf, n, &s), 0);
	assert_int_equal(strlen(s.comm), sizeof(s.comm) - 1);
	assert_int_equal(s.comm[0], 'c');
	assert_int_equal(s.minflt, 2156);
	assert_int_equal(s.rss_pages, 2308);
}

static void test_stat_inline_edge_cases(void **state)
{
	(void)state;
	struct proc_sample s;
	/* fields 3..24, then more */
	const char *tail = " R 1 2 3 4 -1 6 100 8 9 10 11 12 13 14 20 0 1 0 555 4096 3 18446744073709551615 0\n";
	char line[512];

	snprintf(line, sizeof(line), "5 ())%s", tail);
	assert_int_equal(parse_stat_buf(line, strlen(line), &s), 0);
	assert_string_equal(s.comm, ")");
	assert_int_equal(s.minflt, 100);
	assert_int_equal(s.majflt, 9);
	assert_int_equal(s.cpu_ticks, 11 + 12);
	assert_int_equal(s.start_ticks, 555);
	assert_int_equal(s.vsize, 4096);
	assert_int_equal(s.rss_pages, 3);

	snprintf(line, sizeof(line), "6 ( ) R S)%s", tail); /* looks like fields */
	assert_int_equal(parse_stat_buf(line, strlen(line), &s), 0);
	assert_string_equal(s.comm, " ) R S");
	assert_int_equal(s.pid, 6);

	snprintf(line, sizeof(line), "7 ()%s", tail); /* empty comm */
	assert_int_equal(parse_stat_buf(line, strlen(line), &s), 0);
	assert_string_equal(s.comm, "");

	/* The buffer need not be NUL-terminated: only len bytes count. */
	snprintf(line, sizeof(line), "8 (x)%s", tail);
	size_t full = strlen(line);
	assert_int_equal(parse_stat_buf(line, full - 1, &s), 0); /* no '\n' */
	assert_int_equal(parse_stat_buf(line, full - 25, &s), -EINVAL);

	/* Cut right after rss: rss may be incomplete. */
	snprintf(line, sizeof(line), "8 (x) R 1 2 3 4 -1 6 1 8 9 10 11 12 13 14 20 0 1 0 5 6 7\n");
	assert_int_equal(parse_stat_buf(line, strlen(line), &s), -EINVAL);
	snprintf(line, sizeof(line), "8 (x) R 1 2 3 4 -1 6 1 8 9 10 11 12 13 14 20 0 1 0 5 6 7 0");
	assert_int_equal(parse_stat_buf(line, strlen(line), &s), 0);
	assert_int_equal(s.rss_pages, 7);

	/* Lying pid, no space before '(', overflowing number. */
	snprintf(line, sizeof(line), "x (x)%s", tail);
	assert_int_equal(parse_stat_buf(line, strlen(line), &s), -EINVAL);
	snprintf(line, sizeof(line), "8(x)%s", tail);
	assert_int_equal(parse_stat_buf(line, strlen(line), &s), -EINVAL);
	snprintf(line, sizeof(line), "0 (x)%s", tail);
	assert_int_equal(parse_stat_buf(line, strlen(line), &s), -EINVAL);
	snprintf(line, sizeof(line), "8 (x) R 1 2 3 4 -1 6 99999999999999999999 8 9 10 11 12 13 14 20 0 1 0 5 6 7 0\n");
	assert_int_equal(parse_stat_buf(line, strlen(line), &s), -EINVAL);
	snprintf(line, sizeof(line), "8 (x) RR 1 2 3 4 -1 6 1 8 9 10 11 12 13 14 20 0 1 0 5 6 7 0\n");
	assert_int_equal(parse_stat_buf(line, strlen(line), &s), -EINVAL);
	snprintf(line, sizeof(line), "8 (x) R 1 2 3 4 -1 6 1 8 9 10 11 12 13 14 20 0 1 0 5 6  7 0\n");
	assert_int_equal(parse_stat_buf(line, strlen(line), &s), -EINVAL);
}

/* ---- cgroup ---- */

static void test_real_cgroup_hybrid(void **state)
{
	(void)state;
	char path[4096];
	int dfd = open_fixture_dir("real");

	/* v1 lines come first on this host; the 0:: line is last. */
	assert_int_equal(read_proc_cgroup(dfd, path, sizeof(path)), 0);
	close(dfd);
	assert_string_equal(path, "/");
}

/* read_proc_cgroup() over a scratch directory holding one "cgroup" file. */
static int read_cgroup_text(const char *text, char *path, size_t pathlen)
{
	char dir[] = "/tmp/hc_test_cgroup_XXXXXX";
	char file[64];
	int dfd, r;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/cgroup", dir);
	f = fopen(file, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	r = read_proc_cgroup(dfd, path, pathlen);
	close(dfd);
	unlink(file);
	rmdir(dir);
	return r;
}

/* Only "no v2 line at all" reads as the root; every other failure stays a
 * failure (the caller then collapses nothing in that process). */
static void test_read_cgroup_fails_closed(void **state)
{
	char path[4096];
	char *cut = malloc(8192);

	(void)state;
	assert_non_null(cut);
	/* cgroup v1 only: the memory hierarchy's path (issue 16, defect 8). */
	assert_int_equal(read_cgroup_text("4:memory:/a\n1:cpu:/\n", path, sizeof(path)), 0);
	assert_string_equal(path, "/a");
	assert_int_equal(read_cgroup_text("2:cpu:/b\n1:pids:/b\n", path, sizeof(path)), 0);
	assert_string_equal(path, "/");
	assert_int_equal(read_cgroup_text("0::/a/b\n", path, sizeof(path)), 0);
	assert_string_equal(path, "/a/b");
	assert_int_equal(read_cgroup_text("0::a\n", path, sizeof(path)), -EINVAL);
	assert_int_equal(read_cgroup_text("0::\n", path, sizeof(path)), -EINVAL);
	strcpy(cut, "0::/");
	memset(cut + 4, 'd', CGROUP_PATH_CUT - 1);
	strcpy(cut + 3 + CGROUP_PATH_CUT, "\n");
	assert_int_equal(read_cgroup_text(cut, path, sizeof(path)), -ENAMETOOLONG);
	free(cut);
}

static int parse_cgroup_fixture(const char *name, char *path, size_t pathlen)
{
	size_t n = load_hostile(name);
	return parse_cgroup_buf(buf, n, path, pathlen);
}

static void test_cgroup_variants(void **state)
{
	(void)state;
	char path[4096];

	assert_int_equal(parse_cgroup_fixture("cgroup_hybrid_v2_first", path, sizeof(path)), 0);
	assert_string_equal(path, "/system.slice/foo.service");
	assert_int_equal(parse_cgroup_fixture("cgroup_v2_only", path, sizeof(path)), 0);
	assert_string_equal(path, "/user.slice/user-0.slice/session-1.scope");
	assert_int_equal(parse_cgroup_fixture("cgroup_no_newline", path, sizeof(path)), 0);
	assert_string_equal(path, "/a b/c:d");
	assert_int_equal(parse_cgroup_fixture("cgroup_no_v2", path, sizeof(path)), -ENOENT);
	assert_int_equal(parse_cgroup_fixture("cgroup_lookalike", path, sizeof(path)), -ENOENT);
	assert_int_equal(parse_cgroup_fixture("cgroup_empty_path", path, sizeof(path)), -EINVAL);
	assert_int_equal(parse_cgroup_buf("", 0, path, sizeof(path)), -ENOENT);
	assert_int_equal(parse_cgroup_buf("0::x\n", 5, path, sizeof(path)), -EINVAL);
}

/* Issue 16, defect 8: without a "0::" line (cgroup v1 only), the rules
 * match the memory hierarchy's path, else the name=systemd one; "/" only
 * when neither exists. Before, every process was in "/". */
static void test_cgroup_policy_v1(void **state)
{
	char path[4096], *cut = malloc(8192);
	enum cgroup_hier h;
	size_t n;

	(void)state;
	assert_non_null(cut);
	n = load_hostile("cgroup_no_v2"); /* 4:memory:/a, 3:cpuset:/, 1:name=systemd:/init.scope */
	assert_int_equal(parse_cgroup_policy_buf(buf, n, path, sizeof(path), &h), 0);
	assert_string_equal(path, "/a");
	assert_int_equal(h, CGROUP_HIER_V1_MEMORY);
	n = load_hostile("cgroup_hybrid_v2_first");
	assert_int_equal(parse_cgroup_policy_buf(buf, n, path, sizeof(path), &h), 0);
	assert_string_equal(path, "/system.slice/foo.service");
	assert_int_equal(h, CGROUP_HIER_V2);
	const char *sd = "3:cpu,cpuacct:/x\n1:name=systemd:/system.slice/web.service\n";
	assert_int_equal(parse_cgroup_policy_buf(sd, strlen(sd), path, sizeof(path), &h), 0);
	assert_string_equal(path, "/system.slice/web.service");
	assert_int_equal(h, CGROUP_HIER_V1_SYSTEMD);
	const char *joined = "5:cpu,memory:/db\n";
	assert_int_equal(parse_cgroup_policy_buf(joined, strlen(joined), path, sizeof(path), &h), 0);
	assert_string_equal(path, "/db");
	const char *none = "2:cpu:/b\n";
	assert_int_equal(parse_cgroup_policy_buf(none, strlen(none), path, sizeof(path), &h), 0);
	assert_string_equal(path, "/");
	assert_int_equal(h, CGROUP_HIER_NONE);
	assert_int_equal(parse_cgroup_policy_buf("", 0, path, sizeof(path), &h), 0);
	assert_int_equal(h, CGROUP_HIER_NONE);
	const char *rel = "4:memory:a\n";
	assert_int_equal(parse_cgroup_policy_buf(rel, strlen(rel), path, sizeof(path), &h), -EINVAL);
	/* A v1 path the kernel may have cut is refused like a v2 one. */
	strcpy(cut, "4:memory:/");
	memset(cut + 10, 'd', CGROUP_PATH_CUT - 1);
	strcpy(cut + 9 + CGROUP_PATH_CUT, "\n");
	assert_int_equal(parse_cgroup_policy_buf(cut, strlen(cut), path, sizeof(path), &h), -ENAMETOOLONG);
	free(cut);
}

static void test_cgroup_overlong(void **state)
{
	(void)state;
	static char big[8192];

	assert_int_equal(parse_cgroup_fixture("cgroup_overlong", big, 4096), -ENAMETOOLONG);
	/* Longer than the kernel ever prints: refused whatever the room. */
	assert_int_equal(parse_cgroup_fixture("cgroup_overlong", big, sizeof(big)), -ENAMETOOLONG);
	/* What 6.18 printed for a path of 5040 bytes: cut at 4095, no error. */
	assert_int_equal(parse_cgroup_fixture("cgroup_kernel_cut", big, sizeof(big)), -ENAMETOOLONG);
	/* One byte shorter cannot have been cut. */
	assert_int_equal(parse_cgroup_fixture("cgroup_longest_whole", big, sizeof(big)), 0);
	assert_int_equal(strlen(big), CGROUP_PATH_CUT - 1);
	assert_int_equal(parse_cgroup_fixture("cgroup_longest_whole", big, CGROUP_PATH_CUT), 0);
	assert_int_equal(parse_cgroup_fixture("cgroup_longest_whole", big, CGROUP_PATH_CUT - 1), -ENAMETOOLONG);

	/* Exact boundary: "/x" needs 3 bytes. */
	assert_int_equal(parse_cgroup_buf("0::/x\n", 6, big, 2), -ENAMETOOLONG);
	assert_int_equal(parse_cgroup_buf("0::/x\n", 6, big, 3), 0);
	assert_string_equal(big, "/x");
}

/* ---- status ---- */

static void test_auxv_random(void **state)
{
	(void)state;
	const uint64_t auxv[] = {6, 4096, 25, 0x7ffc1234, 0, 0}, none[] = {6, 4096, 0, 0, 25, 1};
	uint64_t addr = 0;

	assert_int_equal(parse_auxv_random(auxv, sizeof(auxv), &addr), 0);
	assert_int_equal(addr, 0x7ffc1234);
	assert_int_equal(parse_auxv_random(none, sizeof(none), &addr), -ENOENT);         /* after AT_NULL */
	assert_int_equal(parse_auxv_random(auxv, 3 * sizeof(uint64_t), &addr), -ENOENT); /* cut before the value */
}

/* Both fingerprints of a process, read from its PID directory, and its
 * state letter from the same stat. */
static char fingerprints(pid_t pid, uint64_t *stat_id, uint64_t *rnd)
{
	char path[64];
	struct proc_sample ps;
	int dirfd;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd >= 0);
	assert_int_equal(read_proc_stat(dirfd, &ps), 0);
	*stat_id = ps.exec_id;
	*rnd = read_exec_random(dirfd);
	close(dirfd);
	return ps.state;
}

/* Is pid running the loop's image: /bin/sh -c "$X"? */
static bool in_loop(pid_t pid, const char *loop)
{
	char path[64], cmd[256], want[256];
	int n = snprintf(want, sizeof(want), "/bin/sh%c-c%c%s", 0, 0, loop) + 1;
	ssize_t got;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	got = read_small_file_at(AT_FDCWD, path, cmd, sizeof(cmd));
	return got == n && !memcmp(cmd, want, (size_t)n);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Issue 16: with ASLR off (here: ADDR_NO_RANDOMIZE for one shell, which
 * execve() keeps), a re-exec of the same binary with the same argv and
 * environment has the same addresses, so stat's fingerprint alone stays
 * the same; the AT_RANDOM bytes of the new image do not. */
static void test_exec_random_aslr_off(void **state)
{
	(void)state;
	static const char loop[] = "read l; exec /bin/sh -c \"$X\"";
	uint64_t s1, r1, s2, r2;
	double deadline;
	int in[2];
	pid_t pid;

	assert_int_equal(pipe(in), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		close(in[1]);
		if (personality(ADDR_NO_RANDOMIZE) < 0)
			_exit(2);
		setenv("X", loop, 1);
		execl("/bin/sh", "/bin/sh", "-c", loop, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	for (deadline = now_s() + 10; !in_loop(pid, loop) && now_s() < deadline;)
		usleep(1000);
	assert_true(in_loop(pid, loop));
	fingerprints(pid, &s2, &r2);
	assert_true(r2 != 0);
	/* Two re-execs of the same /bin/sh -c "$X": the second and the third
	 * image were both started by the shell, with its environment. */
	for (int i = 0; i < 2; i++) {
		s1 = s2;
		r1 = r2;
		assert_int_equal(write(in[1], "\n", 1), 1);
		/* execve() saves the new auxv before it sets the code and
		 * data addresses: a read in between sees new AT_RANDOM bytes
		 * beside half-set addresses. The new image is complete once
		 * it sleeps in its read of the pipe. */
		for (deadline = now_s() + 10; now_s() < deadline; usleep(1000)) {
			char st = fingerprints(pid, &s2, &r2);
			if (r2 != r1 && r2 != 0 && st == 'S')
				break;
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(in[1]);
	assert_true(r2 != r1); /* the new image has new AT_RANDOM bytes */
	assert_true(s2 == s1); /* the bug: its addresses alone did not change */
	assert_true((s1 ^ r1) != (s2 ^ r2));
}

static void test_status_thp(void **state)
{
	(void)state;
	int dfd = open_fixture_dir("real");
	assert_int_equal(read_proc_thp_enabled(dfd), 1);
	close(dfd);

	dfd = open_fixture_dir("thp_disabled");
	assert_int_equal(read_proc_thp_enabled(dfd), 0);
	close(dfd);

	size_t n = load_hostile("status_no_thp");
	assert_null(strstr(buf, "THP_enabled"));
	assert_int_equal(parse_status_thp_enabled(buf, n), 1);
	n = load_hostile("status_lookalike");
	assert_int_equal(parse_status_thp_enabled(buf, n), 1);
	n = load_hostile("status_thp0_no_newline");
	assert_int_equal(parse_status_thp_enabled(buf, n), 0);
	assert_int_equal(parse_status_thp_enabled("", 0), 1);
}

/* ---- readers ---- */

static void test_read_small_file_at(void **state)
{
	(void)state;
	int dfd = open_fixture_dir("hostile");
	char small[32];

	assert_int_equal(read_small_file_at(dfd, "no_such_file", small, sizeof(small)), -ENOENT);
	assert_int_equal(read_small_file_at(dfd, "stat_empty", small, sizeof(small)), 0);
	assert_string_equal(small, "");
	/* cgroup_no_newline is 11 bytes: 12 fits exactly, 11 is cut. */
	assert_int_equal(read_small_file_at(dfd, "cgroup_no_newline", small, 12), 11);
	assert_string_equal(small, "0::/a b/c:d");
	assert_int_equal(read_small_file_at(dfd, "cgroup_no_newline", small, 11), -EFBIG);
	assert_int_equal(read_small_file_at(dfd, "cgroup_overlong", small, sizeof(small)), -EFBIG);
	assert_int_equal(read_small_file_at(dfd, "stat_empty", small, 0), -EINVAL);
	assert_int_equal(read_small_file_at(dfd, ".", small, sizeof(small)), -EISDIR);
	close(dfd);
}

/* The one-shot readers give what read_small_file_at() gives, on the same
 * fixtures and the same edges. */
static void test_read_one_shot(void **state)
{
	(void)state;
	int dfd = open_fixture_dir("hostile");
	char small[32];
	int fd;

	assert_int_equal(read_one_shot_at(dfd, "no_such_file", small, sizeof(small)), -ENOENT);
	assert_int_equal(read_one_shot_at(dfd, "stat_empty", small, sizeof(small)), 0);
	assert_int_equal(read_one_shot_at(dfd, "cgroup_no_newline", small, 12), 11);
	assert_string_equal(small, "0::/a b/c:d");
	assert_int_equal(read_one_shot_at(dfd, "cgroup_no_newline", small, 11), -EFBIG);
	assert_int_equal(read_one_shot_at(dfd, "cgroup_overlong", small, sizeof(small)), -EFBIG);
	assert_int_equal(read_one_shot_at(dfd, "stat_empty", small, 0), -EINVAL);
	fd = openat(dfd, "cgroup_no_newline", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	/* From offset 0 every time, wherever the fd is. */
	assert_int_equal(pread_one_shot(fd, small, 12), 11);
	assert_int_equal(pread_one_shot(fd, small, 12), 11);
	assert_string_equal(small, "0::/a b/c:d");
	assert_int_equal(pread_one_shot(fd, small, 11), -EFBIG);
	close(fd);
	close(dfd);
}

/* A real single-record seq_file: the whole of /proc/self/stat in one go,
 * the same as read to the end. */
static void test_read_one_shot_proc(void **state)
{
	(void)state;
	char a[2048], b[2048];
	ssize_t na = read_one_shot_at(AT_FDCWD, "/proc/self/stat", a, sizeof(a));
	ssize_t nb = read_small_file_at(AT_FDCWD, "/proc/self/stat", b, sizeof(b));

	assert_true(na > 0 && nb > 0);
	assert_int_equal(strchr(a, '\n') - a, na - 1);
	assert_int_equal(strncmp(a, b, (size_t)(strchr(a, ')') - a)), 0);
}

/* A kept /proc/PID/stat fd (stat_fds) reads the live process, then -ESRCH
 * once it has exited and been reaped: a reused PID is never read through
 * the old fd. The next read opens the path: -ENOENT, nothing kept. */
static void test_stat_fds_exited(void **state)
{
	struct stat_fds c;
	char text[2048];
	int rootfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), st;
	pid_t pid;

	(void)state;
	assert_true(rootfd >= 0);
	stat_fds_init(&c);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	assert_true(stat_fds_read(&c, rootfd, pid, text, sizeof(text)) > 0);
	assert_true(stat_fds_read(&c, rootfd, pid, text, sizeof(text)) > 0);
	assert_int_equal(c.opens, 1);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(stat_fds_read(&c, rootfd, pid, text, sizeof(text)), -ENOENT);
	assert_int_equal(c.opens, 1); /* the kept fd failed (-ESRCH), the path is gone */
	assert_int_equal(stat_fds_read(&c, rootfd, pid, text, sizeof(text)), -ENOENT);
	stat_fds_close(&c);
	close(rootfd);
}

/* The real paths: the daemon reads no environment to find them (a test
 * fills its own struct hc_paths). */
static void test_paths_default(void **state)
{
	struct hc_paths p;

	(void)state;
	assert_int_equal(setenv("HC_PROC_ROOT", "/tmp/fake", 1), 0);
	hc_paths_default(&p);
	unsetenv("HC_PROC_ROOT");
	assert_string_equal(p.proc, "/proc");
	assert_string_equal(p.thp, "/sys/kernel/mm/transparent_hugepage");
	assert_string_equal(p.mountinfo, "/proc/self/mountinfo");
	assert_string_equal(p.kpageflags, "/proc/kpageflags");
	assert_string_equal(p.self_pagemap, "/proc/self/pagemap");
	assert_false(p.pagemap_read);
}

/* ---- live ---- */

static const struct proc_sample *sample_self(struct procs *p, struct proc_table *t)
{
	assert_int_equal(procs_sample(p, t), 0);
	const struct proc_sample *me = proc_table_find(t, getpid());
	assert_non_null(me);
	return me;
}

static void test_live_self(void **state)
{
	(void)state;
	struct procs *p = procs_open();
	struct proc_table t = {0};
	struct proc_sample direct;

	assert_non_null(p);
	const struct proc_sample *me = sample_self(p, &t);
	int dfd = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(read_proc_stat(dfd, &direct), 0);
	close(dfd);

	assert_int_equal(me->pid, direct.pid);
	assert_int_equal(me->start_ticks, direct.start_ticks);
	assert_string_equal(me->comm, direct.comm);
	assert_true(me->vsize > 0);
	assert_true(me->rss_pages > 0);
	assert_true(me->minflt > 0 && me->minflt <= direct.minflt);
	uint64_t minflt0 = me->minflt, rss0 = me->rss_pages;

	/* Fresh memory, touched one 4 KiB page at a time. */
	const size_t len = 16 * MIB_BYTES;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	madvise(m, len, MADV_NOHUGEPAGE);
	for (size_t off = 0; off < len; off += PAGE_BYTES)
		m[off] = 1;

	me = sample_self(p, &t);
	/* ≥ one fault per 64 KiB even if mTHP is on; 4096 with 4 KiB pages. */
	assert_true(me->minflt >= minflt0 + len / 65536);
	assert_true(me->rss_pages >= rss0 + len / PAGE_BYTES / 2);
	assert_int_equal(me->start_ticks, direct.start_ticks);
	munmap(m, len);

	proc_table_free(&t);
	assert_null(t.p);
	procs_close(p);
}

static void test_live_excludes_kthreads_sorted(void **state)
{
	(void)state;
	struct procs *p = procs_open();
	struct proc_table t = {0};
	char comm[64] = "";

	assert_non_null(p);
	assert_int_equal(procs_sample(p, &t), 0);
	assert_true(t.n > 1);
	for (size_t i = 0; i < t.n; i++) {
		assert_true(t.p[i].vsize > 0);
		if (i > 0)
			assert_true(t.p[i - 1].pid < t.p[i].pid);
	}
	FILE *f = fopen("/proc/2/comm", "re");
	if (f) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
	}
	if (strcmp(comm, "kthreadd\n") == 0)
		assert_null(proc_table_find(&t, 2));
	else
		print_message("pid 2 is not kthreadd here; kthread check skipped\n");

	/* A second sample reuses the table. */
	size_t n0 = t.n;
	assert_int_equal(procs_sample(p, &t), 0);
	assert_true(t.n > n0 / 2 && t.n < n0 * 2 + 16);
	assert_null(proc_table_find(&t, 0));
	assert_null(proc_table_find(&t, INT32_MAX));
	proc_table_free(&t);
	procs_close(p);
}

static char proc_state(pid_t pid)
{
	char path[64];
	struct proc_sample s;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return '?';
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (parse_stat_buf(buf, n, &s) < 0)
		return '?';
	return strrchr(buf, ')')[2];
}

static void test_live_excludes_zombies(void **state)
{
	(void)state;
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);

	for (int i = 0; i < 500 && proc_state(child) != 'Z'; i++)
		nanosleep(&(struct timespec){.tv_nsec = 2000000}, NULL);
	assert_int_equal(proc_state(child), 'Z');

	struct procs *p = procs_open();
	struct proc_table t = {0};
	assert_non_null(p);
	assert_int_equal(procs_sample(p, &t), 0);
	const struct proc_sample *z = proc_table_find(&t, child);
	assert_non_null(proc_table_find(&t, getpid()));
	proc_table_free(&t);
	procs_close(p);
	assert_int_equal(waitpid(child, NULL, 0), child);
	assert_null(z);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_real_stat),
	    cmocka_unit_test(test_exec_fingerprint),
	    cmocka_unit_test(test_comm_with_spaces_and_parens),
	    cmocka_unit_test(test_kthread_stat),
	    cmocka_unit_test(test_hostile_stat_rejected),
	    cmocka_unit_test(test_long_comm_truncated),
	    cmocka_unit_test(test_stat_inline_edge_cases),
	    cmocka_unit_test(test_real_cgroup_hybrid),
	    cmocka_unit_test(test_cgroup_variants),
	    cmocka_unit_test(test_cgroup_policy_v1),
	    cmocka_unit_test(test_cgroup_overlong),
	    cmocka_unit_test(test_read_cgroup_fails_closed),
	    cmocka_unit_test(test_status_thp),
	    cmocka_unit_test(test_auxv_random),
	    cmocka_unit_test(test_exec_random_aslr_off),
	    cmocka_unit_test(test_read_small_file_at),
	    cmocka_unit_test(test_read_one_shot),
	    cmocka_unit_test(test_read_one_shot_proc),
	    cmocka_unit_test(test_stat_fds_exited),
	    cmocka_unit_test(test_paths_default),
	    cmocka_unit_test(test_live_self),
	    cmocka_unit_test(test_live_excludes_kthreads_sorted),
	    cmocka_unit_test(test_live_excludes_zombies),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
