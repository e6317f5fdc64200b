/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sampler: the first stage of a pass, and its state (owned here alone):
 * the fault doorbell, the PID sets of the last listing, the rolling
 * slice's cursor, the mapped-memory watch and the sample itself.
 *
 * A pass's sample is only what changed (sample_set.h) when the doorbell
 * says who faulted; every process (the enumerator) when it cannot, when
 * records were lost, when mapped memory moved without faults, or when the
 * pass asks for every process (--pid, --once). Either way the result is
 * merged into the process table (proc_state.h, which owns the merge). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fault_doorbell.h"
#include "fault_ring.h"
#include "mapped_memory.h"
#include "procs.h"
#include "stat_fds.h"

struct proc_state;

/* Fills out with every user-space process, sorted by pid, as
 * procs_sample() does. Returns 0 or -errno. */
typedef int (*proc_enumerate_fn)(void *ctx, struct proc_table *out);

/* The default enumerator: procs_sample() on ctx (a struct procs). */
int sampler_enumerate_procs(void *ctx, struct proc_table *out);

struct sampler {
	proc_enumerate_fn enumerate; /* sampler_enumerate_procs() by default; injectable */
	void *enumerate_ctx;
	int proc_fd;              /* the proc root, opened at the first partial sample; -1: not yet */
	struct stat_fds stat_fds; /* PID/stat under proc_fd, kept for those read every pass */
	struct proc_table sample;
	double sample_time; /* monotonic seconds of the last sample */
	struct fault_doorbell doorbell;
	double doorbell_opened;                               /* monotonic seconds of its last (re)open */
	double doorbell_checked;                              /* … and of its last look at the online CPUs */
	char doorbell_logged[DOORBELL_ONLINE_MAX];            /* the online list last logged */
	int doorbell_counting;                                /* logged: 1 per process, -errno per CPU, 0 none */
	bool (*doorbell_rang)(const struct fault_doorbell *); /* injectable for tests */
	/* Who faulted: fault_doorbell_drain() by default; injectable. */
	int (*doorbell_drain)(struct fault_doorbell *, struct fault_pids *);
	struct fault_pids faulted;            /* scratch: this pass's faulting PIDs */
	pid_t *listing, *fresh, *nomm, *want; /* scratch PID sets (sample_set.h) */
	size_t nlisting, caplisting, nfresh, capfresh, nnomm, capnomm, nwant, capwant;
	pid_t *newcomers; /* new PIDs named by fewer than SAMPLES_PER_BLOCK samples, since the last listing */
	size_t nnewcomers, capnewcomers;
	double last_listing; /* monotonic seconds of the last /proc readdir */
	/* Births and exits from the doorbell's task records (task_ring.h):
	 * scratch, and this pass's born and gone PIDs (sorted). */
	struct task_events tasks;
	pid_t *born, *gone;
	size_t nborn, capborn, ngone, capgone;
	bool tasks_lost; /* records were lost: list /proc at the next partial pass */
	/* Born and still alive, not read yet (sorted by pid): read once they
	 * are LISTING_PERIOD_S old, as a listing would find them, so that a
	 * shell's short commands cost nothing; the ones that fault are named
	 * by the doorbell before that. */
	struct born_pid {
		pid_t pid;
		double at; /* when the record was drained */
	} * pend, *pend2;
	size_t npend, cappend, cappend2;
	uint64_t listings;    /* /proc readdirs */
	uint64_t task_born;   /* processes learned from task records, not a listing */
	pid_t roll_pid;       /* the rolling rescan's cursor */
	double roll_credit;   /* processes the slice owes (fractions carry over) */
	bool mapped_moved;    /* seen by sampler_mapped_quiet(), for the sample */
	bool mapped_unlisted; /* ... and /proc not listed since */
	double last_full_sample;
	uint64_t full_samples, partial_samples, stat_reads;
	struct mapped_watch mapped; /* memory populated without faults */
};

/* The table a sample merges into (the engine's, sorted by pid). */
struct sample_table {
	struct proc_state **st;
	size_t *n, *cap;
};

/* What one sample depends on besides the sampler's state. */
struct sample_input {
	double (*now)(void);  /* monotonic seconds (the engine's clock) */
	long hz;              /* sysconf(_SC_CLK_TCK) */
	double full_rescan_s; /* every process is read once this often */
	unsigned policy_gen;  /* the scanner's (rescan.h, sample_set.h) */
	pid_t self;           /* never sampled on the partial path */
	const char *proc_root;
	bool every_process; /* --pid or --once: the full sample */
	/* Read this pass whatever the doorbell said (sorted): the callers of
	 * madvise(MADV_HUGEPAGE) and prctl(PR_SET_THP_DISABLE), news whose
	 * pass scans them, a new process too (MAP_POPULATE, then the opt-in:
	 * no fault names it). */
	const pid_t *read_now;
	size_t nread_now;
};

/* What it did. */
struct sample_out {
	bool full;        /* every process sampled */
	unsigned sampled; /* /proc/PID/stat read */
};

/* Sets the defaults (the seams): enumerate on ctx, the real doorbell. */
void sampler_init(struct sampler *sm, void *enumerate_ctx);
/* Opens the doorbell (logs either way); now: monotonic seconds. */
void sampler_open_doorbell(struct sampler *sm, double now, unsigned wakeup, bool per_process);
/* The doorbell's poll wakes after wakeup samples per CPU, or of one
 * process, from now on (opens its events again if that changed). */
void sampler_doorbell_wakeup(struct sampler *sm, unsigned wakeup, bool per_process);
void sampler_free(struct sampler *sm);

/* Takes a sample of every process (sm->enumerate) into t, updating
 * activity. The first one only sets the baseline. Returns 0 or -errno. */
int sampler_sample_all(struct sampler *sm, double (*now)(void), long hz, const struct sample_table *t);
/* The sample of one pass into t. Returns 0 or -errno. */
int sampler_pass(struct sampler *sm, const struct sample_input *in, const struct sample_table *t,
		 struct sample_out *out);

/* Whether the doorbell rang since it was last drained. */
bool sampler_rang(const struct sampler *sm);
/* Who the doorbell names since the last drain, with counts
 * (fault_doorbell_peek()); NULL without a doorbell. */
const struct fault_pids *sampler_peek(struct sampler *sm);
/* Whether no memory was mapped without faults (seen by the meminfo watch,
 * remembered for the next sample). */
bool sampler_mapped_quiet(struct sampler *sm, double now);
/* A CPU that came online since the events were opened has none: looks at
 * most once a second, reopens at least every full_rescan_s. */
void sampler_refresh_doorbell(struct sampler *sm, double now, double full_rescan_s);
/* After a pass: the meminfo watch's first note. */
void sampler_after_pass(struct sampler *sm, double (*now)(void));
