/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Prometheus histograms: observe and format. */
#include "histogram.h"

#include <string.h>

/* One block's collapse: ~0.2 ms for a full block on this machine, up to
 * tens of ms with compaction or reclaim behind the allocation. */
const double histogram_block_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
					 0.01,   0.025,   0.05,   0.1,   0.25,   1};
const size_t histogram_block_nbounds = sizeof(histogram_block_bounds) / sizeof(histogram_block_bounds[0]);
/* A pass: microseconds when idle, up to the pass's time limit. */
const double histogram_pass_bounds[] = {0.0001, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
const size_t histogram_pass_nbounds = sizeof(histogram_pass_bounds) / sizeof(histogram_pass_bounds[0]);

void histogram_init(struct histogram *h, const double *le, size_t nle)
{
	memset(h, 0, sizeof(*h));
	h->le = le;
	h->nle = nle > HISTOGRAM_MAX_BOUNDS ? HISTOGRAM_MAX_BOUNDS : nle;
}

void histogram_observe(struct histogram *h, double v, uint64_t times)
{
	size_t b = 0;

	if (!times)
		return;
	if (!(v >= 0)) /* NaN or negative: a clock gone wrong */
		v = 0;
	while (b < h->nle && v > h->le[b])
		b++;
	h->counts[b] += times;
	h->count += times;
	h->sum += v * (double)times;
}

void histogram_format(FILE *f, const char *name, const char *help, const struct histogram *h)
{
	uint64_t cum = 0;

	fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	for (size_t b = 0; b < h->nle; b++) {
		cum += h->counts[b];
		fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name, h->le[b], (unsigned long long)cum);
	}
	fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->count);
	fprintf(f, "%s_sum %.9g\n%s_count %llu\n", name, h->sum, name, (unsigned long long)h->count);
}
