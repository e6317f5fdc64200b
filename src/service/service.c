/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon: an sd-event loop around engine_pass(), with sd_notify,
 * watchdog, SIGHUP reload and a clean SIGTERM. */
#include "service.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "cgroup2.h"
#include "cgroup_hier.h"
#include "coverage_metrics.h"
#include "config.h"
#include "engine.h"
#include "exit_status.h"
#include "kernel_features.h"
#include "khugepaged.h"
#include "log.h"
#include "metrics.h"
#include "metrics_schedule.h"
#include "news_gate.h"
#include "pass_backoff.h"
#include "privilege.h"
#include "producer.h"
#include "thp_policy.h"
#include "units.h"
#include "watch_sources.h"

struct service {
	const char *config_path;
	const struct hc_paths *paths;
	struct config cfg;
	struct engine engine;
	struct khugepaged_saved khp;
	struct kernel_features kf; /* detected at start */
	sd_event *event;
	sd_event_source *pass_source; /* a timer (back to back: the fallback tick) */
	sd_event_source *again;       /* back to back: the next pass right away */
	sd_event_source *rearm;       /* back to back: listen to the bells again */
	struct watch_sources bells;   /* back to back: the doorbell and observer fds */
	double last_bell;             /* monotonic seconds of the last bell wake-up */
	bool back_to_back;
	/* Timer: the news sources (doorbell and observer fds) and their gate
	 * (news_gate.h). */
	struct watch_sources news;
	sd_event_source *news_later; /* a storm: look and listen again at the gap's end */
	struct news_gate news_gate;
	struct pass_backoff backoff;         /* timer: intervals until the next pass (pass_backoff.h) */
	bool metrics_failed;                 /* logged once until it works again */
	struct metrics_memory metrics_mem;   /* stable series from one write to the next */
	struct cgroup2_root cgroup2;         /* to forget the metrics of removed cgroups */
	double max_pass_s;                   /* bound on one dispatch: a quarter of the watchdog */
	struct metrics_schedule report_when; /* when the metrics file and STATUS= are rewritten */
	sd_event_source *report_later;       /* a change within the minimum gap: written at its end */
	struct metrics_reload reload;
	char reload_err[1024]; /* why the last reload failed, for STATUS= */
	uint64_t logged_would; /* observe mode: what the last pass line said (log_pass) */
	unsigned logged_would_procs;
	int exit_status;
};

static void notify_status(struct service *s)
{
	struct engine_stats es;
	const struct engine_stats *e = &es;

	engine_stats_get(&s->engine, &es);

	/* A failed reload stays in the line until one succeeds: systemctl
	 * status shows it, not only the journal. */
	if (s->cfg.mode == RUN_OBSERVE) {
		sd_notifyf(0,
			   "STATUS=pass %llu, observe only: would collapse %.0f MiB in %u processes, %u active "
			   "processes, no knob changed%s%s",
			   (unsigned long long)e->passes, e->last.would_collapse_bytes / MIB,
			   e->last.procs_would_collapse, e->last.procs_active,
			   s->reload.last_ok ? "" : "; RELOAD FAILED, previous configuration in force: ",
			   s->reload.last_ok ? "" : s->reload_err);
		return;
	}
	sd_notifyf(0, "STATUS=pass %llu: %.0f MiB collapsed (%.0f this pass), %u active processes, khugepaged %s%s%s%s",
		   (unsigned long long)e->passes, e->total.collapsed_bytes / MIB, e->last.collapsed_bytes / MIB,
		   e->last.procs_active, khugepaged_mode_name(s->khp.mode),
		   e->last.backing_off ? ", some processes back off after ENOMEM" : "",
		   s->reload.last_ok ? "" : "; RELOAD FAILED, previous configuration in force: ",
		   s->reload.last_ok ? "" : s->reload_err);
}

static void write_metrics(struct service *s)
{
	struct engine_stats st;
	int r;

	/* A removed cgroup's series goes (and a new cgroup of the same name
	 * starts from 0): one fstatat per cgroup that ever had a collapse. */
	engine_prune_cgroups(&s->engine, &s->cgroup2);
	engine_stats_get(&s->engine, &st);
	r = metrics_write(s->cfg.metrics_file, &st, s->khp.mode, &s->metrics_mem);

	if (r < 0 && !s->metrics_failed)
		log_err("cannot write metrics file %s: %s (will keep trying)", s->cfg.metrics_file, strerror(-r));
	else if (r == 0 && s->metrics_failed)
		log_info("metrics file %s written again", s->cfg.metrics_file);
	s->metrics_failed = r < 0;
}

/* Monotonic seconds of the next scheduled pass: now if one is queued (back
 * to back), the timer's if it is armed, INFINITY if none is (news passes
 * are not scheduled). */
static double next_pass_at(const struct service *s)
{
	int on = SD_EVENT_OFF;
	uint64_t usec;

	if (s->again && sd_event_source_get_enabled(s->again, &on) >= 0 && on != SD_EVENT_OFF)
		return 0;
	if (!s->pass_source || sd_event_source_get_enabled(s->pass_source, &on) < 0 || on == SD_EVENT_OFF ||
	    sd_event_source_get_time(s->pass_source, &usec) < 0)
		return INFINITY;
	return (double)usec / 1e6;
}

/* The metrics file and STATUS=, when metrics_schedule.h says: at once
 * after a change a reader acts on, else every metrics_interval_s. Called
 * after a pass, once the next is scheduled: a write that is not due yet
 * must not wait past its time for a pass that comes later (a backed-off
 * timer, a long interval). The interval's refresh is then written now, a
 * little early, rather than by a wake-up of its own; a change waits for
 * the gap's end in a one-shot timer. */
static void report(struct service *s)
{
	double now = monotonic_seconds(), at;
	struct engine_stats st;
	uint64_t digest;

	engine_stats_get(&s->engine, &st);
	digest = metrics_digest(&st, s->khp.mode, &s->reload);
	if (!metrics_due(&s->report_when, digest, now, s->cfg.metrics_interval_s)) {
		at = metrics_due_at(&s->report_when, digest, s->cfg.metrics_interval_s);
		if (at >= next_pass_at(s))
			return;
		if (digest != s->report_when.digest) {
			sd_event_source_set_time(s->report_later, (uint64_t)(at * 1e6) + 1);
			sd_event_source_set_enabled(s->report_later, SD_EVENT_ONESHOT);
			return;
		}
	}
	write_metrics(s);
	notify_status(s);
	metrics_written(&s->report_when, digest, now);
	sd_event_source_set_enabled(s->report_later, SD_EVENT_OFF);
}

static int on_report_later(sd_event_source *src, uint64_t usec, void *userdata)
{
	(void)src;
	(void)usec;
	report(userdata);
	return 0;
}

static uint64_t interval_usec(const struct service *s)
{
	return (uint64_t)s->cfg.scan_interval_ms * 1000;
}

/* SIGTERM/SIGINT are blocked and read through a signalfd, so they wait as
 * pending: a long pass asks between processes, to stop within 2 s. It asks
 * the kernel at most every STOP_ASK_S (a pass asks before each process,
 * VMA range and call: tens of sigpending() a pass); once seen, the answer
 * stays yes, since the loop exits when it reads the signal. */
#define STOP_ASK_S 0.01

static bool stop_requested(void)
{
	static double asked_at = -1.0;
	static bool stop;
	double now = monotonic_seconds();
	sigset_t pending;

	if (stop || (asked_at >= 0 && now - asked_at < STOP_ASK_S))
		return stop;
	asked_at = now;
	stop = sigpending(&pending) == 0 && (sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1);
	return stop;
}

/* At most one line per pass, structured (HC_MSGID_PASS and the numbers as
 * fields): when it collapsed something, in observe mode when what it would
 * collapse changed, and every pass that did work with -v. The per-process
 * lines behind it are debug (dispatch.c). */
static void log_pass(struct service *s, const struct pass_stats *ps)
{
	bool observe = s->cfg.mode == RUN_OBSERVE;
	bool changed = ps->would_collapse_bytes != s->logged_would || ps->procs_would_collapse != s->logged_would_procs;
	char f[8][64];
	const char *fields[8];
	unsigned long long pass = (unsigned long long)engine_passes(&s->engine);

	if (ps->idle || !(log_is_verbose() || (observe ? changed : ps->collapsed_bytes > 0)))
		return;
	snprintf(f[0], sizeof(f[0]), "HUGECOLLAPSED_PASS=%llu", pass);
	snprintf(f[1], sizeof(f[1]), "HUGECOLLAPSED_COLLAPSED_BYTES=%llu", (unsigned long long)ps->collapsed_bytes);
	snprintf(f[2], sizeof(f[2]), "HUGECOLLAPSED_WOULD_COLLAPSE_BYTES=%llu",
		 (unsigned long long)ps->would_collapse_bytes);
	snprintf(f[3], sizeof(f[3]), "HUGECOLLAPSED_PROCESSES_SCANNED=%u", ps->procs_scanned);
	snprintf(f[4], sizeof(f[4]), "HUGECOLLAPSED_PROCESSES_TOTAL=%u", ps->procs_total);
	snprintf(f[5], sizeof(f[5]), "HUGECOLLAPSED_SCAN_USEC=%.0f", ps->scan_s * 1e6);
	snprintf(f[6], sizeof(f[6]), "HUGECOLLAPSED_COLLAPSE_USEC=%.0f", ps->collapse_s * 1e6);
	snprintf(f[7], sizeof(f[7]), "HUGECOLLAPSED_MODE=%s", run_mode_name(s->cfg.mode));
	for (int i = 0; i < 8; i++)
		fields[i] = f[i];
	s->logged_would = ps->would_collapse_bytes;
	s->logged_would_procs = ps->procs_would_collapse;
	if (observe)
		log_fields(LOG_INFO, HC_MSGID_PASS, fields, 8,
			   "pass %llu (observe only): would collapse %.1f MiB in %u processes; scanned %u of %u "
			   "processes (%u unchanged) in %.1f ms",
			   pass, ps->would_collapse_bytes / MIB, ps->procs_would_collapse, ps->procs_scanned,
			   ps->procs_total, ps->procs_unchanged, ps->scan_s * 1e3);
	else
		log_fields(LOG_INFO, HC_MSGID_PASS, fields, 8,
			   "pass %llu: collapsed %.1f MiB; scanned %u of %u processes (%u unchanged) in %.1f ms, "
			   "collapse %.1f ms",
			   pass, ps->collapsed_bytes / MIB, ps->procs_scanned, ps->procs_total, ps->procs_unchanged,
			   ps->scan_s * 1e3, ps->collapse_s * 1e3);
}

/* Returns true if the pass was idle; *out (if not NULL) gets its stats.
 * only[0..nonly): a news pass, which scans those alone (0: every one). */
static bool run_pass(struct service *s, const pid_t *only, size_t nonly, struct pass_stats *out)
{
	struct pass_options o = {.max_seconds = s->max_pass_s,
				 .scan_only = only,
				 .nscan_only = nonly,
				 .allow_idle = true,
				 .interrupted = stop_requested,
				 .dry_run = s->cfg.mode == RUN_OBSERVE};
	struct pass_stats ps;
	int r;

	r = engine_pass(&s->engine, &o, &ps);
	if (r < 0)
		log_err("pass %llu failed: %s", (unsigned long long)engine_passes(&s->engine), strerror(-r));
	log_pass(s, &ps);
	if (out)
		*out = ps;
	return ps.idle;
}

/* Back to back (scan_interval_ms = 0), a pass runs when something
 * happened, never in a loop over nothing: when the fault doorbell's poll
 * wakes (DOORBELL_WAKEUP samples on one CPU), on a tick (BACK_TO_BACK_TICK_S:
 * memory mapped without faults, the rolling rescan, work left over), and
 * right away again only after a pass that collapsed something or ran out
 * of time. Without a doorbell (no perf events), the tick is all there is,
 * and each pass samples every process: at 10 ms that was 60% of a CPU at
 * 1,000 processes (issue 16), so it is as slow as the default interval;
 * work still runs again at once. */
#define BACK_TO_BACK_TICK_S      0.5
#define BACK_TO_BACK_TICK_NOBELL 1.0

static uint64_t tick_usec(const struct service *s)
{
	if (!s->back_to_back)
		return interval_usec(s);
	return (uint64_t)((engine_doorbell(&s->engine)->ncpu ? BACK_TO_BACK_TICK_S : BACK_TO_BACK_TICK_NOBELL) * 1e6);
}

static int on_doorbell(sd_event_source *src, int fd, uint32_t revents, void *userdata);

/* Back to back, the observer's fds ring like the doorbell's: an opt-in
 * (MADV_HUGEPAGE, a prctl clear) runs a pass at once too. */
static int add_bells(struct service *s)
{
	return watch_sources_add(&s->bells, s->event, engine_doorbell(&s->engine), engine_cold(&s->engine), on_doorbell,
				 s);
}

/* A pass may open the doorbell's or the observer's events again (CPU
 * hotplug, a reload): listen to the fds there are now. Without them the
 * tick still runs. */
static void follow_bells(struct service *s)
{
	if (!watch_sources_stale(&s->bells, engine_doorbell(&s->engine), engine_cold(&s->engine)))
		return;
	watch_sources_drop(&s->bells);
	if (add_bells(s) < 0) {
		watch_sources_drop(&s->bells);
		log_err("cannot listen to the page-fault doorbell and the observer after they were reopened");
	}
}

static void back_to_back_pass(struct service *s)
{
	bool idle = run_pass(s, NULL, 0, NULL);
	struct engine_stats es;
	const struct engine_stats *e = &es;

	engine_stats_get(&s->engine, &es);
	follow_bells(s);
	if (!idle && (e->last.collapsed_bytes || e->resume_pid))
		sd_event_source_set_enabled(s->again, SD_EVENT_ONESHOT);
	report(s);
}

static int on_again(sd_event_source *src, void *userdata)
{
	(void)src;
	back_to_back_pass(userdata);
	return 0;
}

/* Faults arrive in floods on a busy machine (a build wakes the doorbell
 * hundreds of times a second): after a second wake-up within BELL_GAP_S,
 * the bells are not listened to for BELL_GAP_S, and what rang meanwhile
 * wakes the loop right after (epoll asks perf again when the fds are added
 * back). Wake-ups further apart (a shell's commands) cost no epoll_ctl and
 * no timer: perf's poll reports each wake-up once, so the fds may stay. */
#define BELL_GAP_S 0.02

static int on_doorbell(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct service *s = userdata;
	double now = monotonic_seconds();
	bool flood = now - s->last_bell < BELL_GAP_S;

	(void)src;
	(void)fd;
	(void)revents;
	s->last_bell = now;
	engine_count_wakeup(&s->engine);
	back_to_back_pass(s);
	if (!flood)
		return 0;
	watch_sources_enable(&s->bells, SD_EVENT_OFF);
	sd_event_source_set_time_relative(s->rearm, (uint64_t)(BELL_GAP_S * 1e6));
	sd_event_source_set_enabled(s->rearm, SD_EVENT_ONESHOT);
	return 0;
}

static int on_rearm(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct service *s = userdata;

	(void)src;
	(void)usec;
	watch_sources_enable(&s->bells, SD_EVENT_ON);
	return 0;
}

/* With a timer (scan_interval_ms > 0), news runs a pass at once instead
 * of at the next tick (news_gate.h says what news is and bounds what a
 * storm of it costs): the doorbell's poll wakes after DOORBELL_WAKEUP
 * records on a CPU, the observer's after each record. A wake-up
 * NEWS_GAP_S or more after the last look is looked at; one sooner (a storm:
 * a program may call madvise() in a loop, each call a record) stops the
 * listening until the gap's end, when a timer looks and listens again
 * (epoll then asks perf for what came meanwhile). Wake-ups further apart
 * cost no epoll_ctl(): perf's poll reports each one once. */
static void follow_news(struct service *s);

/* Something happened (news, a reload): a timer that backed off after quiet
 * passes (pass_backoff.h) runs the next within one interval again. */
static void pass_within_interval(struct service *s)
{
	if (!pass_backoff_reset(&s->backoff) || !s->pass_source || s->back_to_back)
		return;
	sd_event_source_set_time_relative(s->pass_source, interval_usec(s));
	sd_event_source_set_enabled(s->pass_source, SD_EVENT_ONESHOT);
}

static void look_for_news(struct service *s)
{
	double now = monotonic_seconds();
	const pid_t *news;
	size_t n;
	struct pass_stats ps;

	news_gate_looked(&s->news_gate, now);
	n = engine_news(&s->engine, NEWS_FAULT_SAMPLES, &news);
	if (!n || !news_gate_may_pass(&s->news_gate, now))
		return;
	engine_count_news(&s->engine);
	/* Only the news is scanned: the rest waits for the timer. */
	run_pass(s, news, news ? n : 0, &ps);
	news_gate_ran(&s->news_gate, now, ps.scan_s);
	follow_news(s);
	pass_within_interval(s);
	report(s);
}

static int on_news(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct service *s = userdata;
	double wait = news_gate_wait(&s->news_gate, monotonic_seconds());

	(void)src;
	(void)fd;
	(void)revents;
	if (wait <= 0) {
		look_for_news(s);
		return 0;
	}
	watch_sources_enable(&s->news, SD_EVENT_OFF);
	sd_event_source_set_time_relative(s->news_later, (uint64_t)(wait * 1e6) + 1);
	sd_event_source_set_enabled(s->news_later, SD_EVENT_ONESHOT);
	return 0;
}

static int on_news_later(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct service *s = userdata;

	(void)src;
	(void)usec;
	watch_sources_enable(&s->news, SD_EVENT_ON);
	look_for_news(s);
	return 0;
}

static void drop_news(struct service *s)
{
	watch_sources_drop(&s->news);
	s->news_later = sd_event_source_disable_unref(s->news_later);
}

/* One io source per doorbell and observer fd, and the timer of a storm. */
static int add_news(struct service *s)
{
	int r = watch_sources_add(&s->news, s->event, engine_doorbell(&s->engine), engine_cold(&s->engine), on_news, s);

	if (r >= 0 && s->news.n)
		r = sd_event_add_time_relative(s->event, &s->news_later, CLOCK_MONOTONIC, (uint64_t)(NEWS_GAP_S * 1e6),
					       1, on_news_later, s);
	if (r >= 0 && s->news_later)
		r = sd_event_source_set_enabled(s->news_later, SD_EVENT_OFF);
	if (r >= 0 && s->news_later)
		r = sd_event_source_set_priority(s->news_later, SD_EVENT_PRIORITY_IDLE);
	return r;
}

/* The doorbell's and the observer's events are opened again on CPU
 * hotplug, the observer's on a reload too: listen to the fds there are
 * now. */
static void follow_news(struct service *s)
{
	if (s->back_to_back || !s->pass_source ||
	    !watch_sources_stale(&s->news, engine_doorbell(&s->engine), engine_cold(&s->engine)))
		return;
	drop_news(s);
	if (add_news(s) < 0) {
		drop_news(s);
		log_err("cannot listen for news (the page-fault doorbell, the observer): passes run on the timer only");
	}
}

static void drop_pass_sources(struct service *s)
{
	s->pass_source = sd_event_source_disable_unref(s->pass_source);
	s->again = sd_event_source_disable_unref(s->again);
	s->rearm = sd_event_source_disable_unref(s->rearm);
	watch_sources_drop(&s->bells);
	drop_news(s);
}

static int add_doorbell_sources(struct service *s)
{
	int r = add_bells(s);

	if (r < 0)
		return r;
	r = sd_event_add_defer(s->event, &s->again, on_again, s);
	if (r >= 0)
		r = sd_event_source_set_enabled(s->again, SD_EVENT_OFF);
	if (r >= 0)
		r = sd_event_source_set_priority(s->again, SD_EVENT_PRIORITY_IDLE);
	if (r >= 0)
		r = sd_event_add_time_relative(s->event, &s->rearm, CLOCK_MONOTONIC, (uint64_t)(BELL_GAP_S * 1e6), 1,
					       on_rearm, s);
	if (r >= 0)
		r = sd_event_source_set_enabled(s->rearm, SD_EVENT_OFF);
	return r;
}

/* The next pass is an interval after this one ends, so a slow pass never
 * queues up passes behind it. */
static int on_pass_timer(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct service *s = userdata;
	uint64_t next;

	(void)usec;
	if (s->back_to_back) {
		back_to_back_pass(s);
		next = tick_usec(s);
	} else {
		struct pass_stats ps;
		struct engine_stats es;

		run_pass(s, NULL, 0, &ps);
		follow_news(s);
		engine_stats_get(&s->engine, &es);
		next = pass_backoff_usec(pass_backoff_after(&s->backoff, pass_quiet(&ps, &es),
							    s->news.n && engine_doorbell(&s->engine)->ncpu),
					 interval_usec(s));
	}
	sd_event_source_set_time_relative(src, next);
	sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
	if (!s->back_to_back) /* back_to_back_pass() reported */
		report(s);
	return 0;
}

/* Passes run from a timer every scan_interval_ms, or back to back (see
 * above). At idle priority, signals and the watchdog always go first.
 * Called at start and after a reload. */
static int schedule_passes(struct service *s)
{
	bool back_to_back = interval_usec(s) == 0;
	int r = 0;

	if (s->pass_source && s->back_to_back == back_to_back)
		return 0;
	drop_pass_sources(s);
	pass_backoff_init(&s->backoff);
	s->back_to_back = back_to_back;
	if (back_to_back)
		r = add_doorbell_sources(s);
	if (back_to_back && r >= 0 && !engine_doorbell(&s->engine)->ncpu)
		log_info("scan_interval_ms = 0 without a page-fault doorbell: a pass every %.0f ms, and at once after "
			 "one that did work",
			 BACK_TO_BACK_TICK_NOBELL * 1e3);
	/* Accuracy 1 us: 0 would mean sd-event's default of 250 ms. */
	if (r >= 0)
		r = sd_event_add_time_relative(s->event, &s->pass_source, CLOCK_MONOTONIC, tick_usec(s), 1,
					       on_pass_timer, s);
	if (r >= 0)
		r = sd_event_source_set_priority(s->pass_source, SD_EVENT_PRIORITY_IDLE);
	if (r >= 0 && !back_to_back && add_news(s) < 0) {
		drop_news(s);
		log_err("cannot listen for news (the page-fault doorbell, the observer): passes run on the timer only");
	}
	return r;
}

static int on_watchdog(sd_event_source *src, uint64_t usec, void *userdata)
{
	uint64_t wd;

	(void)userdata;
	(void)usec;
	sd_notify(0, "WATCHDOG=1");
	/* A time source is one-shot: it needs re-arming, not just a new time. */
	if (sd_watchdog_enabled(0, &wd) > 0) {
		sd_event_source_set_time_relative(src, wd / 2);
		sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
	}
	return 0;
}

/* The prctl mode of each process decides whether its plain memory may be
 * collapsed under scope = always and after khugepaged = off: say where it
 * comes from. r: what engine_prctl_open() returned. */
static void log_prctl_source(int r)
{
	if (r == 0)
		log_info("prctl(PR_SET_THP_DISABLE) modes: read from each process's mm by a BPF task iterator "
			 "(loaded at the first process whose verdict depends on it)");
	else
		log_info("prctl(PR_SET_THP_DISABLE) modes: no BPF task iterator (%s); where THPeligible cannot tell, "
			 "a process counts as PR_THP_DISABLE_EXCEPT_ADVISED (prctl_unknown)",
			 strerror(-r));
}

/* Where coldness inside a VMA comes from (cold_watch.h): say it, so that
 * an operator knows which rule decides. */
static void cold_watch_apply_config(struct service *s)
{
	char why[128] = "";
	int r;

	if (!s->cfg.cold_watch) {
		if (cold_watch_active(engine_cold(&s->engine)))
			engine_cold_close(&s->engine);
		log_info("MADV_COLD/MADV_PAGEOUT ranges: not observed (cold_watch = no): coldness is judged per VMA "
			 "(min_referenced_pct) only");
		return;
	}
	if (cold_watch_active(engine_cold(&s->engine)))
		return;
	r = engine_cold_open(&s->engine, why, sizeof(why));
	if (r == 0)
		log_info("MADV_COLD/MADV_PAGEOUT ranges: observed by syscall tracepoints on %d CPUs (calls made "
			 "before now, by processes older than the daemon, are judged per VMA only)",
			 engine_cold(&s->engine)->ncpu);
	else
		log_info("MADV_COLD/MADV_PAGEOUT ranges: not observed (%s): coldness is judged per VMA "
			 "(min_referenced_pct) only",
			 why[0] ? why : strerror(-r));
}

/* One line on the THP policy that decides what is collapsed; a warning
 * naming the key to change when it allows nothing. */
static void log_thp_policy(const struct service *s)
{
	bool exact = engine_prctl_exact(&s->engine);
	struct thp_state st;
	char line[512];
	int r = thp_state_read(s->paths->thp, &s->khp, &st);

	if (r < 0) {
		log_warn("cannot read the THP policy from %s: %s", s->paths->thp, strerror(-r));
		return;
	}
	if (thp_policy_describe(&st, s->cfg.defaults.scope, exact, line, sizeof(line)))
		log_info("%s", line);
	else
		log_warn("%s; set [collapse] scope = madvise (MADV_HUGEPAGE memory) or always to collapse anyway",
			 line);
}

static const char *const reload_ok[] = {"HUGECOLLAPSED_RELOAD=ok"};

static void log_reload_failed(const char *why)
{
	static const char *const failed[] = {"HUGECOLLAPSED_RELOAD=failed"};

	log_fields(LOG_ERR, HC_MSGID_RELOAD, failed, 1, "reload failed, keeping the previous configuration: %s", why);
}

/* SIGHUP: a bad file keeps the whole old config. */
static int on_reload(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata)
{
	struct service *s = userdata;
	struct timespec ts;
	struct config next;
	char err[1024];

	(void)src;
	(void)si;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading %s",
		   (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000, s->config_path);
	s->reload.total++;
	s->reload.last_ok = config_load(s->config_path, false, false, &next, err, sizeof(err)) == 0;
	/* A file that parses can still be refused: rules no cgroup hierarchy
	 * here can match, or collapsing asked for (after a start in observe
	 * mode) on a kernel without MADV_COLLAPSE. Shown like a bad file. */
	if (s->reload.last_ok && (cgroup_rules_verify(&next, s->paths->proc, err, sizeof(err)) < 0 ||
				  (next.mode == RUN_COLLAPSE && !kernel_features_usable(&s->kf, err, sizeof(err))))) {
		config_free(&next);
		s->reload.last_ok = false;
	}
	if (!s->reload.last_ok) {
		s->reload.failures++;
		snprintf(s->reload_err, sizeof(s->reload_err), "%s", err);
		log_reload_failed(err);
	} else {
		bool policy_changed =
		    config_khugepaged_in_force(&next) != s->khp.mode || next.defaults.scope != s->cfg.defaults.scope;

		enum khugepaged_mode want = config_khugepaged_in_force(&next);

		/* One apply moves from the old mode to the new one: it puts back
		 * what the new mode leaves alone and keeps the recorded originals.
		 * Into observe mode that is keep: the knobs go back as a stop
		 * puts them; out of it, khugepaged = takes effect now. */
		if (want != s->khp.mode && khugepaged_apply(want, &s->khp, err, sizeof(err)) < 0)
			log_err("khugepaged = %s: %s; every khugepaged knob is back at its original",
				khugepaged_mode_name(want), err);
		else if (want != config_khugepaged_in_force(&s->cfg))
			kernel_features_warn_mthp(&s->kf, want);
		if (next.mode != s->cfg.mode)
			log_info("mode = %s from now on%s", run_mode_name(next.mode),
				 next.mode == RUN_OBSERVE ? ": nothing is collapsed, the khugepaged knobs are as found"
							  : "");
		if (strcmp(next.state_file, s->khp.state_file))
			log_warn("state_file: a change takes effect at the next start (still %s)",
				 s->khp.state_file[0] ? s->khp.state_file : "none");
		engine_set_config(&s->engine, &next);
		config_free(&s->cfg);
		s->cfg = next;
		/* The engine points at s->cfg's storage, which moved. */
		engine_set_config(&s->engine, &s->cfg);
		if (schedule_passes(s) < 0)
			log_err("cannot reschedule passes after reload");
		pass_within_interval(s);
		if (s->cfg.cold_watch != cold_watch_active(engine_cold(&s->engine)))
			cold_watch_apply_config(s);
		follow_news(s);
		log_fields(LOG_INFO, HC_MSGID_RELOAD, reload_ok, 1, "reloaded %s (%zu cgroup policies, mode = %s)",
			   s->config_path, s->cfg.nrules, run_mode_name(s->cfg.mode));
		if (policy_changed)
			log_thp_policy(s);
	}
	metrics_set_reload(&s->reload); /* metrics.h: written with the next pass */
	sd_notify(0, "READY=1");
	notify_status(s);
	return 0;
}

static int on_terminate(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata)
{
	struct service *s = userdata;

	(void)src;
	log_id(LOG_INFO, HC_MSGID_STOP, "received %s, stopping", strsignal((int)si->ssi_signo));
	sd_notify(0, "STOPPING=1");
	sd_event_exit(s->event, 0);
	return 0;
}

/* Blocked from the start, before khugepaged_apply(): a SIGTERM during the
 * start-up (the first sample of every process can take a while) waits,
 * pending, for the loop's signalfd, and the knobs are restored; unblocked
 * it would kill us with them changed. */
static void block_loop_signals(void)
{
	sigset_t ss;

	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGHUP);
	sigprocmask(SIG_BLOCK, &ss, NULL);
}

static int setup_loop(struct service *s)
{
	uint64_t wd;
	int r;

	r = sd_event_default(&s->event);
	if (r < 0)
		return r;
	if ((r = sd_event_add_signal(s->event, NULL, SIGTERM, on_terminate, s)) < 0 ||
	    (r = sd_event_add_signal(s->event, NULL, SIGINT, on_terminate, s)) < 0 ||
	    (r = sd_event_add_signal(s->event, NULL, SIGHUP, on_reload, s)) < 0)
		return r;
	news_gate_init(&s->news_gate);
	r = sd_event_add_time(s->event, &s->report_later, CLOCK_MONOTONIC, 0, 1, on_report_later, s);
	if (r >= 0)
		r = sd_event_source_set_enabled(s->report_later, SD_EVENT_OFF);
	if (r < 0)
		return r;
	r = schedule_passes(s);
	if (r < 0)
		return r;
	s->max_pass_s = 5;
	if (sd_watchdog_enabled(0, &wd) > 0) {
		if (wd / 4e6 < s->max_pass_s)
			s->max_pass_s = wd / 4e6;
		r = sd_event_add_time_relative(s->event, NULL, CLOCK_MONOTONIC, wd / 2, 0, on_watchdog, s);
		if (r < 0)
			return r;
		log_info("watchdog enabled: %.1f s", wd / 1e6);
	}
	return 0;
}

/* mode = observe: nothing is written to sysfs, not even the originals a
 * killed daemon left changed (that is --restore's job, or a collapsing
 * daemon's): say so, and what khugepaged = would have done. */
static void log_observe_start(const struct service *s)
{
	log_info("mode = observe: scanning and reporting only; nothing is collapsed and no THP or khugepaged knob "
		 "is written%s%s%s",
		 s->cfg.khugepaged != KHUGEPAGED_KEEP ? " (khugepaged = " : "",
		 s->cfg.khugepaged != KHUGEPAGED_KEEP ? khugepaged_mode_name(s->cfg.khugepaged) : "",
		 s->cfg.khugepaged != KHUGEPAGED_KEEP ? " is not applied)" : "");
	if (s->khp.state_file[0] && access(s->khp.state_file, F_OK) == 0)
		log_warn("%s records khugepaged knobs a daemon changed and did not put back; observe mode leaves "
			 "them as they are: hugecollapsed --restore puts them back",
			 s->khp.state_file);
}

int service_run(const char *config_path, const struct hc_paths *paths)
{
	struct service s = {.config_path = config_path,
			    .paths = paths,
			    .exit_status = EXIT_OK,
			    .cgroup2 = {.fd = -1},
			    .reload = {.last_ok = true}};
	struct producer self;
	char err[1024];
	bool observe;
	int r;

	block_loop_signals();
	if (config_load(config_path, false, false, &s.cfg, err, sizeof(err)) < 0) {
		log_err("%s", err);
		sd_notifyf(0, "STATUS=bad configuration: %s", err);
		return EXIT_CONFIG;
	}
	if (cgroup_rules_verify(&s.cfg, paths->proc, err, sizeof(err)) < 0) {
		log_err("%s", err);
		sd_notifyf(0, "STATUS=bad configuration: %s", err);
		config_free(&s.cfg);
		return EXIT_ERROR;
	}
	observe = s.cfg.mode == RUN_OBSERVE;
	if (check_privileges(!observe, err, sizeof(err)) < 0) {
		log_err("%s", err);
		sd_notifyf(0, "STATUS=%s", err);
		config_free(&s.cfg);
		return EXIT_PRIVILEGE;
	}
	/* Observe mode needs no MADV_COLLAPSE: it shows what would be done. */
	if (kernel_features_start(paths->thp, config_khugepaged_in_force(&s.cfg), false, &s.kf) < 0 && !observe) {
		sd_notifyf(0, "STATUS=no MADV_COLLAPSE on Linux %s: needs 6.1 or later", s.kf.release);
		config_free(&s.cfg);
		return EXIT_ERROR;
	}
	/* The real /proc, not a fixture root: who we are, for --status. */
	if (producer_self("/proc", &self) == 0)
		metrics_set_producer(&self);
	else
		log_warn("cannot read this daemon's identity from /proc: --status will not know it runs");
	r = khugepaged_init(&s.khp, s.cfg.state_file, paths->thp);
	if (r < 0)
		snprintf(err, sizeof(err), "state_file %s: %s", s.cfg.state_file, strerror(-r));
	if (observe)
		log_observe_start(&s);
	else
		khugepaged_log_state(paths->thp, s.cfg.khugepaged);
	if (r < 0 || (!observe && khugepaged_apply(s.cfg.khugepaged, &s.khp, err, sizeof(err)) < 0)) {
		log_err("khugepaged = %s: %s", khugepaged_mode_name(s.cfg.khugepaged), err);
		sd_notifyf(0, "STATUS=khugepaged = %s failed: %s", khugepaged_mode_name(s.cfg.khugepaged), err);
		config_free(&s.cfg);
		return EXIT_ERROR;
	}
	r = cgroup2_open(&s.cgroup2, paths->mountinfo);
	if (r < 0)
		log_info("no cgroup v2 mount found (%s): per-cgroup metrics of removed cgroups are kept", strerror(-r));
	else /* coverage_metrics.h: memory.stat where v2 has a memory controller */
		coverage_metrics_memory_stat(s.cgroup2.fd, s.cgroup2.root);
	r = engine_init(&s.engine, &s.cfg, paths);
	s.engine.dispatch.log_collapses = true;
	s.engine.khp = &s.khp; /* the policy from before khugepaged = off */
	s.engine.no_except_advised = !s.kf.except_advised;
	if (r == 0)
		log_prctl_source(engine_prctl_open(&s.engine));
	if (r == 0)
		cold_watch_apply_config(&s);
	log_thp_policy(&s);
	if (r == 0)
		r = engine_sample(&s.engine);
	if (r == 0)
		r = setup_loop(&s);
	if (r < 0) {
		log_err("cannot start: %s", strerror(-r));
		s.exit_status = EXIT_ERROR;
		goto out;
	}
	log_id(LOG_INFO, HC_MSGID_START,
	       "started: %s, mode = %s, a pass %u ms after the end of the last, budget %u MB/s, %zu cgroup policies",
	       config_path, run_mode_name(s.cfg.mode), s.cfg.scan_interval_ms, s.cfg.defaults.budget_mb_per_s,
	       s.cfg.nrules);
	sd_notify(0, "READY=1\nSTATUS=first sample taken, waiting for the first pass");
	r = sd_event_loop(s.event);
	if (r < 0) {
		log_err("event loop failed: %s", strerror(-r));
		s.exit_status = EXIT_ERROR;
	}
out:
	/* Release our descriptors first: restoring opens sysfs files, and a
	 * start that failed for want of descriptors must still restore. */
	drop_pass_sources(&s);
	s.report_later = sd_event_source_disable_unref(s.report_later);
	sd_event_unref(s.event);
	if (s.engine.procs)
		engine_free(&s.engine);
	cgroup2_close(&s.cgroup2);
	khugepaged_restore(&s.khp);
	metrics_memory_free(&s.metrics_mem);
	config_free(&s.cfg);
	return s.exit_status;
}
