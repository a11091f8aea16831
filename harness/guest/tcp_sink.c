// SPDX-License-Identifier: GPL-2.0
/*
 * tcp_sink: a TCP sink that takes what it is sent and copies none of it,
 * so that the receiver costs as little as it can and keeps up with a
 * sender being timed.
 *
 *   tcp_sink -p PORT
 *
 * Listens on [::]:PORT and serves every connection from one poll() loop,
 * reading with recv(MSG_TRUNC), which frees the data without copying it
 * to user space; a connection closes at its peer's EOF. Prints
 * "listening port=PORT" once it listens, and runs until killed.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CONNS	64
#define CHUNK		(1 << 20)

int main(int argc, char **argv)
{
	struct sockaddr_in6 addr = { .sin6_family = AF_INET6 };
	struct pollfd pfd[MAX_CONNS + 1];
	int port = 0, opt, one = 1, n = 1, i, fd;
	ssize_t ret;

	while ((opt = getopt(argc, argv, "p:")) != -1) {
		if (opt != 'p')
			goto usage;
		port = atoi(optarg);
	}
	if (port <= 0 || port > 65535)
		goto usage;

	pfd[0].fd = socket(AF_INET6, SOCK_STREAM, 0);
	pfd[0].events = POLLIN;
	addr.sin6_port = htons(port);
	if (pfd[0].fd < 0 ||
	    setsockopt(pfd[0].fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(pfd[0].fd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(pfd[0].fd, MAX_CONNS)) {
		perror("tcp_sink: listen");
		return 1;
	}
	printf("listening port=%d\n", port);
	fflush(stdout);

	for (;;) {
		if (poll(pfd, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("tcp_sink: poll");
			return 1;
		}
		if ((pfd[0].revents & POLLIN) && n <= MAX_CONNS) {
			fd = accept(pfd[0].fd, NULL, NULL);
			if (fd >= 0) {
				pfd[n].fd = fd;
				pfd[n].events = POLLIN;
				pfd[n].revents = 0;
				n++;
			}
		}
		for (i = 1; i < n; i++) {
			if (!pfd[i].revents)
				continue;
			ret = recv(pfd[i].fd, NULL, CHUNK, MSG_TRUNC | MSG_DONTWAIT);
			if (ret > 0 || (ret < 0 && (errno == EAGAIN || errno == EINTR)))
				continue;
			/* EOF or an error: this connection is done. */
			close(pfd[i].fd);
			pfd[i--] = pfd[--n];
		}
	}
usage:
	fprintf(stderr, "usage: %s -p PORT\n", argv[0]);
	return 2;
}
