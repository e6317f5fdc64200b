/* mem_pressure: is the host short of memory right now? Then collapsing
 * waits: MADV_COLLAPSE allocates a 2 MiB page and may compact or reclaim
 * to get one, which a host under pressure pays for in stalls.
 *
 * Two signs, either one pauses:
 *   - PSI, /proc/pressure/memory: the share of the last 10 s in which some
 *     task (some) or every task (full) stalled on memory, against
 *     pressure_some_pct and pressure_full_pct (0: not checked);
 *   - free memory near the watermarks, /proc/zoneinfo: the free pages of
 *     all zones below the sum of their high watermarks (where kswapd stops
 *     reclaiming) plus pressure_free_margin_mb.
 * Pure parsers, a decision, and a reader that keeps both files open and
 * reads them at most every MEM_PRESSURE_CHECK_S. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MEM_PRESSURE_CHECK_S 0.5 /* PSI's averages move every 2 s */

struct psi_memory {
	double some_avg10, full_avg10; /* percent */
	bool have_full;                /* a "full" line was there */
};

/* "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=…". 0,
 * -EINVAL (malformed) or -ENOENT (no "some" line). */
int parse_psi_memory_buf(const char *buf, size_t len, struct psi_memory *out);

/* /proc/zoneinfo: the sums over zones of "pages free N" and of the "high N"
 * watermark, in pages. 0, -ENOENT (no zone) or -EINVAL. */
int parse_zoneinfo_buf(const char *buf, size_t len, uint64_t *free_pages, uint64_t *high_pages);

struct mem_pressure_limits {
	unsigned some_pct, full_pct; /* 0: that one not checked */
	uint64_t free_margin_pages;
};

enum mem_pressure_sign {
	MEM_PRESSURE_NONE,
	MEM_PRESSURE_PSI_SOME,
	MEM_PRESSURE_PSI_FULL,
	MEM_PRESSURE_WATERMARK,
};
const char *mem_pressure_sign_name(enum mem_pressure_sign s); /* "psi_some", … */

/* Pure. psi or the zone numbers may be NULL (not readable): not checked. */
enum mem_pressure_sign mem_pressure_decide(const struct mem_pressure_limits *l, const struct psi_memory *psi,
					   const uint64_t *free_pages, const uint64_t *high_pages);

struct mem_pressure {
	int psi_fd, zone_fd; /* -1: not open (the file is missing: that sign is not checked) */
	bool opened;
	double checked;              /* e->now of the last read; < 0: never */
	enum mem_pressure_sign sign; /* the last decision */
	struct psi_memory psi;       /* the last read, for messages */
	uint64_t free_pages, high_pages;
	bool paused; /* the engine's state: collapsing waits */
	double paused_since;
	uint64_t pauses; /* times it paused */
	double paused_s; /* seconds paused, ended pauses */
	char *buf;       /* grows: zoneinfo lists every CPU's pageset per zone */
	size_t cap;
	double read_s; /* seconds spent reading the files, total */
	uint64_t reads;
};

void mem_pressure_init(struct mem_pressure *m);
void mem_pressure_close(struct mem_pressure *m);
/* The decision at now (re-read if MEM_PRESSURE_CHECK_S passed), reading
 * proc_root/pressure/memory and proc_root/zoneinfo. */
enum mem_pressure_sign mem_pressure_check(struct mem_pressure *m, const char *proc_root,
					  const struct mem_pressure_limits *l, double now, double (*clock)(void));
