/* SPDX-License-Identifier: GPL-2.0-or-later */
/* watch_sources: the event loop's io sources for the fds that bring news,
 * the page-fault doorbell's (fault_doorbell.h: one per CPU, or its
 * per-process filter's one) and the MADV_COLD/opt-in
 * observer's (cold_watch.h), one per CPU each. Both open their events
 * again on CPU hotplug (and the observer on a reload): watch_sources_stale()
 * tells when the sources must be built again for the new fds. */
#pragma once
#include <stdbool.h>
#include <systemd/sd-event.h>

struct fault_doorbell;
struct cold_watch;

struct watch_sources {
	sd_event_source **v;
	int n;
	/* What they were built for. */
	unsigned doorbell_opens, cold_opens;
	int cold_ncpu;
};

/* One io source per fd of d and of w (either may have none), calling fn
 * with userdata, at idle priority. 0 or -errno (then some may be added:
 * watch_sources_drop() frees them). */
int watch_sources_add(struct watch_sources *ws, sd_event *ev, const struct fault_doorbell *d,
		      const struct cold_watch *w, sd_event_io_handler_t fn, void *userdata);
void watch_sources_drop(struct watch_sources *ws);
void watch_sources_enable(struct watch_sources *ws, int enabled);
/* Whether d or w opened their events again since the sources were built. */
bool watch_sources_stale(const struct watch_sources *ws, const struct fault_doorbell *d, const struct cold_watch *w);
