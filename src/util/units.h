/* SPDX-License-Identifier: GPL-2.0-or-later */
/* units: the sizes every file counts in, defined once (the daemon, the tests,
 * the benchmarks and the fuzzers). Not PAGE_SIZE: <sys/user.h> and some
 * <limits.h> define that one. */
#pragma once
#include <stdint.h>

#define HPAGE_SIZE  (UINT64_C(2) << 20) /* one PMD-mapped block */
#define HPAGE_PAGES 512u                /* 4 KiB pages in one */
#define PAGE_BYTES  4096u               /* one base page, the unit of pagemap and kpageflags */
#define MIB_BYTES   (UINT64_C(1) << 20) /* one MiB in bytes, an integer: sizes and addresses */
#define MIB         (1024.0 * 1024.0)   /* for rates and reports, in floating point */
