/* SPDX-License-Identifier: GPL-2.0-or-later */
/* privilege: which of the capabilities hugecollapsed needs are missing. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bits of the capabilities that matter here (linux/capability.h). */
#define HC_CAP_DAC_READ_SEARCH 2
#define HC_CAP_SYS_PTRACE      19
#define HC_CAP_SYS_ADMIN       21
#define HC_CAP_SYS_NICE        23

/* Parses the first CapEff line of /proc/self/status text: 1 to 16 hex
 * digits, nothing else. Returns 0 or -EINVAL (no such line, or malformed:
 * *caps is then unchanged). Pure. */
int parse_cap_eff(const char *buf, size_t len, uint64_t *caps);

/* Checks the effective set: CAP_SYS_ADMIN (PFNs in pagemap, kpageflags),
 * CAP_SYS_PTRACE (reading other processes' pagemap), and CAP_SYS_NICE
 * (process_madvise on other processes) unless only reading. Returns 0, or
 * -EPERM with msg naming each missing capability and what it is for. */
int check_privileges(bool will_collapse, char *msg, size_t msglen);
