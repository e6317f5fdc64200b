/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The news fds' io sources; see the header. */
#include "watch_sources.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "cold_watch.h"
#include "fault_doorbell.h"

static int add_fd(struct watch_sources *ws, sd_event *ev, int fd, sd_event_io_handler_t fn, void *userdata)
{
	int r = sd_event_add_io(ev, &ws->v[ws->n], fd, EPOLLIN, fn, userdata);

	if (r < 0)
		return r;
	ws->n++;
	return sd_event_source_set_priority(ws->v[ws->n - 1], SD_EVENT_PRIORITY_IDLE);
}

int watch_sources_add(struct watch_sources *ws, sd_event *ev, const struct fault_doorbell *d,
		      const struct cold_watch *w, sd_event_io_handler_t fn, void *userdata)
{
	int r = 0;

	ws->doorbell_opens = d->opens;
	ws->cold_opens = w->opens;
	ws->cold_ncpu = w->ncpu;
	if (fault_doorbell_nfds(d) + w->ncpu == 0)
		return 0;
	ws->v = calloc((size_t)fault_doorbell_nfds(d) + (size_t)w->ncpu, sizeof(sd_event_source *));
	if (!ws->v)
		return -ENOMEM;
	for (int i = 0; i < fault_doorbell_nfds(d) && r >= 0; i++)
		r = add_fd(ws, ev, fault_doorbell_fd(d, i), fn, userdata);
	for (int i = 0; i < w->ncpu && r >= 0; i++)
		r = add_fd(ws, ev, cold_watch_fd(w, i), fn, userdata);
	return r;
}

void watch_sources_drop(struct watch_sources *ws)
{
	for (int i = 0; i < ws->n; i++)
		sd_event_source_disable_unref(ws->v[i]);
	free(ws->v);
	ws->v = NULL;
	ws->n = 0;
}

void watch_sources_enable(struct watch_sources *ws, int enabled)
{
	for (int i = 0; i < ws->n; i++)
		sd_event_source_set_enabled(ws->v[i], enabled);
}

bool watch_sources_stale(const struct watch_sources *ws, const struct fault_doorbell *d, const struct cold_watch *w)
{
	return d->opens != ws->doorbell_opens || w->opens != ws->cold_opens || w->ncpu != ws->cold_ncpu;
}
