/* SPDX-License-Identifier: GPL-2.0-or-later */
/* When news may start a pass early; see the header. */
#include "news_gate.h"

void news_gate_init(struct news_gate *g)
{
	g->window_start = -1;
	g->spent = 0;
	g->quiet_until = 0;
}

double news_gate_wait(const struct news_gate *g, double now)
{
	return now < g->quiet_until ? g->quiet_until - now : 0;
}

void news_gate_looked(struct news_gate *g, double now)
{
	if (g->quiet_until < now + NEWS_GAP_S)
		g->quiet_until = now + NEWS_GAP_S;
}

/* A new window when the last one ended (or there was none). */
static void roll(struct news_gate *g, double now)
{
	if (g->window_start < 0 || now >= g->window_start + NEWS_WINDOW_S || now < g->window_start) {
		g->window_start = now;
		g->spent = 0;
	}
}

bool news_gate_may_pass(struct news_gate *g, double now)
{
	roll(g, now);
	return g->spent < NEWS_SHARE * NEWS_WINDOW_S;
}

void news_gate_ran(struct news_gate *g, double now, double scan_s)
{
	roll(g, now);
	g->spent += scan_s > 0 ? scan_s : 0;
	if (g->spent >= NEWS_SHARE * NEWS_WINDOW_S && g->quiet_until < g->window_start + NEWS_WINDOW_S)
		g->quiet_until = g->window_start + NEWS_WINDOW_S;
}
