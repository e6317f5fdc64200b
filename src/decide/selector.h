/* SPDX-License-Identifier: GPL-2.0-or-later */
/* selector: the stage between the scanner and the dispatcher. It owns the
 * pass's candidates (their order) and the collapse budget (its token
 * buckets and their scratch); nothing else writes them. Pure: the clock,
 * the config and the process table are inputs (struct selector_input),
 * the ordered candidates its output (struct selection). budget.h does the
 * arithmetic.
 *
 * A pass: selector_order() scores every remembered block into one order
 * (its output, read-only to the others); the memory cgroup gate lets
 * through, into its own array, what fits (memcg_gate.h); selector_select()
 * refills the buckets and copies what the budget allows of that into the
 * selection, its second output, which the dispatcher reads; the dispatcher
 * says what it submitted, and the engine charges it here
 * (selector_charge()). No other file writes the selector's state. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "budget.h"

struct config;

struct selector {
	struct budget budget;    /* token buckets: global and per policy */
	struct candidate *cands; /* the last order (selector_order()) */
	size_t ncands, capcands;
	struct candidate *sel; /* the last selection (selector_select()) */
	size_t nsel, capsel;
};

/* What the selector reads of the others, at each call. */
struct selector_input {
	const struct config *cfg;
	const struct proc_state *st; /* the process table, sorted by pid */
	size_t nst;
	struct pid_filter filter; /* which processes take part */
	double now;               /* the sample's time */
};

/* 0 or -ENOMEM (budget_configure()). */
int selector_init(struct selector *s, const struct config *cfg);
void selector_free(struct selector *s);
/* A new config: the budgets of rules that stay carry over (old must still
 * be valid). 0 or -ENOMEM (budget_configure(): fail closed). */
int selector_configure(struct selector *s, const struct config *old, const struct config *cfg);

/* Every candidate of the pass, in plan order (budget_candidates()), into
 * *order (*n of them, valid until the next call); adds the active
 * processes to *procs_active (if not NULL). 0 or -ENOMEM. */
int selector_order(struct selector *s, const struct selector_input *in, unsigned *procs_active,
		   const struct candidate **order, size_t *n);
/* Refills the buckets for in->now (the budget is a rate: budget.h), then
 * copies the candidates of from[0..n) that it allows (all when unlimited),
 * in their order, into the selection *sel; returns how many (0 and *sel
 * NULL without memory for them). Spends nothing: selector_charge(). */
size_t selector_select(struct selector *s, const struct selector_input *in, const struct candidate *from, size_t n,
		       bool unlimited, const struct candidate **sel);
/* Selects again from a new order within the same pass: no refill. */
size_t selector_reselect(struct selector *s, const struct selector_input *in, const struct candidate *from, size_t n,
			 bool unlimited, const struct candidate **sel);
/* Takes bytes submitted for collapse under pol from the buckets. */
void selector_charge(struct selector *s, const struct config *cfg, const struct policy *pol, double bytes);

/* The candidates of the last order (before the gate). */
const struct candidate *selector_candidates(const struct selector *s, size_t *n);
