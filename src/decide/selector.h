/* SPDX-License-Identifier: GPL-2.0-or-later */
/* selector: the stage between the scanner and the dispatcher. It owns the
 * pass's candidates (their order) and the collapse budget (its token
 * buckets and their scratch); nothing else writes them. Pure: the clock,
 * the config and the process table are inputs (struct selector_input),
 * the ordered candidates its output (struct selection). budget.h does the
 * arithmetic.
 *
 * A pass: selector_order() scores every remembered block into one order;
 * the memory cgroup gate narrows that order in place (memcg_gate.h: it is
 * the gate's input and output); selector_select() refills the buckets and
 * moves what the budget allows to the front, which the dispatcher then
 * consumes in place (collapse_selected() marks what it took), charging
 * what it submits (budget_charge() on selector_budget()). Those two are
 * the only other hands on the selector's state, each through what the
 * selector lent it. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "budget.h"

struct config;

struct selector {
	struct budget budget;    /* token buckets: global and per policy */
	struct candidate *cands; /* the last order (selector_order()) */
	size_t ncands, capcands;
};

/* What the selector reads of the others, at each call. */
struct selector_input {
	const struct config *cfg;
	const struct proc_state *st; /* the process table, sorted by pid */
	size_t nst;
	struct pid_filter filter; /* which processes take part */
	double now;               /* the sample's time */
};

/* The selector's order: valid until its next call. v is the selector's,
 * lent to the memory cgroup gate, which may narrow it (n) in place. */
struct selection {
	struct candidate *v;
	size_t *n;
};

/* 0 or -ENOMEM (budget_configure()). */
int selector_init(struct selector *s, const struct config *cfg);
void selector_free(struct selector *s);
/* A new config: the budgets of rules that stay carry over (old must still
 * be valid). 0 or -ENOMEM (budget_configure(): fail closed). */
int selector_configure(struct selector *s, const struct config *old, const struct config *cfg);

/* Every candidate of the pass, in plan order (budget_candidates()); adds
 * the active processes to *procs_active (if not NULL). 0 or -ENOMEM. */
int selector_order(struct selector *s, const struct selector_input *in, unsigned *procs_active, struct selection *out);
/* Refills the buckets for in->now (the budget is a rate: budget.h), then
 * moves the candidates of the order that it allows (all when unlimited) to
 * its front; returns how many. Spends nothing. */
size_t selector_select(struct selector *s, const struct selector_input *in, bool unlimited);
/* Selects again from a new order within the same pass: no refill. */
size_t selector_reselect(struct selector *s, const struct selector_input *in, bool unlimited);

/* The candidates of the last order (after the gate). */
const struct candidate *selector_candidates(const struct selector *s, size_t *n);
/* The buckets, for the dispatcher to charge what it submits. */
struct budget *selector_budget(struct selector *s);
