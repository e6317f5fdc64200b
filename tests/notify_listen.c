/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hc_notify_listen PATH: a stand-in for systemd's NOTIFY_SOCKET.
 *
 * Binds an AF_UNIX datagram socket at PATH and prints every message it
 * receives, one line per newline-separated field:
 *
 *   <CLOCK_MONOTONIC seconds> <sender pid> FIELD=VALUE
 *
 * flushing after each message so a test can follow the file as it grows.
 * The monotonic timestamp lets a test check the daemon's MONOTONIC_USEC and
 * the watchdog's period; the sender pid (from SCM_CREDENTIALS) that messages
 * come from the daemon and not a helper. Exits 0 on SIGTERM or SIGINT,
 * removing the socket. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_DATAGRAM 65536

static double monotonic_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int bind_socket(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int one = 1, fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "hc_notify_listen: %s: path too long for a unix socket\n", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("hc_notify_listen: socket");
		return -1;
	}
	/* Ask for the sender's credentials with every message. */
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "hc_notify_listen: %s: %s\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Prints one datagram, a line per field; empty fields are skipped. */
static void print_message(const char *msg, size_t len, pid_t sender)
{
	double t = monotonic_now();
	size_t start = 0;

	for (size_t i = 0; i <= len; i++) {
		if (i < len && msg[i] != '\n')
			continue;
		if (i > start)
			printf("%.6f %d %.*s\n", t, (int)sender, (int)(i - start), msg + start);
		start = i + 1;
	}
	fflush(stdout);
}

static int receive_one(int fd)
{
	static char buf[MAX_DATAGRAM];
	union {
		struct cmsghdr align;
		char space[CMSG_SPACE(sizeof(struct ucred))];
	} control;
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof(control)};
	pid_t sender = 0;
	ssize_t n;

	n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
			struct ucred cred;

			memcpy(&cred, CMSG_DATA(c), sizeof(cred));
			sender = cred.pid;
		}
	if (mh.msg_flags & MSG_TRUNC)
		fprintf(stderr, "hc_notify_listen: a datagram longer than %d bytes was cut\n", MAX_DATAGRAM);
	print_message(buf, (size_t)n, sender);
	return 0;
}

int main(int argc, char **argv)
{
	struct pollfd pfd[2];
	sigset_t ss;
	int sock, sfd, status = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: hc_notify_listen SOCKET_PATH\n");
		return 2;
	}
	/* Signals arrive through a signalfd, so none is lost between a check
	 * and a blocking recvmsg(). */
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	sfd = signalfd(-1, &ss, SFD_CLOEXEC);
	if (sfd < 0) {
		perror("hc_notify_listen: signalfd");
		return 1;
	}
	sock = bind_socket(argv[1]);
	if (sock < 0)
		return 1;
	pfd[0] = (struct pollfd){.fd = sock, .events = POLLIN};
	pfd[1] = (struct pollfd){.fd = sfd, .events = POLLIN};
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("hc_notify_listen: poll");
			status = 1;
			break;
		}
		if (pfd[0].revents & POLLIN) {
			int r = receive_one(sock);

			if (r < 0) {
				fprintf(stderr, "hc_notify_listen: recvmsg: %s\n", strerror(-r));
				status = 1;
				break;
			}
			continue; /* drain messages before looking at signals */
		}
		if (pfd[1].revents & POLLIN)
			break;
	}
	close(sock);
	unlink(argv[1]);
	return status;
}
