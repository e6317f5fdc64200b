/* SPDX-License-Identifier: GPL-2.0-or-later */
/* config: the main file and per-cgroup policy files (libinih).
 *
 * config_load() reads the main file, then every *.conf in cgroup_dir, into a
 * fresh struct config. It either succeeds whole or fails whole: on failure
 * *out is untouched and err holds one line "FILE:LINE: key 'K': why" (or
 * "FILE: why" for file-level problems such as ownership). That is what makes
 * SIGHUP reloads atomic: the caller swaps configs only on success. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "scan_result.h"

enum khugepaged_mode {
	KHUGEPAGED_KEEP, /* touch nothing */
	KHUGEPAGED_IDLE, /* max scan_sleep_millisecs, min pages_to_scan */
	KHUGEPAGED_OFF,  /* PMD-size THP enabled=never: the thread exits */
};

/* [daemon] mode: collapse (the default), or observe for a first rollout:
 * scan, classify and report, but collapse nothing, write no THP or
 * khugepaged knob (whatever khugepaged = says) and no process's memory
 * (no lazy-free probe, no clear_refs). */
enum run_mode {
	RUN_COLLAPSE,
	RUN_OBSERVE,
};

/* Which VMAs the THP policy lets us collapse ([collapse] scope). */
enum thp_scope {
	THP_SCOPE_KERNEL,  /* where khugepaged may, under the policy in force before we changed it */
	THP_SCOPE_MADVISE, /* MADV_HUGEPAGE VMAs only, whatever enabled says */
	THP_SCOPE_ALWAYS,  /* as if enabled=always */
};

/* Everything that can differ per cgroup: the [collapse] keys. */
struct policy {
	bool enable;                   /* enable = yes */
	unsigned weight;               /* weight = 100, 1..10000 */
	unsigned budget_mb_per_s;      /* budget_mb_per_s = 128, 1..100000 */
	struct collapse_limits limits; /* max_ptes_none/swap/shared, min_referenced_pct */
	unsigned idle_after_s;         /* idle_after_s = 60, 1..86400 */
	unsigned max_wait_s;           /* max_wait_s = 30, 1..86400: aging bound */
	unsigned eagain_retries;       /* eagain_retries = 3, 0..100 */
	bool file_backed;              /* file_backed = yes: try file-backed text */
	bool access_sampling;          /* access_sampling = no: clear_refs periodically */
	unsigned access_sample_s;      /* access_sample_s = 30, 1..86400 */
	unsigned coverage_target_pct;  /* coverage_target_pct = 0 (none), 0..100: exported for alerts */
	enum thp_scope scope;          /* scope = kernel */
	unsigned memcg_headroom_mb;    /* memcg_headroom_mb = 2, 0..65536: kept free below memcg limits */
	unsigned blocks_per_call;      /* blocks_per_call = 1023, 1..1023: 2 MiB blocks per process_madvise */
	unsigned pause_ms;             /* pause_ms = 0, 0..10000: between two calls for one process */
};

struct cgroup_rule {
	char *path; /* normalized cgroup v2 path: "/", "/system.slice/foo.service",
		     * or a pattern: "/kubepods.slice/x/cri-containerd-*.scope" */
	char *file; /* where it came from, for messages */
	unsigned line;
	struct policy policy;
	bool glob;             /* path holds '*', '?' or '[': matched by fnmatch(3) */
	unsigned depth;        /* components: "/" 0, "/a/b" 2 */
	size_t literal_prefix; /* bytes before the first wildcard (strlen(path) if none) */
	size_t literals;       /* bytes outside '*', '?' and [...] */
};

struct config {
	char *path; /* the main file */
	/* [daemon] */
	unsigned scan_interval_ms;       /* 1000, 0..3600000; 0 = back to back */
	char *metrics_file;              /* see config_default_metrics_file(); "" = none */
	unsigned metrics_interval_s;     /* 10, 1..3600: rewritten at least this often (metrics_schedule.h) */
	char *cgroup_dir;                /* default: cgroup.d/ beside the main file */
	enum khugepaged_mode khugepaged; /* keep */
	enum run_mode mode;              /* collapse */
	char *state_file;                /* /run/hugecollapsed/khugepaged.state; "" = memory only */
	unsigned full_rescan_s;          /* 300, 1..86400 */
	unsigned alloc_backoff_ms;       /* 60000, 0..3600000 */
	unsigned coverage_top_cgroups;   /* 10, 0..1000: cgroups without a policy file in the metrics */
	/* Host memory pressure pauses collapsing (mem_pressure.h). */
	unsigned pressure_some_pct;       /* 10, 0..100: PSI memory some avg10; 0 = not checked */
	unsigned pressure_full_pct;       /* 2, 0..100: PSI memory full avg10; 0 = not checked */
	unsigned pressure_free_margin_mb; /* 64, 0..65536: above the zones' high watermarks */
	/* cold_watch = yes: observe MADV_COLD/MADV_PAGEOUT ranges by syscall
	 * tracepoints (cold_watch.h); no: coldness per VMA only */
	bool cold_watch;
	/* [collapse] */
	struct policy defaults;
	/* the *.conf files in cgroup_dir, sorted by path */
	struct cgroup_rule *rules;
	size_t nrules;
};

#define HC_DEFAULT_CONFIG "/etc/hugecollapsed/hugecollapsed.conf"

/* The default metrics_file: DIR/hugecollapsed.prom where the directory DIR
 * exists (node_exporter's textfile collector), else
 * /run/hugecollapsed/metrics.prom. Allocated; NULL without memory. */
char *config_default_metrics_file(const char *textfile_dir);
/* The DIR config_defaults() passes: /var/lib/prometheus/node-exporter (a
 * seam for tests, which must not depend on this host). */
extern const char *config_textfile_dir;

/* Fills c with the built-in defaults (no file read). */
void config_defaults(struct config *c);

/* Loads path (or built-in defaults if path is NULL), then the *.conf
 * drop-ins of path.d in name order (a key there replaces the value before
 * it), then cgroup_dir. missing_ok: a missing main file means defaults, as
 * for --once without --config. Checks that each
 * file and directory is owned by root and not writable by group or others
 * (skip_owner_check for unit tests on fixtures owned by someone else).
 * Returns 0, or -1 with err filled. On success *out is overwritten, not freed:
 * load into a fresh struct, then config_free() the old one and swap. */
int config_load(const char *path, bool missing_ok, bool skip_owner_check, struct config *out, char *err, size_t errlen);

void config_free(struct config *c);

/* The policy for a cgroup path; the defaults if no rule matches. A rule
 * matches the cgroup it names and its descendants: "/a" matches "/a" and
 * "/a/b", not "/ab"; a pattern the same way, component by component with
 * fnmatch(3) (FNM_PATHNAME: '*', '?' and '[...]' never match '/';
 * FNM_NOESCAPE: a backslash is an ordinary character, as in systemd's
 * "\x2d"), so "/k/x-*" matches "/k/x-1" and "/k/x-1/sub". Of several
 * matches the most specific wins (config_rule_more_specific). */
const struct policy *config_policy_for(const struct config *c, const char *cgroup);

/* Whether rule a beats rule b when both match one cgroup: the deeper
 * (more components: it matched a nearer ancestor), then at equal depth a
 * literal path over a pattern, then the pattern with more literal bytes
 * (outside '*', '?' and [...]: ".../cri-containerd-db*.scope" over
 * ".../cri-containerd-*.scope"), then the longer literal prefix (bytes
 * before the first wildcard), then the path first in byte order. A total
 * order: the winner does not depend on file names or reading order. Pure. */
bool config_rule_more_specific(const struct cgroup_rule *a, const struct cgroup_rule *b);

/* Sets r's glob, depth and literal_prefix from r->path (config_load does;
 * for rules built by hand). */
void config_rule_init(struct cgroup_rule *r);

/* Whether rule r matches cgroup (a normalized path). Pure. */
bool config_rule_matches(const struct cgroup_rule *r, const char *cgroup);

/* NULL if pattern (a normalized path) is a pattern this file accepts, else
 * why not: an unterminated '[', an unknown [:class:], "**". Pure. */
const char *config_check_pattern(const char *pattern);

const char *khugepaged_mode_name(enum khugepaged_mode m);
const char *thp_scope_name(enum thp_scope s); /* "kernel", "madvise", "always" */
const char *run_mode_name(enum run_mode m);   /* "collapse", "observe" */
/* The khugepaged mode a configuration puts in force: keep in observe mode
 * (no knob is written), else its khugepaged =. */
enum khugepaged_mode config_khugepaged_in_force(const struct config *c);
