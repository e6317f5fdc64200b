/* engine: per-process state kept between passes, and one pass from /proc to
 * process_madvise(MADV_COLLAPSE).
 *
 * A pass: sample every process (one /proc/PID/stat read each, via libproc2);
 * rescan only processes that are new, changed (faults, RSS or address-space
 * size) or due for a full rescan (full_rescan_s); score every remembered
 * candidate block of every enabled process; collapse from the top of that
 * single order until the pass's budget is spent, rescanning first a process
 * whose blocks were found in an earlier pass (MADV_COLD and MADV_FREE leave
 * no trace in the sample). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "collapse.h"
#include "config.h"
#include "fault_doorbell.h"
#include "mapped_memory.h"
#include "plan.h"
#include "procs.h"
#include "range_scan.h"
#include "smaps_scan.h"
#include "thp_policy.h"

/* A few block addresses (searched linearly: they are rare). */
struct addr_set {
	uint64_t *v;
	size_t n, cap;
};

/* A block remembered from the last scan of its process. */
struct block_memo {
	uint64_t addr;
	double first_seen; /* monotonic seconds: ages the block */
	uint16_t present;
	uint8_t referenced_pct; /* of its VMA */
	uint8_t eagain;         /* EAGAIN answers so far */
};

struct proc_state {
	pid_t pid;
	uint64_t start_ticks;
	uint64_t exec_id;        /* image fingerprint at the last scan: execve keeps pid and start */
	struct proc_sample prev; /* last sample, for deltas */
	struct activity activity;
	double last_active; /* monotonic seconds */
	bool seen;          /* mark for the sweep of exited processes */
	/* What the last full scan saw; a process whose counters still match
	 * is not scanned again (O(1): the stat read of the sample). */
	bool scanned;
	double last_scan;
	uint64_t scan_minflt, scan_majflt, scan_rss, scan_vsize;
	char *cgroup;
	const struct policy *policy; /* into the engine's config */
	bool thp_enabled;            /* /proc/PID/status THP_enabled */
	uint8_t thp_prctl;           /* enum thp_prctl, inferred at the last scan */
	/* Its last scan found a block's worth of memory the THP policy refused
	 * (policy_refused) after a change: look once more POLICY_RECHECK_S
	 * later (policy_recheck), since a MADV_HUGEPAGE given after the faults
	 * changes no counter the sample sees. */
	bool policy_refused, policy_recheck;
	bool denied;                       /* no ptrace access to this process: skipped */
	double last_clear;                 /* access_sampling: when clear_refs was last written */
	uint64_t results[SCAN_NR_RESULTS]; /* of the last scan */
	struct block_memo *blocks;         /* candidates from the last scan */
	size_t nblocks, capblocks;
	struct addr_set refused;  /* blocks the kernel answered EINVAL; until maps change */
	struct addr_set given_up; /* blocks past eagain_retries; until the next full rescan */
};

struct pass_stats {
	uint64_t results[SCAN_NR_RESULTS];       /* blocks classified by this pass's scans */
	uint64_t outcomes[COLLAPSE_NR_OUTCOMES]; /* collapse attempts */
	uint64_t collapsed_bytes;
	double scan_s, collapse_s;
	unsigned procs_total;     /* processes sampled (after --pid filter) */
	unsigned procs_scanned;   /* smaps + pagemap read */
	unsigned procs_unchanged; /* skipped at O(1) */
	unsigned procs_disabled;  /* policy enable = no */
	unsigned procs_active;    /* active within idle_after_s */
	uint64_t smaps_reads, pagemap_ops;
	uint64_t stale_dropped; /* remembered blocks a rescan before collapse
				 * no longer found candidates (cold, freed...) */
	bool backing_off;       /* no collapse this pass: after ENOMEM */
	bool idle;              /* skipped: no fault anywhere, nothing pending */
	bool missing_privilege; /* EPERM/EACCES from the kernel */
};

struct pass_options {
	bool dry_run;
	bool unlimited; /* --once: collapse every candidate, no budget */
	const pid_t *pids;
	size_t npids;    /* 0: every process */
	bool allow_idle; /* daemon: skip the pass when no fault happened
			  * anywhere and nothing is pending (fault_doorbell) */
	/* Asked between processes; true abandons the rest of the pass (the
	 * daemon: SIGTERM is pending). NULL: never. */
	bool (*interrupted)(void);
	double max_seconds; /* stop collapsing this long after the pass began
			     * (0: no limit); the rest waits for the next pass */
};

/* Bytes collapsed per cgroup, for metrics. */
struct cgroup_bytes {
	char *cgroup;
	uint64_t bytes;
};

struct engine {
	const struct config *cfg;
	struct procs *procs;
	struct range_scanner scanner;
	struct proc_table sample;
	double sample_time; /* monotonic seconds of the last sample */
	double last_pass;
	double backoff_until;
	long hz;
	struct proc_state *st; /* sorted by pid */
	size_t nst, capst;
	char *smaps_buf;
	size_t smaps_cap;
	struct block_memo *old_blocks; /* scratch: a process's previous candidates */
	size_t nold_blocks, capold_blocks;
	struct vma_list vmas;
	struct candidate *cands; /* the last pass's order */
	size_t ncands, capcands;
	/* Scratch for collapsing, reused across passes. */
	uint64_t *batch_addrs;
	uint8_t *batch_out;
	struct candidate *retry;
	size_t capbatch_addrs, capbatch_out, capretry;
	bool log_collapses; /* one log line per process collapsed (daemon) */
	struct cgroup_bytes *cg_bytes;
	size_t ncg_bytes;
	struct fault_doorbell doorbell;
	bool (*doorbell_rang)(const struct fault_doorbell *); /* injectable for tests */
	struct mapped_watch mapped;                           /* memory populated without faults */
	double last_full_pass;                                /* monotonic seconds */
	size_t pending;                                       /* candidate blocks remembered after the last pass */
	pid_t resume_pid;                                     /* a pass ran out of time: the next scans from here */
	uint64_t passes_idle;                                 /* passes skipped by the doorbell */
	struct pass_stats total;                              /* since start */
	struct pass_stats last;                               /* the last pass */
	uint64_t passes;
	/* The THP policy (live and original), read from thp_dir at most once a
	 * second while processes are scanned; khp: what the daemon changed
	 * (NULL: nothing, as for --once). */
	struct thp_state thp;
	double thp_read_at;
	const char *thp_dir;
	const struct khugepaged_saved *khp;
	enum thp_prctl (*prctl_infer)(const struct thp_policy *, bool, const struct vma *, size_t); /* injectable */
	process_madvise_fn madvise_fn; /* injectable for tests */
	double (*now)(void);           /* monotonic seconds; injectable */
};

/* Returns 0 or -errno. The config must outlive the engine, or be replaced
 * with engine_set_config(). */
int engine_init(struct engine *e, const struct config *cfg);
void engine_free(struct engine *e);
void engine_set_config(struct engine *e, const struct config *cfg);

/* Takes a sample of every process, updating activity. The first one only
 * sets the baseline. Returns 0 or -errno. */
int engine_sample(struct engine *e);

/* One pass (samples again first). Returns 0 or -errno on a fatal error. */
int engine_pass(struct engine *e, const struct pass_options *o, struct pass_stats *ps);

const struct proc_state *engine_find(const struct engine *e, pid_t pid);
double monotonic_seconds(void);
