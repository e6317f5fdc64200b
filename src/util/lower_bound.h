/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lower_bound: the one binary search over arrays sorted by pid.
 *
 * The arrays are of pid_t (stride sizeof(pid_t), offset 0) or of structs
 * with a pid_t member (stride sizeof(struct), offsetof(struct, pid)). The
 * answer is an insertion position, not only a hit: callers that insert use
 * it as is, callers that look up compare the key at the answer. Pure. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

/* The first index i in [0, n) whose key is not below pid (so the first of
 * duplicates), or n if every key is below it. base may be NULL if n is 0. */
size_t lower_bound_pid(const void *base, size_t n, size_t stride, size_t offset, pid_t pid);
