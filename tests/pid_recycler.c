/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hc_pid_recycler: recycles PIDs on purpose, in a PID namespace with a
 * small pid_max, for integration/pid_reuse (issue 11, defect 2; issue 17).
 *
 *   hc_pid_recycler FROM TO STEP_MS [SIZE...]
 *
 * Keeps FROM long-lived children (they pause), then every STEP_MS takes one
 * step: it finds a free PID q after which the kernel's next PIDs are those
 * of 3 of its long-lived children, kills and reaps those, and forks 3 + NEW
 * long-lived children at once: the first 3 get the killed PIDs back (the
 * kernel hands PIDs out cyclically from the last one), the others are new,
 * until TO children live. NEW is 1, or 2 when the namespace's count of
 * processes with memory is one below a SIZE. A step takes well under a
 * millisecond, so a sampler that looks every 10 ms mostly sees it whole.
 * The free PID q is found by threads that exit at once (no sampler sees
 * them): about one lap of the free PIDs per step.
 *
 * Prints "steps=S hits=H misses=M landed=L forks=F" on exit: a hit is a step whose
 * new children got exactly the killed PIDs back, a landing a step of 2 new
 * ones at a count of SIZE - 1. Exits 0, or 1 on an
 * error (then nothing it forked is left alive). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RECYCLE_MAX        8
#define PID_MIN_AFTER_WRAP 300 /* the kernel's RESERVED_PIDS */

static unsigned char *mine; /* indexed by PID: 1 = a long-lived child */
static long pid_max;

static void kill_all(void)
{
	for (long p = 0; p < pid_max; p++)
		if (mine[p]) {
			kill((pid_t)p, SIGKILL);
			waitpid((pid_t)p, NULL, 0);
			mine[p] = 0;
		}
}

static pid_t spawn_long_lived(void)
{
	pid_t p = fork();

	if (p == 0) {
		for (;;)
			pause();
	}
	if (p > 0 && p < pid_max)
		mine[p] = 1;
	return p;
}

static void *thread_tid(void *arg)
{
	*(pid_t *)arg = gettid();
	return NULL;
}

/* A thread that exits at once: moves the kernel's PID cursor by one (a TID
 * comes from the same pool), and /proc lists no thread, so no sampler
 * sees it. */
static pid_t spawn_exiting(void)
{
	pthread_t t;
	pid_t tid = -1;

	if (pthread_create(&t, NULL, thread_tid, &tid) != 0)
		return -1;
	pthread_join(t, NULL);
	return tid;
}

/* The processes that the daemon's sample counts: those in /proc with
 * memory (vsize > 0) that are not zombies. */
static long count_procs(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	long n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char path[300], buf[1024], state;
		unsigned long vsize;
		const char *rp;
		ssize_t len;
		int fd;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = 0;
		rp = strrchr(buf, ')');
		/* state is field 3, vsize field 23 */
		if (rp &&
		    sscanf(rp + 1,
			   " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %lu",
			   &state, &vsize) == 2 &&
		    vsize && state != 'Z')
			n++;
	}
	closedir(d);
	return n;
}

static long next_pid(long p)
{
	return p + 1 < pid_max ? p + 1 : PID_MIN_AFTER_WRAP;
}

static long read_pid_max(void)
{
	FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* Whether another process holds PID p (or ours does). */
static int held(long p)
{
	return kill((pid_t)p, 0) == 0 || errno == EPERM;
}

/* One step: returns 1 on a hit, 0 on a miss, -1 on an error. */
static int step(int recycle, int grow, unsigned long *forks)
{
	pid_t victims[RECYCLE_MAX];
	long q = -1;

	/* Walk the cursor, at most two laps, to a free PID after which the
	 * kernel would hand out the PIDs of recycle children of ours next:
	 * PIDs held by other processes in between are skipped by it too. */
	for (long i = 0; i < 2 * pid_max && q < 0; i++) {
		pid_t p = spawn_exiting();
		long v = p;
		int k = 0;

		if (p < 0)
			return -1;
		(*forks)++;
		for (long j = 0; j < pid_max && k < recycle; j++) {
			v = next_pid(v);
			if (mine[v])
				victims[k++] = (pid_t)v;
			else if (!held(v))
				break;
		}
		if (k == recycle)
			q = p;
	}
	if (q < 0)
		return 0;
	for (int k = 0; k < recycle; k++)
		kill(victims[k], SIGKILL);
	for (int k = 0; k < recycle; k++) {
		waitpid(victims[k], NULL, 0);
		mine[victims[k]] = 0;
	}
	int hit = 1;
	for (int k = 0; k < recycle; k++) {
		pid_t p = spawn_long_lived();

		if (p < 0)
			return -1;
		if (p != victims[k])
			hit = 0;
	}
	for (int k = 0; k < grow; k++)
		if (spawn_long_lived() < 0)
			return -1;
	*forks += (unsigned long)(recycle + grow);
	return hit;
}

static int is_size(long c, char **sizes, int nsizes)
{
	for (int i = 0; i < nsizes; i++)
		if (c == strtol(sizes[i], NULL, 10))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	const int recycle = 3;

	if (argc < 4) {
		fprintf(stderr, "usage: %s FROM TO STEP_MS [SIZE...]\n", argv[0]);
		return 2;
	}
	long from = strtol(argv[1], NULL, 10), to = strtol(argv[2], NULL, 10), ms = strtol(argv[3], NULL, 10);

	pid_max = read_pid_max();
	if (from < recycle || to < from || ms < 0 || pid_max <= 0 || pid_max > 1 << 22) {
		fprintf(stderr, "hc_pid_recycler: bad arguments or pid_max %ld\n", pid_max);
		return 2;
	}
	mine = calloc((size_t)pid_max, 1);
	if (!mine)
		return 1;
	for (long i = 0; i < from; i++)
		if (spawn_long_lived() < 0) {
			perror("fork");
			kill_all();
			return 1;
		}

	struct timespec pause_ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	unsigned long steps = 0, hits = 0, misses = 0, forks = 0, landed = 0;
	for (long n = from; n < to;) {
		long c = count_procs();
		int fresh = 1, r;

		/* At count SIZE - 1 the table has exactly one spare slot: the
		 * step that brings 2 new processes with the recycled ones is
		 * the one the old code overflowed on. */
		if (c > 0 && is_size(c + 1, argv + 4, argc - 4)) {
			fresh = 2;
			landed++;
		}
		r = step(recycle, fresh, &forks);
		if (r < 0) {
			perror("fork");
			kill_all();
			return 1;
		}
		n += fresh;
		steps++;
		if (r)
			hits++;
		else
			misses++;
		nanosleep(&pause_ts, NULL);
	}
	kill_all();
	printf("steps=%lu hits=%lu misses=%lu landed=%lu forks=%lu\n", steps, hits, misses, landed, forks);
	return 0;
}
