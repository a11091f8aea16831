// SPDX-License-Identifier: GPL-2.0
/*
 * devmem_rx_bench: receive benchmark for devmem TCP. One binary and the
 * same socket code for every mode, so that modes differ only in what a
 * receive does with the payload:
 *
 *   copy          recv() into a pre-faulted udmabuf mapping (one copy)
 *   trunc         recv(MSG_TRUNC): the payload is dropped, the no-copy
 *                 ceiling of the host-memory path
 *   devmem        the udmabuf bound to a receive queue (netdev bind-rx);
 *                 recvmsg(MSG_SOCK_DEVMEM), every SO_DEVMEM_DMABUF and
 *                 SO_DEVMEM_LINEAR cmsg checked, the frags' tokens merged
 *                 into ranges and given back with SO_DEVMEM_DONTNEED in
 *                 batches at the kernel's limits
 *   devmem-trunc  the udmabuf bound as for devmem, recv(MSG_TRUNC): the
 *                 device-memory path without the tokens' round trip
 *
 * Usage:
 *
 *   devmem_rx_bench -s SERVER_IP -p PORT -m MODE [-n FLOWS] [-f IFNAME]
 *                   [-q QUEUE] [-r RECV_SIZE] [-P PAGES] [-z RX_PAGE_SIZE]
 *                   [-e BYTES_PER_FLOW] [-c CMSGS] [-g CPU] [-v] [-w]
 *
 * It listens on SERVER_IP:PORT, accepts FLOWS connections, and receives
 * from all of them (epoll, level-triggered, non-blocking receives of
 * RECV_SIZE bytes) until each has reached EOF. The caller configures the
 * device: header split on and a flow rule steering the port to QUEUE for
 * every mode, so that every mode takes the same driver path. With -f, the
 * program refuses to run unless tcp-data-split is on; the devmem modes
 * need -f and bind a udmabuf of PAGES pages (16000 by default, ncdevmem's)
 * to QUEUE (the last receive queue by default), with RX_PAGE_SIZE as the
 * binding's rx-page-size if given (the udmabuf then comes from 2 MiB huge
 * pages). The other modes allocate and pre-fault the same udmabuf.
 *
 * Every byte of every flow, at stream offset i, must be i % 251 when -v
 * is given (251 is prime: no frag or page size is a multiple of it, so a
 * frag reported at a wrong offset shows); devmem then gives every batch
 * of tokens back a second time, which must free nothing. -v reads every
 * byte, so it is for a correctness run, not a timed one; it has no
 * meaning with the trunc modes. -e fails the run unless every flow
 * carried BYTES_PER_FLOW. -c gives a devmem receive room for CMSGS
 * cmsgs (4096 by default): with few, most receives end when the room
 * runs out, in the middle of an skb whose next frags' tokens the kernel
 * had reserved and must take back. -g starts a second thread, on CPU,
 * that gives back every flow's tokens 1 to 1024 over and over while the
 * flows are received, as a program guessing tokens (they are handed out
 * lowest first) would: it frees tokens the receiver holds and tokens a
 * receive has reserved and not handed out yet. The receiver's own
 * SO_DEVMEM_DONTNEED may then free fewer than it gives back; -g has no
 * meaning with -v, since a frag freed under the receiver may be written
 * again before it is read. What such a run shows is outside it: that it
 * ends, and that no net_iov is left in flight once the binding is gone.
 *
 * Prints on stdout "listening port=PORT" once it is ready for the
 * connections, and at the end one line of key=value pairs:
 *
 *   devmem_rx_bench mode=M flows=N bytes=B wall_ns=W user_ns=U sys_ns=S
 *                   recvs=R frags=F ranges=G dontneed=D linear_bytes=L
 *                   guessed=Q
 *
 * bytes over all flows; wall_ns from the first receive event to the last
 * EOF (CLOCK_MONOTONIC); user_ns and sys_ns the process's own CPU time
 * over the same span (getrusage); recvs the receive calls that returned
 * data; frags the device-memory frags received, ranges the token ranges
 * and dontneed the SO_DEVMEM_DONTNEED calls that gave them back;
 * linear_bytes the devmem bytes that came in the linear part of an skb
 * (SO_DEVMEM_LINEAR); guessed the frags the -g thread freed. The line
 * is printed before the binding and the sockets are torn down, so a
 * caller measuring the whole machine's CPU can stop when it reads it.
 * With -w the program then closes the connections (the sender waits for
 * that) and waits until its standard input reaches EOF before it unbinds
 * and frees the buffer, so that a caller measuring from outside the
 * machine (the host of a virtual one) can take its reading first. Exits
 * 0 only when every flow ended cleanly and every check passed.
 */
#define _GNU_SOURCE
#define __EXPORTED_HEADERS__

#include <linux/uio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#define __iovec_defined
#include <error.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <net/if.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <linux/dma-buf.h>
#include <linux/ethtool_netlink.h>
#include <linux/memfd.h>
#include <linux/netdev.h>
#include <linux/udmabuf.h>

#include "netdev-user.h"
#include "ethtool-user.h"
#include <ynl.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

#ifndef MSG_SOCK_DEVMEM
#define MSG_SOCK_DEVMEM 0x2000000
#endif

#define PATTERN_PERIOD		251
#define MAX_FLOWS		64
#define DEFAULT_PAGES		16000
#define DEFAULT_RECV_SIZE	(256 * 1024)
#define IDLE_TIMEOUT_MS		30000
#define HUGE_PAGE_SIZE		(2UL << 20)
/* Room for this many cmsgs a recvmsg(); more frags make a short read. */
#define MAX_CMSGS		4096

/* What one SO_DEVMEM_DONTNEED may carry: net/core/sock.c. */
#define MAX_DONTNEED_TOKENS	128
#define MAX_DONTNEED_FRAGS	1024

enum mode {
	MODE_COPY,
	MODE_TRUNC,
	MODE_DEVMEM,
	MODE_DEVMEM_TRUNC,
};

static const char * const mode_names[] = {
	[MODE_COPY] = "copy",
	[MODE_TRUNC] = "trunc",
	[MODE_DEVMEM] = "devmem",
	[MODE_DEVMEM_TRUNC] = "devmem-trunc",
};

struct flow {
	int fd;
	int index;
	bool eof;
	/* Bytes received so far: the stream offset of the next one. */
	unsigned long long pos;
	/* Tokens held, as ranges, until they are given back. */
	struct dmabuf_token batch[MAX_DONTNEED_TOKENS];
	unsigned int nranges;
	unsigned int nfrags;
};

struct udmabuf {
	int devfd;
	int memfd;
	int fd;
	size_t size;
	unsigned char *mem;
};

static struct {
	unsigned long long recvs;
	unsigned long long frags;
	unsigned long long ranges;
	unsigned long long dontneed;
	unsigned long long linear_bytes;
} stats;

static enum mode mode = MODE_COPY;
static int nflows = 1;
static size_t recv_size = DEFAULT_RECV_SIZE;
static bool validate;
static unsigned long long expect_bytes;
static uint32_t rx_page_size;
static unsigned int dmabuf_id;
static unsigned int batch_frags = MAX_DONTNEED_FRAGS;
static struct udmabuf dmabuf;
static size_t copy_off;
static unsigned char *iobuf;
static unsigned char *ctrl;
static size_t ctrl_size;
static int guess_cpu = -1;
static bool guess_stop;
static unsigned long long guessed;

static bool devmem_mode(void)
{
	return mode == MODE_DEVMEM || mode == MODE_DEVMEM_TRUNC;
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static unsigned long long tv_ns(const struct timeval *tv)
{
	return tv->tv_sec * 1000000000ULL + tv->tv_usec * 1000ULL;
}

static void udmabuf_alloc(struct udmabuf *d, size_t size, bool huge)
{
	struct udmabuf_create create = {};
	unsigned int flags = MFD_ALLOW_SEALING;

	if (huge) {
		flags |= MFD_HUGETLB | MFD_HUGE_2MB;
		size = (size + HUGE_PAGE_SIZE - 1) & ~(HUGE_PAGE_SIZE - 1);
	}
	d->size = size;

	d->devfd = open("/dev/udmabuf", O_RDONLY);
	if (d->devfd < 0)
		error(1, errno, "open /dev/udmabuf");
	d->memfd = memfd_create("devmem_rx_bench", flags);
	if (d->memfd < 0)
		error(1, errno, "memfd_create%s", huge ? " (huge pages)" : "");
	if (fcntl(d->memfd, F_ADD_SEALS, F_SEAL_SHRINK))
		error(1, errno, "F_ADD_SEALS");
	if (ftruncate(d->memfd, size))
		error(1, errno, "ftruncate");

	create.memfd = d->memfd;
	create.offset = 0;
	create.size = size;
	d->fd = ioctl(d->devfd, UDMABUF_CREATE, &create);
	if (d->fd < 0)
		error(1, errno, "UDMABUF_CREATE");
	d->mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd, 0);
	if (d->mem == MAP_FAILED)
		error(1, errno, "mmap udmabuf");
	/* Every page faulted in now: no mode pays for it while timed. */
	memset(d->mem, 0, size);
}

static void udmabuf_free(struct udmabuf *d)
{
	munmap(d->mem, d->size);
	close(d->fd);
	close(d->memfd);
	close(d->devfd);
}

static void udmabuf_sync(const struct udmabuf *d, __u64 flags)
{
	struct dma_buf_sync sync = { .flags = flags };

	if (ioctl(d->fd, DMA_BUF_IOCTL_SYNC, &sync))
		error(1, errno, "DMA_BUF_IOCTL_SYNC");
}

static void check_header_split(unsigned int ifindex, const char *ifname)
{
	struct ethtool_rings_get_req *req;
	struct ethtool_rings_get_rsp *rsp;
	struct ynl_error yerr;
	struct ynl_sock *ys;

	ys = ynl_sock_create(&ynl_ethtool_family, &yerr);
	if (!ys)
		error(1, 0, "YNL: %s", yerr.msg);
	req = ethtool_rings_get_req_alloc();
	ethtool_rings_get_req_set_header_dev_index(req, ifindex);
	rsp = ethtool_rings_get(ys, req);
	ethtool_rings_get_req_free(req);
	if (!rsp)
		error(1, 0, "rings-get: %s", ys->err.msg);
	if (!rsp->_present.tcp_data_split ||
	    rsp->tcp_data_split != ETHTOOL_TCP_DATA_SPLIT_ENABLED)
		error(1, 0,
		      "%s: tcp-data-split is not on: every mode must take the driver's header-split path",
		      ifname);
	ethtool_rings_get_rsp_free(rsp);
	ynl_sock_destroy(ys);
}

/* The device's last receive queue, where ncdevmem binds by default. */
static int last_rx_queue(unsigned int ifindex)
{
	struct ethtool_channels_get_req *req;
	struct ethtool_channels_get_rsp *rsp;
	struct ynl_error yerr;
	struct ynl_sock *ys;
	int n;

	ys = ynl_sock_create(&ynl_ethtool_family, &yerr);
	if (!ys)
		error(1, 0, "YNL: %s", yerr.msg);
	req = ethtool_channels_get_req_alloc();
	ethtool_channels_get_req_set_header_dev_index(req, ifindex);
	rsp = ethtool_channels_get(ys, req);
	ethtool_channels_get_req_free(req);
	if (!rsp)
		error(1, 0, "channels-get: %s", ys->err.msg);
	n = rsp->rx_count + rsp->combined_count;
	ethtool_channels_get_rsp_free(rsp);
	ynl_sock_destroy(ys);
	if (n < 1)
		error(1, 0, "the device has no receive queue");
	return n - 1;
}

/* Binds the udmabuf to the queue; the binding lives as long as the socket. */
static struct ynl_sock *bind_rx(unsigned int ifindex, unsigned int queue)
{
	struct netdev_bind_rx_req *req;
	struct netdev_bind_rx_rsp *rsp;
	struct netdev_queue_id *queues;
	struct ynl_error yerr;
	struct ynl_sock *ys;

	ys = ynl_sock_create(&ynl_netdev_family, &yerr);
	if (!ys)
		error(1, 0, "YNL: %s", yerr.msg);
	queues = netdev_queue_id_alloc(1);
	netdev_queue_id_set_type(&queues[0], NETDEV_QUEUE_TYPE_RX);
	netdev_queue_id_set_id(&queues[0], queue);

	req = netdev_bind_rx_req_alloc();
	netdev_bind_rx_req_set_ifindex(req, ifindex);
	netdev_bind_rx_req_set_fd(req, dmabuf.fd);
	__netdev_bind_rx_req_set_queues(req, queues, 1);
	if (rx_page_size)
		netdev_bind_rx_req_set_rx_page_size(req, rx_page_size);
	rsp = netdev_bind_rx(ys, req);
	netdev_bind_rx_req_free(req);
	if (!rsp || !rsp->_present.id)
		error(1, 0, "bind-rx of queue %u: %s", queue, ys->err.msg);
	dmabuf_id = rsp->id;
	netdev_bind_rx_rsp_free(rsp);
	return ys;
}

static void check_pattern(const struct flow *f, const unsigned char *p,
			  size_t n, const char *where)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] != (f->pos + i) % PATTERN_PERIOD)
			error(1, 0, "flow %d: byte %llu is %u, expected %llu (%s)",
			      f->index, f->pos + i, p[i],
			      (f->pos + i) % PATTERN_PERIOD, where);
	}
}

/* Gives the flow's held tokens back, all of which the kernel must know. */
static void return_tokens(struct flow *f)
{
	int ret;

	if (!f->nranges)
		return;
	ret = setsockopt(f->fd, SOL_SOCKET, SO_DEVMEM_DONTNEED, f->batch,
			 f->nranges * sizeof(f->batch[0]));
	if (ret < 0)
		error(1, errno, "flow %d: SO_DEVMEM_DONTNEED", f->index);
	if ((unsigned int)ret > f->nfrags ||
	    (guess_cpu < 0 && (unsigned int)ret != f->nfrags))
		error(1, 0, "flow %d: SO_DEVMEM_DONTNEED freed %d of %u frags",
		      f->index, ret, f->nfrags);
	if (validate) {
		/* The same tokens again: the kernel must know none of them. */
		ret = setsockopt(f->fd, SOL_SOCKET, SO_DEVMEM_DONTNEED,
				 f->batch, f->nranges * sizeof(f->batch[0]));
		if (ret < 0)
			error(1, errno, "flow %d: SO_DEVMEM_DONTNEED again",
			      f->index);
		if (ret)
			error(1, 0, "flow %d: %d of %u frags freed twice",
			      f->index, ret, f->nfrags);
	}
	stats.dontneed++;
	stats.ranges += f->nranges;
	f->nranges = 0;
	f->nfrags = 0;
}

/* Holds a token, merged with the last range when it follows it. */
static void hold_token(struct flow *f, __u32 token)
{
	struct dmabuf_token *last = f->nranges ? &f->batch[f->nranges - 1] : NULL;

	if (last && token == last->token_start + last->token_count) {
		last->token_count++;
	} else {
		if (f->nranges == MAX_DONTNEED_TOKENS)
			return_tokens(f);
		f->batch[f->nranges].token_start = token;
		f->batch[f->nranges].token_count = 1;
		f->nranges++;
	}
	if (++f->nfrags == batch_frags)
		return_tokens(f);
}

static ssize_t recv_copy(struct flow *f)
{
	ssize_t n;

	n = recv(f->fd, dmabuf.mem + copy_off, recv_size, MSG_DONTWAIT);
	if (n <= 0)
		return n;
	if (validate)
		check_pattern(f, dmabuf.mem + copy_off, n, "copy");
	f->pos += n;
	copy_off += n;
	if (copy_off + recv_size > dmabuf.size)
		copy_off = 0;
	return n;
}

static ssize_t recv_trunc(struct flow *f)
{
	ssize_t n;

	n = recv(f->fd, dmabuf.mem, recv_size, MSG_TRUNC | MSG_DONTWAIT);
	if (n > 0)
		f->pos += n;
	return n;
}

static ssize_t recv_devmem(struct flow *f)
{
	struct iovec iov = { .iov_base = iobuf, .iov_len = recv_size };
	struct msghdr msg = {};
	size_t linear = 0, seen = 0;
	struct dmabuf_cmsg dc;
	struct cmsghdr *cm;
	bool synced = false;
	ssize_t n;

	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = ctrl;
	msg.msg_controllen = ctrl_size;
	n = recvmsg(f->fd, &msg, MSG_SOCK_DEVMEM | MSG_DONTWAIT);
	if (n <= 0)
		return n;
	if (msg.msg_flags & MSG_CTRUNC)
		error(1, 0, "flow %d: MSG_CTRUNC: cmsgs were lost", f->index);

	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET ||
		    (cm->cmsg_type != SCM_DEVMEM_DMABUF &&
		     cm->cmsg_type != SCM_DEVMEM_LINEAR))
			error(1, 0, "flow %d: unexpected cmsg level %d type %d",
			      f->index, cm->cmsg_level, cm->cmsg_type);
		if (cm->cmsg_len < CMSG_LEN(sizeof(dc)))
			error(1, 0, "flow %d: short devmem cmsg (%zu bytes)",
			      f->index, (size_t)cm->cmsg_len);
		memcpy(&dc, CMSG_DATA(cm), sizeof(dc));

		if (cm->cmsg_type == SCM_DEVMEM_LINEAR) {
			/* Bytes copied to the iovec, in order. */
			if (linear + dc.frag_size > (size_t)n)
				error(1, 0, "flow %d: %u linear bytes past the %zd received",
				      f->index, dc.frag_size, n);
			if (validate)
				check_pattern(f, iobuf + linear, dc.frag_size,
					      "linear");
			linear += dc.frag_size;
			stats.linear_bytes += dc.frag_size;
		} else {
			if (dc.dmabuf_id != dmabuf_id)
				error(1, 0,
				      "flow %d: frag of dma-buf %u, not %u: steered to another binding",
				      f->index, dc.dmabuf_id, dmabuf_id);
			if (!dc.frag_size ||
			    dc.frag_offset + dc.frag_size > dmabuf.size)
				error(1, 0,
				      "flow %d: frag at %llu of %u bytes outside the %zu-byte dma-buf",
				      f->index, (unsigned long long)dc.frag_offset,
				      dc.frag_size, dmabuf.size);
			if (validate) {
				/*
				 * One CPU access for the whole receive: a
				 * sync covers the whole dma-buf (udmabuf
				 * syncs every scatterlist entry).
				 */
				if (!synced)
					udmabuf_sync(&dmabuf, DMA_BUF_SYNC_START |
							      DMA_BUF_SYNC_READ);
				synced = true;
				check_pattern(f, dmabuf.mem + dc.frag_offset,
					      dc.frag_size, "dma-buf");
			}
			stats.frags++;
			hold_token(f, dc.frag_token);
		}
		f->pos += dc.frag_size;
		seen += dc.frag_size;
	}
	if (synced)
		udmabuf_sync(&dmabuf, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ);
	/*
	 * A receive never mixes device-memory and host-memory skbs, and the
	 * latter come without cmsgs: bytes not accounted for by a cmsg were
	 * not steered to the bound queue.
	 */
	if (seen != (size_t)n)
		error(1, 0,
		      "flow %d: %zd bytes received, %zu in devmem cmsgs: not steered to the bound queue",
		      f->index, n, seen);
	return n;
}

/* One receive: bytes, 0 at EOF, -1 when there was nothing to read. */
static ssize_t receive(struct flow *f)
{
	ssize_t n;

	switch (mode) {
	case MODE_COPY:
		n = recv_copy(f);
		break;
	case MODE_DEVMEM:
		n = recv_devmem(f);
		break;
	default:
		n = recv_trunc(f);
		break;
	}
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return -1;
		error(1, errno, "flow %d: recv", f->index);
	}
	if (n > 0)
		stats.recvs++;
	return n;
}

static int listen_on(const struct sockaddr_in6 *addr)
{
	int fd, one = 1;

	fd = socket(AF_INET6, SOCK_STREAM, 0);
	if (fd < 0)
		error(1, errno, "socket");
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		error(1, errno, "SO_REUSEADDR");
	if (bind(fd, (const struct sockaddr *)addr, sizeof(*addr)))
		error(1, errno, "bind");
	if (listen(fd, nflows))
		error(1, errno, "listen");
	return fd;
}

static void accept_flows(int lfd, struct flow *flows)
{
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	int i, ret;

	for (i = 0; i < nflows; i++) {
		ret = poll(&pfd, 1, IDLE_TIMEOUT_MS);
		if (ret < 0)
			error(1, errno, "poll");
		if (!ret)
			error(1, 0, "connection %d of %d did not come in %d s",
			      i + 1, nflows, IDLE_TIMEOUT_MS / 1000);
		flows[i].fd = accept(lfd, NULL, NULL);
		if (flows[i].fd < 0)
			error(1, errno, "accept");
		flows[i].index = i;
	}
}

/* Receives every flow to its EOF; returns the wall time, sets *ru0. */
static unsigned long long receive_all(struct flow *flows, struct rusage *ru0)
{
	struct epoll_event ev = { .events = EPOLLIN }, evs[MAX_FLOWS];
	unsigned long long t0 = 0;
	int ep, open = nflows, i, n;
	ssize_t got;

	ep = epoll_create1(0);
	if (ep < 0)
		error(1, errno, "epoll_create1");
	for (i = 0; i < nflows; i++) {
		ev.data.ptr = &flows[i];
		if (epoll_ctl(ep, EPOLL_CTL_ADD, flows[i].fd, &ev))
			error(1, errno, "epoll_ctl");
	}

	while (open) {
		n = epoll_wait(ep, evs, MAX_FLOWS, IDLE_TIMEOUT_MS);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			error(1, errno, "epoll_wait");
		}
		if (!n)
			error(1, 0, "no data for %d s, %d of %d flows open",
			      IDLE_TIMEOUT_MS / 1000, open, nflows);
		if (!t0) {
			t0 = now_ns();
			getrusage(RUSAGE_SELF, ru0);
		}
		for (i = 0; i < n; i++) {
			struct flow *f = evs[i].data.ptr;

			/* A full read may leave more: read on. */
			do {
				got = receive(f);
			} while (got == (ssize_t)recv_size);
			if (got)
				continue;
			return_tokens(f);
			if (epoll_ctl(ep, EPOLL_CTL_DEL, f->fd, NULL))
				error(1, errno, "epoll_ctl");
			f->eof = true;
			open--;
		}
	}
	close(ep);
	return now_ns() - t0;
}

static void parse_address(const char *str, int port, struct sockaddr_in6 *sin6)
{
	memset(sin6, 0, sizeof(*sin6));
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	if (inet_pton(AF_INET6, str, &sin6->sin6_addr) == 1)
		return;
	/* An IPv4 address, as a mapped IPv6 one. */
	if (inet_pton(AF_INET, str, &sin6->sin6_addr.s6_addr32[3]) != 1)
		error(2, 0, "bad address %s", str);
	sin6->sin6_addr.s6_addr16[5] = 0xffff;
}

/* -g: gives back tokens 1 to MAX_DONTNEED_FRAGS of every flow until told
 * to stop.
 */
static void *guess_tokens(void *arg)
{
	struct dmabuf_token all = { .token_start = 1,
				    .token_count = MAX_DONTNEED_FRAGS };
	struct flow *flows = arg;
	cpu_set_t cpus;
	int i, ret;

	CPU_ZERO(&cpus);
	CPU_SET(guess_cpu, &cpus);
	ret = pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	if (ret)
		error(1, ret, "-g: CPU %d", guess_cpu);
	while (!__atomic_load_n(&guess_stop, __ATOMIC_RELAXED)) {
		for (i = 0; i < nflows; i++) {
			ret = setsockopt(flows[i].fd, SOL_SOCKET,
					 SO_DEVMEM_DONTNEED, &all, sizeof(all));
			if (ret < 0)
				error(1, errno, "-g: flow %d: SO_DEVMEM_DONTNEED",
				      i);
			__atomic_add_fetch(&guessed, ret, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static void print_usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s -s SERVER_IP -p PORT -m copy|trunc|devmem|devmem-trunc\n"
		"       [-n FLOWS] [-f IFNAME] [-q QUEUE] [-r RECV_SIZE] [-P PAGES]\n"
		"       [-z RX_PAGE_SIZE] [-e BYTES_PER_FLOW] [-c CMSGS] [-g CPU]\n"
		"       [-v] [-w]\n", prog);
	exit(2);
}

int main(int argc, char *argv[])
{
	unsigned long long wall_ns, bytes = 0;
	const char *server = NULL, *ifname = NULL;
	int port = 0, queue = -1, opt, lfd, i, ret;
	unsigned long pages = DEFAULT_PAGES, cmsgs = MAX_CMSGS;
	struct ynl_sock *ys = NULL;
	struct sockaddr_in6 addr;
	unsigned int ifindex = 0;
	struct rusage ru0, ru1;
	pthread_t guesser;
	bool found, linger = false;
	struct flow *flows;
	size_t niovs;
	char c;

	while ((opt = getopt(argc, argv, "s:p:m:n:f:q:r:P:z:e:c:g:vw")) != -1) {
		switch (opt) {
		case 's':
			server = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'm':
			found = false;
			for (i = 0; i < (int)ARRAY_SIZE(mode_names); i++) {
				if (!strcmp(optarg, mode_names[i])) {
					mode = i;
					found = true;
				}
			}
			if (!found)
				print_usage(argv[0]);
			break;
		case 'n':
			nflows = atoi(optarg);
			break;
		case 'f':
			ifname = optarg;
			break;
		case 'q':
			queue = atoi(optarg);
			break;
		case 'r':
			recv_size = strtoul(optarg, NULL, 0);
			break;
		case 'P':
			pages = strtoul(optarg, NULL, 0);
			break;
		case 'z':
			rx_page_size = strtoul(optarg, NULL, 0);
			break;
		case 'e':
			expect_bytes = strtoull(optarg, NULL, 0);
			break;
		case 'c':
			cmsgs = strtoul(optarg, NULL, 0);
			break;
		case 'g':
			guess_cpu = atoi(optarg);
			break;
		case 'v':
			validate = true;
			break;
		case 'w':
			linger = true;
			break;
		default:
			print_usage(argv[0]);
		}
	}
	if (!server || port <= 0 || port > 65535 || nflows < 1 ||
	    nflows > MAX_FLOWS || !recv_size || !pages || !cmsgs ||
	    cmsgs > MAX_CMSGS)
		print_usage(argv[0]);
	if (devmem_mode() && !ifname)
		error(2, 0, "mode %s needs -f IFNAME", mode_names[mode]);
	if (guess_cpu >= 0 && (mode != MODE_DEVMEM || validate))
		error(2, 0, "-g: for mode devmem without -v");
	if (validate && (mode == MODE_TRUNC || mode == MODE_DEVMEM_TRUNC))
		error(2, 0, "-v: mode %s drops the payload unseen",
		      mode_names[mode]);
	parse_address(server, port, &addr);

	udmabuf_alloc(&dmabuf, pages * getpagesize(),
		      rx_page_size > (uint32_t)getpagesize());
	if (recv_size > dmabuf.size)
		error(2, 0, "-r %zu: larger than the %zu-byte udmabuf",
		      recv_size, dmabuf.size);
	/* The buffer for the bytes a devmem receive copies (headers). */
	iobuf = malloc(recv_size);
	ctrl_size = cmsgs * CMSG_SPACE(sizeof(struct dmabuf_cmsg));
	ctrl = malloc(ctrl_size);
	flows = calloc(nflows, sizeof(*flows));
	if (!iobuf || !ctrl || !flows)
		error(1, ENOMEM, "malloc");
	memset(iobuf, 0, recv_size);
	memset(ctrl, 0, ctrl_size);

	if (ifname) {
		ifindex = if_nametoindex(ifname);
		if (!ifindex)
			error(1, errno, "%s", ifname);
		check_header_split(ifindex, ifname);
	}
	if (devmem_mode()) {
		if (queue < 0)
			queue = last_rx_queue(ifindex);
		ys = bind_rx(ifindex, queue);
		/*
		 * The user holds at most half the binding's net_iovs, so that
		 * the ring and the sockets' queues always have some.
		 */
		niovs = dmabuf.size / (rx_page_size ?: getpagesize());
		if (niovs / (2 * nflows) < batch_frags)
			batch_frags = niovs / (2 * nflows) ?: 1;
		fprintf(stderr,
			"dma-buf %u bound to %s queue %d, %zu net_iovs, tokens back every %u frags\n",
			dmabuf_id, ifname, queue, niovs, batch_frags);
	}

	lfd = listen_on(&addr);
	printf("listening port=%d\n", port);
	fflush(stdout);
	accept_flows(lfd, flows);
	if (guess_cpu >= 0) {
		ret = pthread_create(&guesser, NULL, guess_tokens, flows);
		if (ret)
			error(1, ret, "-g: pthread_create");
	}

	wall_ns = receive_all(flows, &ru0);
	getrusage(RUSAGE_SELF, &ru1);
	if (guess_cpu >= 0) {
		__atomic_store_n(&guess_stop, true, __ATOMIC_RELAXED);
		pthread_join(guesser, NULL);
	}

	for (i = 0; i < nflows; i++) {
		bytes += flows[i].pos;
		if (expect_bytes && flows[i].pos != expect_bytes)
			error(1, 0, "flow %d carried %llu bytes, not %llu",
			      i, flows[i].pos, expect_bytes);
	}
	printf("devmem_rx_bench mode=%s flows=%d bytes=%llu wall_ns=%llu user_ns=%llu sys_ns=%llu",
	       mode_names[mode], nflows, bytes, wall_ns,
	       tv_ns(&ru1.ru_utime) - tv_ns(&ru0.ru_utime),
	       tv_ns(&ru1.ru_stime) - tv_ns(&ru0.ru_stime));
	printf(" recvs=%llu frags=%llu ranges=%llu dontneed=%llu linear_bytes=%llu guessed=%llu\n",
	       stats.recvs, stats.frags, stats.ranges, stats.dontneed,
	       stats.linear_bytes, guessed);
	fflush(stdout);

	for (i = 0; i < nflows; i++)
		close(flows[i].fd);
	close(lfd);
	while (linger && read(STDIN_FILENO, &c, 1) > 0)
		;
	if (ys)
		ynl_sock_destroy(ys);
	udmabuf_free(&dmabuf);
	free(flows);
	free(ctrl);
	free(iobuf);
	return 0;
}
