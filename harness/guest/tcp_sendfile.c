// SPDX-License-Identifier: GPL-2.0
/*
 * tcp_sendfile: the sender of the receive benchmark (bench_rx.sh), run on
 * the peer. Opens FLOWS TCP connections to ADDR6:PORT, all before sending
 * anything, then sends BYTES on each with sendfile() from a memfd, and
 * closes them. sendfile() spares the peer's CPU the copy from user space
 * that a read()/write() sender (socat) pays for every byte, so that the
 * receiver, not the sender, is what the benchmark measures.
 *
 *   tcp_sendfile -a ADDR6 -p PORT -n FLOWS -b BYTES [-r MBITS]
 *
 * With -r, the flows together send at most MBITS Mbit/s: each socket's
 * SO_MAX_PACING_RATE is its share, which TCP paces to itself (no qdisc
 * needed). A receiver compared at a fixed offered load then sees the same
 * arrivals whatever else the machine does.
 *
 * The bytes of every flow follow the pattern devmem_rx_bench -v checks:
 * the byte at stream offset i is i % 251. The memfd holds 4096 periods of
 * it (a multiple of the period, so sending it round and round keeps the
 * pattern). The sockets do not block: one thread polls them all and sends
 * on whichever has room.
 *
 * A flow that has sent its bytes shuts its side down and waits for the
 * receiver to close, so that nothing is left to an orphaned socket.
 *
 * Prints "bytes N secs S cpu_ns C" on stdout: all flows' bytes, the
 * seconds from the first send to the receiver's last close, and the
 * process's CPU time. Exits 0 when every flow sent all its bytes.
 */

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"

#define PERIOD		251
#define FILE_SIZE	(PERIOD * 4096)
#define MAX_FLOWS	64
#define POLL_MS		30000

static void die(const char *what)
{
	fprintf(stderr, "tcp_sendfile: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* A memfd of FILE_SIZE bytes holding the pattern. */
static int pattern_file(void)
{
	unsigned char *p;
	int fd, i;

	fd = memfd_create("tcp_sendfile", 0);
	if (fd < 0)
		die("memfd_create");
	if (ftruncate(fd, FILE_SIZE))
		die("ftruncate");
	p = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	for (i = 0; i < FILE_SIZE; i++)
		p[i] = i % PERIOD;
	munmap(p, FILE_SIZE);
	return fd;
}

static void print_usage(const char *prog)
{
	fprintf(stderr, "usage: %s -a ADDR6 -p PORT -n FLOWS -b BYTES [-r MBITS]\n",
		prog);
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long long left[MAX_FLOWS], bytes, total = 0, t0, t1, mbits = 0;
	unsigned long long pace;
	int flows = 0, port = 0, open_flows, file, opt, i, n;
	struct pollfd pfd[MAX_FLOWS];
	struct sockaddr_in6 peer = {};
	const char *addr = NULL;
	struct rusage ru;
	size_t chunk;
	off_t off;
	ssize_t ret;

	bytes = 0;
	while ((opt = getopt(argc, argv, "a:p:n:b:r:")) != -1) {
		switch (opt) {
		case 'a':
			addr = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'n':
			flows = atoi(optarg);
			break;
		case 'b':
			bytes = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			mbits = strtoull(optarg, NULL, 0);
			if (!mbits)
				print_usage(argv[0]);
			break;
		default:
			print_usage(argv[0]);
		}
	}
	if (!addr || port <= 0 || port > 65535 || flows < 1 ||
	    flows > MAX_FLOWS || !bytes)
		print_usage(argv[0]);
	peer.sin6_family = AF_INET6;
	peer.sin6_port = htons(port);
	if (inet_pton(AF_INET6, addr, &peer.sin6_addr) != 1) {
		fprintf(stderr, "tcp_sendfile: bad IPv6 address %s\n", addr);
		return 2;
	}
	file = pattern_file();
	/* Bytes per second, per flow. */
	pace = mbits * 1000000 / 8 / flows;

	for (i = 0; i < flows; i++) {
		pfd[i].fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (pfd[i].fd < 0)
			die("socket");
		if (pace && setsockopt(pfd[i].fd, SOL_SOCKET, SO_MAX_PACING_RATE,
				       &pace, sizeof(pace)))
			die("SO_MAX_PACING_RATE");
		if (connect(pfd[i].fd, (struct sockaddr *)&peer, sizeof(peer)) &&
		    errno != EINPROGRESS)
			die("connect");
		pfd[i].events = POLLOUT;
		left[i] = bytes;
	}

	t0 = now_ns();
	open_flows = flows;
	while (open_flows) {
		n = poll(pfd, flows, POLL_MS);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		if (!n) {
			errno = ETIMEDOUT;
			die("no room to send");
		}
		for (i = 0; i < flows; i++) {
			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			if (pfd[i].revents & POLLERR ||
			    (left[i] && pfd[i].revents & POLLHUP)) {
				int err = 0;
				socklen_t len = sizeof(err);

				getsockopt(pfd[i].fd, SOL_SOCKET, SO_ERROR, &err, &len);
				errno = err ?: ECONNRESET;
				die("connection");
			}
			if (!left[i]) {
				/* Sent and shut down: wait for the receiver's close. */
				char c;

				ret = recv(pfd[i].fd, &c, 1, MSG_DONTWAIT);
				if (ret < 0 && (errno == EAGAIN || errno == EINTR))
					continue;
				if (ret < 0)
					die("recv");
				if (ret > 0)
					continue;
				close(pfd[i].fd);
				pfd[i].fd = -1;
				open_flows--;
				continue;
			}
			/* The stream offset is bytes - left; the file repeats. */
			off = (bytes - left[i]) % FILE_SIZE;
			chunk = FILE_SIZE - off;
			if (chunk > left[i])
				chunk = left[i];
			ret = sendfile(pfd[i].fd, file, &off, chunk);
			if (ret < 0) {
				if (errno == EAGAIN || errno == EINTR)
					continue;
				die("sendfile");
			}
			left[i] -= ret;
			total += ret;
			if (!left[i]) {
				if (shutdown(pfd[i].fd, SHUT_WR))
					die("shutdown");
				pfd[i].events = POLLIN;
			}
		}
	}
	t1 = now_ns();
	getrusage(RUSAGE_SELF, &ru);
	printf("bytes %llu secs %.3f cpu_ns %llu\n", total, (t1 - t0) / 1e9,
	       tv_ns(&ru.ru_utime) + tv_ns(&ru.ru_stime));
	return 0;
}
