/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hugecollapsed: main() and the command line. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_hier.h"
#include "config.h"
#include "engine.h"
#include "exit_status.h"
#include "kernel_features.h"
#include "khugepaged.h"
#include "log.h"
#include "metrics.h"
#include "paths.h"
#include "privilege.h"
#include "thp_policy.h"
#include "report.h"
#include "service.h"
#include "status.h"

#define MAX_PIDS 4096

static void usage(FILE *f)
{
	fprintf(f, "Usage:\n"
		   "  hugecollapsed [--config PATH] [-v]            run the daemon (foreground)\n"
		   "  hugecollapsed --once [--dry-run] [--pid PID]... [--json] [--sample-ms N]\n"
		   "                [--config PATH] [-v]            one pass, then exit\n"
		   "  hugecollapsed --check-config [--config PATH]  validate the configuration\n"
		   "  hugecollapsed --status [--json] [--config PATH]\n"
		   "                                                coverage and progress from the metrics file\n"
		   "  hugecollapsed --restore [--config PATH]       put back the khugepaged knobs a\n"
		   "                                                daemon that died left changed\n"
		   "  hugecollapsed --version | --help\n"
		   "\n"
		   "For testing (any mode that reads the kernel):\n"
		   "  --sysfs-thp DIR   the THP sysfs directory instead of /sys/kernel/mm/transparent_hugepage\n"
		   "  --pagemap-read    read page tables with pagemap reads (as before Linux 6.7), not PAGEMAP_SCAN\n"
		   "\n"
		   "Collapses hot, not-yet-huge 2 MiB ranges of processes into transparent huge\n"
		   "pages with process_madvise(MADV_COLLAPSE), hottest first. See hugecollapsed(8).\n");
}

struct cli {
	bool once, dry_run, json, verbose, check_config, status, restore;
	const char *config;
	unsigned sample_ms;
	struct hc_paths paths; /* the real ones, or --sysfs-thp, --pagemap-read */
	pid_t pids[MAX_PIDS];
	size_t npids;
};

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *e;

	errno = 0;
	if (!*s || *s == '-')
		return -1;
	*out = strtoul(s, &e, 10);
	return errno || *e || *out > max ? -1 : 0;
}

/* Returns 0, or EXIT_USAGE after printing why. */
static int parse_cli(int argc, char **argv, struct cli *c)
{
	enum {
		OPT_ONCE = 256,
		OPT_DRY_RUN,
		OPT_PID,
		OPT_JSON,
		OPT_SAMPLE_MS,
		OPT_CHECK,
		OPT_STATUS,
		OPT_RESTORE,
		OPT_VERSION,
		OPT_SYSFS_THP,
		OPT_PAGEMAP_READ,
	};
	static const struct option opts[] = {
	    {"once", no_argument, NULL, OPT_ONCE},
	    {"dry-run", no_argument, NULL, OPT_DRY_RUN},
	    {"pid", required_argument, NULL, OPT_PID},
	    {"json", no_argument, NULL, OPT_JSON},
	    {"sample-ms", required_argument, NULL, OPT_SAMPLE_MS},
	    {"config", required_argument, NULL, 'c'},
	    {"check-config", no_argument, NULL, OPT_CHECK},
	    {"status", no_argument, NULL, OPT_STATUS},
	    {"restore", no_argument, NULL, OPT_RESTORE},
	    {"verbose", no_argument, NULL, 'v'},
	    {"version", no_argument, NULL, OPT_VERSION},
	    {"sysfs-thp", required_argument, NULL, OPT_SYSFS_THP},
	    {"pagemap-read", no_argument, NULL, OPT_PAGEMAP_READ},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	unsigned long v;
	int o;

	c->sample_ms = 500;
	hc_paths_default(&c->paths);
	while ((o = getopt_long(argc, argv, "c:vh", opts, NULL)) != -1) {
		switch (o) {
		case OPT_ONCE:
			c->once = true;
			break;
		case OPT_DRY_RUN:
			c->dry_run = true;
			break;
		case OPT_JSON:
			c->json = true;
			break;
		case OPT_CHECK:
			c->check_config = true;
			break;
		case OPT_STATUS:
			c->status = true;
			break;
		case OPT_RESTORE:
			c->restore = true;
			break;
		case 'v':
			c->verbose = true;
			break;
		case 'c':
			c->config = optarg;
			break;
		case OPT_SYSFS_THP:
			if (!*optarg) {
				fprintf(stderr, "hugecollapsed: --sysfs-thp: an empty directory name\n");
				return EXIT_USAGE;
			}
			c->paths.thp = optarg;
			break;
		case OPT_PAGEMAP_READ:
			c->paths.pagemap_read = true;
			break;
		case OPT_PID:
			if (parse_uint(optarg, INT_MAX, &v) < 0 || v == 0) {
				fprintf(stderr, "hugecollapsed: --pid: '%s' is not a process ID\n", optarg);
				return EXIT_USAGE;
			}
			if (c->npids == MAX_PIDS) {
				fprintf(stderr, "hugecollapsed: at most %d --pid options\n", MAX_PIDS);
				return EXIT_USAGE;
			}
			c->pids[c->npids++] = (pid_t)v;
			break;
		case OPT_SAMPLE_MS:
			if (parse_uint(optarg, 600000, &v) < 0) {
				fprintf(stderr, "hugecollapsed: --sample-ms: '%s' is not 0..600000\n", optarg);
				return EXIT_USAGE;
			}
			c->sample_ms = (unsigned)v;
			break;
		case OPT_VERSION:
			printf("hugecollapsed %s\n", HC_VERSION);
			exit(EXIT_OK);
		case 'h':
			usage(stdout);
			exit(EXIT_OK);
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hugecollapsed: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if ((c->dry_run || c->npids || (c->json && !c->status)) && !c->once) {
		fprintf(stderr, "hugecollapsed: --dry-run and --pid go with --once, --json with --once or --status\n");
		return EXIT_USAGE;
	}
	if (c->once + c->check_config + c->status + c->restore > 1) {
		fprintf(stderr, "hugecollapsed: --once, --check-config, --status and --restore exclude each other\n");
		return EXIT_USAGE;
	}
	return 0;
}

static int load_config(const struct cli *c, struct config *cfg)
{
	char err[1024];

	/* Without --config a missing default file means built-in defaults,
	 * except for --check-config: a file that is not there is not valid. */
	bool missing_ok = !c->config && !c->check_config;

	if (config_load(c->config ? c->config : HC_DEFAULT_CONFIG, missing_ok, false, cfg, err, sizeof(err)) < 0) {
		log_err("%s", err);
		return -1;
	}
	/* A rule no process can match is an error, not a silent no-op. */
	if (!c->status && cgroup_rules_verify(cfg, c->paths.proc, err, sizeof(err)) < 0) {
		log_err("%s", err);
		config_free(cfg);
		return -1;
	}
	return 0;
}

/* --once: the policy line with -v, and always the warning when the scope
 * allows nothing (a daemon in khugepaged = off mode may run beside us: its
 * record is not ours, so this reads the live policy). */
static void log_thp_policy(const struct hc_paths *paths, const struct config *cfg, bool prctl_exact)
{
	struct thp_state st;
	char line[512];

	if (thp_state_read(paths->thp, NULL, &st) < 0)
		return;
	if (thp_policy_describe(&st, cfg->defaults.scope, prctl_exact, line, sizeof(line)))
		log_debug("%s", line);
	else
		log_warn("%s; set [collapse] scope = madvise (MADV_HUGEPAGE memory) or always to collapse anyway",
			 line);
}

static int run_once(const struct cli *c)
{
	struct pass_options o = {.unlimited = true, .pids = c->pids, .npids = c->npids};
	struct timespec ts = {c->sample_ms / 1000, (long)(c->sample_ms % 1000) * 1000000L};
	struct pass_stats ps;
	struct engine_stats st;
	struct kernel_features kf;
	struct config cfg;
	struct engine e;
	char msg[512];
	int r;

	if (load_config(c, &cfg) < 0)
		return EXIT_CONFIG;
	/* mode = observe makes every --once a dry run. */
	o.dry_run = c->dry_run || cfg.mode == RUN_OBSERVE;
	if (check_privileges(!o.dry_run, msg, sizeof(msg)) < 0) {
		log_err("%s", msg);
		config_free(&cfg);
		return EXIT_PRIVILEGE;
	}
	for (size_t i = 0; i < c->npids; i++)
		if (kill(c->pids[i], 0) < 0 && errno == ESRCH) {
			log_err("--pid %d: no such process", (int)c->pids[i]);
			config_free(&cfg);
			return EXIT_ERROR;
		}
	/* A dry run needs no MADV_COLLAPSE: it shows what would be done. */
	if (kernel_features_start(c->paths.thp, KHUGEPAGED_KEEP, !log_is_verbose(), &kf) < 0 && !o.dry_run) {
		config_free(&cfg);
		return EXIT_ERROR;
	}
	r = engine_init(&e, &cfg, &c->paths);
	if (r < 0) {
		log_err("cannot start: %s", strerror(-r));
		config_free(&cfg);
		return EXIT_ERROR;
	}
	e.no_except_advised = !kf.except_advised;
	/* Every process is older than --once: only the kernel's own record
	 * of the prctl mode is exact for them. */
	r = engine_prctl_open(&e);
	if (r < 0)
		log_debug("no BPF prctl iterator (%s): prctl modes are inferred", strerror(-r));
	log_thp_policy(&c->paths, &cfg, r == 0);
	/* Two samples sample_ms apart give each process's activity. */
	r = engine_sample(&e);
	if (r == 0) {
		nanosleep(&ts, NULL);
		r = engine_pass(&e, &o, &ps);
	}
	engine_stats_get(&e, &st);
	if (r < 0)
		log_err("pass failed: %s", strerror(-r));
	else if (c->json)
		report_json(stdout, &st, &o, &ps, o.dry_run);
	else
		report_text(stdout, &st, &o, &ps, o.dry_run || log_is_verbose());
	engine_free(&e);
	config_free(&cfg);
	if (r < 0)
		return EXIT_ERROR;
	return ps.missing_privilege ? EXIT_PRIVILEGE : EXIT_OK;
}

/* --restore: after a daemon died, from its state file. A configuration that
 * no longer loads must not keep the knobs changed: fall back to the default
 * state file then. */
static int run_restore(const struct cli *c)
{
	struct config cfg;
	int r;

	if (load_config(c, &cfg) < 0) {
		config_defaults(&cfg);
		log_warn("restoring from the default state file %s", cfg.state_file);
	}
	r = cfg.state_file[0] ? khugepaged_restore_from_file(cfg.state_file, c->paths.thp) : 0;
	config_free(&cfg);
	return r < 0 ? EXIT_ERROR : EXIT_OK;
}

int main(int argc, char **argv)
{
	struct cli c = {0};
	struct config cfg;
	int r;

	log_init();
	/* A closed stdout or stderr (a pager that quit, a pipe whose reader
	 * died) fails a write with EPIPE instead of killing us with the
	 * khugepaged knobs still changed. */
	signal(SIGPIPE, SIG_IGN);
	r = parse_cli(argc, argv, &c);
	if (r)
		return r;
	log_set_verbose(c.verbose);
	if (c.check_config) {
		if (load_config(&c, &cfg) < 0)
			return EXIT_CONFIG;
		printf("%s: OK (%zu cgroup policies%s)\n", cfg.path ? cfg.path : "built-in defaults", cfg.nrules,
		       cfg.mode == RUN_OBSERVE ? ", mode = observe: nothing is collapsed, no knob is written" : "");
		config_free(&cfg);
		return EXIT_OK;
	}
	if (c.status) {
		if (load_config(&c, &cfg) < 0)
			return EXIT_CONFIG;
		r = status_run(stdout, cfg.metrics_file, c.json); /* status.h */
		config_free(&cfg);
		return r < 0 ? EXIT_ERROR : EXIT_OK;
	}
	if (c.restore)
		return run_restore(&c);
	if (c.once)
		return run_once(&c);
	return service_run(c.config ? c.config : HC_DEFAULT_CONFIG, &c.paths);
}
