// SPDX-License-Identifier: GPL-2.0
/*
 * devmem_send: TCP TX for a while from THREADS threads, each on a TCP
 * connection of its own, in one of three modes:
 *
 *   devmem    from one dma-buf that another process has bound for TX
 *             (bind-tx; its binding id is DMABUF_ID): every sendmsg()
 *             looks the binding up by its id (net_devmem_get_binding)
 *   zerocopy  MSG_ZEROCOPY from host memory (SIZE bytes, mapped here)
 *   send      plain sendmsg() from host memory, copied into the socket
 *
 *   devmem_send -a ADDR6 -p PORT [-m MODE] [-d DMABUF_ID] -t THREADS
 *               -s SECONDS -l LEN -z SIZE [-r MBITS]
 *
 * A devmem send is a MSG_ZEROCOPY sendmsg() with an SCM_DEVMEM_DMABUF
 * cmsg carrying the binding id, whose iovec's iov_base is an offset into
 * the dma-buf (see ncdevmem.c's do_client); the other modes send from the
 * same offsets in a buffer of their own. Each call sends LEN bytes, the
 * offsets cycling through the SIZE bytes. The sends do not block: when the
 * socket has no room (EAGAIN) the thread polls for it, and the time it
 * waits is reported, as it is the peer's and the path's, not the
 * sender's. Zero-copy completions are reaped from the error queue every
 * REAP_EVERY sends and whenever a send waits; ENOBUFS (the completions
 * filled optmem) drains them and retries.
 *
 * With -r, the threads together send at most MBITS Mbit/s: each socket's
 * SO_MAX_PACING_RATE is its share, which TCP paces to itself. Every mode
 * and every kernel is then measured at the same load, whatever pace the
 * peer and the host would set.
 *
 * Prints "sends N bytes N secs S threads N" on stdout, and the time spent
 * waiting and the threads' CPU time as "# " lines on stderr. Exits 0 when
 * every thread sent and none failed.
 */

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif
#ifndef SCM_DEVMEM_DMABUF
#define SCM_DEVMEM_DMABUF 79
#endif
#ifndef SO_EE_ORIGIN_ZEROCOPY
#define SO_EE_ORIGIN_ZEROCOPY 5
#endif

#define REAP_EVERY	64
#define POLL_MS		100

struct worker {
	pthread_t tid;
	int fd;
	unsigned long long sends, bytes, waits, enobufs, completions;
	unsigned long long wait_ns;
	struct rusage ru;
	const char *what;	/* the call that failed, NULL if none */
	int err;
};

enum mode { MODE_DEVMEM, MODE_ZEROCOPY, MODE_SEND };

static struct sockaddr_in6 peer;
static enum mode mode = MODE_DEVMEM;
static unsigned int dmabuf_id;
static size_t len, dmabuf_size;
/* SO_MAX_PACING_RATE of each socket, bytes a second; 0: none. */
static unsigned long long pace;
/* The host memory the zerocopy and send modes send from. */
static char *hostbuf;
static pthread_barrier_t start;
static atomic_int stop;

static int fail(struct worker *w, const char *what, int err)
{
	w->what = what;
	w->err = err;
	return -1;
}

/* Reaps every zero-copy completion queued on the socket's error queue. */
static int reap(struct worker *w)
{
	char control[CMSG_SPACE(sizeof(struct sock_extended_err) +
				sizeof(struct sockaddr_in6))];
	struct sock_extended_err *serr;
	struct msghdr msg = {};
	struct cmsghdr *cm;

	for (;;) {
		msg.msg_control = control;
		msg.msg_controllen = sizeof(control);
		if (recvmsg(w->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return fail(w, "recvmsg(MSG_ERRQUEUE)", errno);
		}
		if (msg.msg_flags & MSG_CTRUNC)
			return fail(w, "recvmsg(MSG_ERRQUEUE): MSG_CTRUNC", EMSGSIZE);
		cm = CMSG_FIRSTHDR(&msg);
		if (!cm || !((cm->cmsg_level == SOL_IPV6 &&
			      cm->cmsg_type == IPV6_RECVERR) ||
			     (cm->cmsg_level == SOL_IP &&
			      cm->cmsg_type == IP_RECVERR)))
			return fail(w, "recvmsg(MSG_ERRQUEUE): no RECVERR cmsg",
				    EPROTO);
		serr = (void *)CMSG_DATA(cm);
		if (serr->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
			return fail(w, "recvmsg(MSG_ERRQUEUE): not a zero-copy completion",
				    EPROTO);
		if (serr->ee_errno)
			return fail(w, "zero-copy completion", serr->ee_errno);
		w->completions += serr->ee_data - serr->ee_info + 1;
	}
}

/*
 * Waits for room to send (events POLLOUT) or for completions (events 0:
 * POLLERR says the error queue has some), POLL_MS at most, then reaps.
 */
static int wait_and_reap(struct worker *w, short events)
{
	struct pollfd pfd = { .fd = w->fd, .events = events };
	unsigned long long t0 = now_ns();
	int soerr = 0;
	socklen_t sl = sizeof(soerr);

	w->waits++;
	if (poll(&pfd, 1, POLL_MS) < 0 && errno != EINTR)
		return fail(w, "poll", errno);
	w->wait_ns += now_ns() - t0;
	if (pfd.revents & POLLHUP)
		return fail(w, "the connection", ECONNRESET);
	if (pfd.revents & POLLERR) {
		if (getsockopt(w->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl))
			return fail(w, "getsockopt(SO_ERROR)", errno);
		if (soerr)
			return fail(w, "the connection", soerr);
	}
	return reap(w);
}

static int send_loop(struct worker *w)
{
	char control[CMSG_SPACE(sizeof(__u32))] = {};
	int flags = MSG_ZEROCOPY | MSG_DONTWAIT;
	struct msghdr msg = {};
	struct cmsghdr *cm;
	struct iovec iov;
	unsigned int since_reap = 0;
	size_t off = 0;
	ssize_t ret;

	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (mode == MODE_DEVMEM) {
		msg.msg_control = control;
		msg.msg_controllen = sizeof(control);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_DEVMEM_DMABUF;
		cm->cmsg_len = CMSG_LEN(sizeof(__u32));
		memcpy(CMSG_DATA(cm), &dmabuf_id, sizeof(__u32));
	} else if (mode == MODE_SEND) {
		flags = MSG_DONTWAIT;
	}

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		/* devmem TX: iov_base is an offset into the dma-buf. */
		iov.iov_base = mode == MODE_DEVMEM ? (void *)off : hostbuf + off;
		iov.iov_len = len;
		ret = sendmsg(w->fd, &msg, flags);
		if (ret > 0) {
			w->sends++;
			w->bytes += ret;
			off += ret;
			if (off + len > dmabuf_size)
				off = 0;
			/* A plain send has no completions to reap. */
			if (mode != MODE_SEND && ++since_reap == REAP_EVERY) {
				since_reap = 0;
				if (reap(w))
					return -1;
			}
			continue;
		}
		if (ret == 0)
			return fail(w, "sendmsg: sent nothing", EIO);
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			if (wait_and_reap(w, POLLOUT))
				return -1;
		} else if (errno == ENOBUFS) {
			w->enobufs++;
			if (wait_and_reap(w, 0))
				return -1;
		} else {
			return fail(w, "sendmsg", errno);
		}
	}
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int one = 1;

	w->fd = socket(AF_INET6, SOCK_STREAM, 0);
	if (w->fd < 0)
		fail(w, "socket", errno);
	else if (mode != MODE_SEND &&
		 setsockopt(w->fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)))
		fail(w, "setsockopt(SO_ZEROCOPY)", errno);
	else if (pace && setsockopt(w->fd, SOL_SOCKET, SO_MAX_PACING_RATE,
				    &pace, sizeof(pace)))
		fail(w, "setsockopt(SO_MAX_PACING_RATE)", errno);
	else if (connect(w->fd, (struct sockaddr *)&peer, sizeof(peer)))
		fail(w, "connect", errno);
	/* Every thread connected (or failed to) before the clock starts. */
	pthread_barrier_wait(&start);
	if (!w->what)
		send_loop(w);
	getrusage(RUSAGE_THREAD, &w->ru);
	if (w->fd >= 0)
		close(w->fd);
	return NULL;
}

static void print_usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s -a ADDR6 -p PORT [-m devmem|zerocopy|send] [-d DMABUF_ID] -t THREADS -s SECONDS -l LEN -z SIZE [-r MBITS]\n",
		prog);
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long long sends = 0, bytes = 0, waits = 0, enobufs = 0;
	unsigned long long wait_ns = 0, cpu_ns = 0, t0, t1, mbits = 0;
	int threads = 0, secs = 0, port = 0, opt, i, bad = 0;
	const char *addr = NULL;
	struct worker *w;
	double elapsed;

	while ((opt = getopt(argc, argv, "a:p:m:d:t:s:l:z:r:")) != -1) {
		switch (opt) {
		case 'a':
			addr = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'm':
			if (!strcmp(optarg, "devmem"))
				mode = MODE_DEVMEM;
			else if (!strcmp(optarg, "zerocopy"))
				mode = MODE_ZEROCOPY;
			else if (!strcmp(optarg, "send"))
				mode = MODE_SEND;
			else
				print_usage(argv[0]);
			break;
		case 'd':
			dmabuf_id = strtoul(optarg, NULL, 0);
			break;
		case 't':
			threads = atoi(optarg);
			break;
		case 's':
			secs = atoi(optarg);
			break;
		case 'l':
			len = strtoul(optarg, NULL, 0);
			break;
		case 'z':
			dmabuf_size = strtoul(optarg, NULL, 0);
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
	if (!addr || port <= 0 || port > 65535 ||
	    (mode == MODE_DEVMEM && !dmabuf_id) || threads <= 0 || secs <= 0 ||
	    !len || len > dmabuf_size)
		print_usage(argv[0]);
	pace = mbits * 1000000 / 8 / threads;
	if (mode != MODE_DEVMEM) {
		/* Populated: no page faults while the clock runs. */
		hostbuf = mmap(NULL, dmabuf_size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (hostbuf == MAP_FAILED) {
			perror("devmem_send: mmap");
			return 1;
		}
		memset(hostbuf, 0x5a, dmabuf_size);
	}
	peer.sin6_family = AF_INET6;
	peer.sin6_port = htons(port);
	if (inet_pton(AF_INET6, addr, &peer.sin6_addr) != 1) {
		fprintf(stderr, "devmem_send: bad IPv6 address %s\n", addr);
		return 2;
	}

	w = calloc(threads, sizeof(*w));
	if (!w || pthread_barrier_init(&start, NULL, threads + 1)) {
		perror("devmem_send: setup");
		return 1;
	}
	for (i = 0; i < threads; i++) {
		w[i].fd = -1;
		errno = pthread_create(&w[i].tid, NULL, worker_main, &w[i]);
		if (errno) {
			perror("devmem_send: pthread_create");
			return 1;
		}
	}
	pthread_barrier_wait(&start);
	t0 = now_ns();
	sleep(secs);
	atomic_store(&stop, 1);
	for (i = 0; i < threads; i++)
		pthread_join(w[i].tid, NULL);
	t1 = now_ns();
	elapsed = (t1 - t0) / 1e9;

	for (i = 0; i < threads; i++) {
		sends += w[i].sends;
		bytes += w[i].bytes;
		waits += w[i].waits;
		enobufs += w[i].enobufs;
		wait_ns += w[i].wait_ns;
		cpu_ns += tv_ns(&w[i].ru.ru_utime) + tv_ns(&w[i].ru.ru_stime);
		if (w[i].what) {
			fprintf(stderr, "devmem_send: thread %d: %s: %s (errno %d)\n",
				i, w[i].what, strerror(w[i].err), w[i].err);
			bad = 1;
		} else if (!w[i].sends) {
			fprintf(stderr, "devmem_send: thread %d sent nothing\n", i);
			bad = 1;
		}
	}
	fprintf(stderr, "# %llu ns of CPU per send, waited for room %.0f%% of the time (%llu waits), %llu ENOBUFS\n",
		sends ? cpu_ns / sends : 0,
		100.0 * wait_ns / 1e9 / (elapsed * threads), waits, enobufs);
	printf("sends %llu bytes %llu secs %.3f threads %d\n",
	       sends, bytes, elapsed, threads);
	return bad;
}
