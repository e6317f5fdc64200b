/* SPDX-License-Identifier: GPL-2.0-or-later */
/* units: the sizes every file counts in, defined once. */
#pragma once
#include <stdint.h>

#define HPAGE_SIZE  (UINT64_C(2) << 20) /* one PMD-mapped block */
#define HPAGE_PAGES 512u                /* 4 KiB pages in one */
#define MIB         (1024.0 * 1024.0)   /* for rates and reports, in floating point */
