/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The system calls of a collapse, for older libc headers too. */
#include "madvise_call.h"

#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_process_madvise
#define __NR_process_madvise 440
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif

ssize_t sys_process_madvise(int pidfd, const struct iovec *iov, size_t vlen, int advice, unsigned int flags)
{
	return syscall(__NR_process_madvise, pidfd, iov, vlen, advice, flags);
}

int pidfd_open_pid(pid_t pid)
{
	return (int)syscall(__NR_pidfd_open, pid, 0U);
}
