// SPDX-License-Identifier: GPL-2.0
/*
 * zcrx_rx_bench: the io_uring zero-copy receive (zcrx) modes of the receive
 * benchmark (bench_rx.sh), beside devmem_rx_bench's devmem, copy and trunc:
 * the same arguments, flows, pattern and result line, so that the script
 * runs either program the same way.
 *
 *   zcrx         the area in user memory: anonymous pages, 2 MiB huge
 *                pages when RX_BUF_LEN is not the page size
 *   zcrx-dmabuf  the area a udmabuf (IORING_ZCRX_AREA_DMABUF), as devmem
 *                binds one: the payload read through its mapping
 *
 *   zcrx_rx_bench -s SERVER_IP -p PORT -m MODE -f IFNAME -q QUEUE
 *                 [-n FLOWS] [-P PAGES] [-z RX_BUF_LEN]
 *                 [-e BYTES_PER_FLOW] [-v] [-w]
 *
 * It registers a zcrx interface queue on IFNAME's receive queue QUEUE with
 * an area of PAGES pages (16000 by default, devmem_rx_bench's udmabuf)
 * and RX_BUF_LEN as the buffers' size (the page size by default), listens
 * on SERVER_IP:PORT, accepts FLOWS connections and receives all of them
 * with one multishot IORING_OP_RECV_ZC each, until each has reached EOF.
 * Every completion's buffer goes back through the refill ring as soon as
 * it has been seen, the ring's tail published once for each batch of
 * completions a wait returned. The caller configures the device as for
 * devmem: header split on (the registration fails without it) and a
 * flow rule steering the port to QUEUE.
 *
 * -v checks every byte of every flow, at stream offset i, to be i % 251
 * (tcp_sendfile's pattern), where the completion says it landed; it reads
 * every byte, so it is for a correctness run, not a timed one. -e fails
 * the run unless every flow carried BYTES_PER_FLOW. -w: after the result
 * line, close the connections and wait for standard input to reach EOF
 * before unregistering (which restarts the queue), as devmem_rx_bench -w.
 *
 * Prints on stdout "listening port=PORT" once it is ready for the
 * connections, and at the end one line of key=value pairs:
 *
 *   zcrx_rx_bench mode=M flows=N bytes=B wall_ns=W user_ns=U sys_ns=S
 *                 recvs=R frags=F ranges=G dontneed=D rearms=A
 *
 * as devmem_rx_bench's: bytes over all flows, wall_ns from the first
 * completion to the last EOF, user_ns and sys_ns the process's CPU time
 * over the same span; recvs the waits for completions, frags the
 * completions with data, ranges the refill entries that gave
 * their buffers back and dontneed the refill ring's tail updates; rearms
 * the multishot receives that ended before EOF and were armed again.
 * Exits 0 only when every flow ended cleanly and every check passed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <error.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/dma-buf.h>
#include <linux/mman.h>
#include <linux/memfd.h>
#include <linux/udmabuf.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <liburing.h>

#include "bench_clock.h"

#define PATTERN_PERIOD		251
#define MAX_FLOWS		64
#define DEFAULT_PAGES		16000
#define IDLE_TIMEOUT_S		30
#define HUGE_PAGE_SIZE		(2UL << 20)
/* The kernel's most refill entries (io_uring/zcrx.c, IO_RQ_MAX_ENTRIES). */
#define MAX_RQ_ENTRIES		32768
#define SQ_ENTRIES		128
#define CQ_ENTRIES		4096
/* user_data of a flow's receive: its index plus this. */
#define RECV_TAG		1

enum mode {
	MODE_ZCRX,
	MODE_ZCRX_DMABUF,
};

static const char * const mode_names[] = {
	[MODE_ZCRX] = "zcrx",
	[MODE_ZCRX_DMABUF] = "zcrx-dmabuf",
};

struct flow {
	int fd;
	bool eof;
	/* Bytes received so far: the stream offset of the next one. */
	unsigned long long pos;
};

/* The area: user memory or a udmabuf, mapped here either way. */
static struct {
	size_t size;
	unsigned char *mem;
	int devfd, memfd, fd;
	__u64 token;
} area = { .devfd = -1, .memfd = -1, .fd = -1 };

static struct io_uring_zcrx_rq rq;
static void *rq_mem;
static size_t rq_mem_size;

static struct {
	unsigned long long recvs, frags, ranges, dontneed, rearms;
} stats;

static enum mode mode = MODE_ZCRX;
static int nflows = 1;
static bool validate;
static long page_size;

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

static void area_alloc(size_t size, bool huge)
{
	struct udmabuf_create create = {};
	unsigned int flags = MFD_ALLOW_SEALING;

	if (huge)
		size = align_up(size, HUGE_PAGE_SIZE);
	area.size = size;
	if (mode == MODE_ZCRX) {
		area.mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS |
				(huge ? MAP_HUGETLB | MAP_HUGE_2MB : 0), -1, 0);
		if (area.mem == MAP_FAILED)
			error(1, errno, "mmap of the area%s",
			      huge ? " (huge pages)" : "");
	} else {
		if (huge)
			flags |= MFD_HUGETLB | MFD_HUGE_2MB;
		area.devfd = open("/dev/udmabuf", O_RDONLY);
		if (area.devfd < 0)
			error(1, errno, "open /dev/udmabuf");
		area.memfd = memfd_create("zcrx_rx_bench", flags);
		if (area.memfd < 0)
			error(1, errno, "memfd_create%s",
			      huge ? " (huge pages)" : "");
		if (fcntl(area.memfd, F_ADD_SEALS, F_SEAL_SHRINK))
			error(1, errno, "F_ADD_SEALS");
		if (ftruncate(area.memfd, size))
			error(1, errno, "ftruncate");
		create.memfd = area.memfd;
		create.size = size;
		area.fd = ioctl(area.devfd, UDMABUF_CREATE, &create);
		if (area.fd < 0)
			error(1, errno, "UDMABUF_CREATE");
		area.mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
				area.fd, 0);
		if (area.mem == MAP_FAILED)
			error(1, errno, "mmap of the udmabuf");
	}
	/* Every page faulted in now, as devmem_rx_bench's udmabuf. */
	memset(area.mem, 0, size);
}

static void area_free(void)
{
	munmap(area.mem, area.size);
	if (area.fd >= 0)
		close(area.fd);
	if (area.memfd >= 0)
		close(area.memfd);
	if (area.devfd >= 0)
		close(area.devfd);
}

static void area_sync(__u64 flags)
{
	struct dma_buf_sync sync = { .flags = flags };

	if (area.fd >= 0 && ioctl(area.fd, DMA_BUF_IOCTL_SYNC, &sync))
		error(1, errno, "DMA_BUF_IOCTL_SYNC");
}

/*
 * The interface queue: QUEUE of IFINDEX, the area, and a refill ring with
 * room for an entry for every buffer of the area twice over (a buffer may
 * come in two completions), so that it can never be full.
 */
static void register_zcrx(struct io_uring *ring, unsigned int ifindex,
			  unsigned int queue, unsigned int buf_len)
{
	struct io_uring_zcrx_area_reg area_reg = {
		.len = area.size,
	};
	struct io_uring_region_desc region = {};
	struct io_uring_zcrx_ifq_reg reg = {
		.if_idx = ifindex,
		.if_rxq = queue,
		.rx_buf_len = buf_len,
	};
	unsigned int entries = 1;
	size_t bufs = area.size / (buf_len ?: page_size);
	int ret;

	while (entries < 2 * bufs && entries < MAX_RQ_ENTRIES)
		entries <<= 1;
	reg.rq_entries = entries;

	if (mode == MODE_ZCRX_DMABUF) {
		area_reg.flags = IORING_ZCRX_AREA_DMABUF;
		area_reg.dmabuf_fd = area.fd;
	} else {
		area_reg.addr = (__u64)(uintptr_t)area.mem;
	}
	rq_mem_size = align_up(page_size + entries * sizeof(struct io_uring_zcrx_rqe),
			       page_size);
	rq_mem = mmap(NULL, rq_mem_size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rq_mem == MAP_FAILED)
		error(1, errno, "mmap of the refill ring");
	region.user_addr = (__u64)(uintptr_t)rq_mem;
	region.size = rq_mem_size;
	region.flags = IORING_MEM_REGION_TYPE_USER;
	reg.area_ptr = (__u64)(uintptr_t)&area_reg;
	reg.region_ptr = (__u64)(uintptr_t)&region;

	ret = io_uring_register_ifq(ring, &reg);
	if (ret)
		error(1, -ret,
		      "zcrx registration on queue %u (header split on? rx-buf-len %u?)",
		      queue, buf_len);
	rq.khead = (unsigned int *)((char *)rq_mem + reg.offsets.head);
	rq.ktail = (unsigned int *)((char *)rq_mem + reg.offsets.tail);
	rq.rqes = (struct io_uring_zcrx_rqe *)((char *)rq_mem + reg.offsets.rqes);
	rq.rq_tail = 0;
	rq.ring_entries = reg.rq_entries;
	area.token = area_reg.rq_area_token;
	fprintf(stderr,
		"zcrx %u on queue %u: %zu-byte %s area, buffers of %u bytes, %u refill entries\n",
		reg.zcrx_id, queue, area.size,
		mode == MODE_ZCRX ? "user-memory" : "dma-buf",
		buf_len ?: (unsigned int)page_size, reg.rq_entries);
}

static void arm_recv(struct io_uring *ring, int index, int fd)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		error(1, 0, "no submission entry free");
	io_uring_prep_rw(IORING_OP_RECV_ZC, sqe, fd, NULL, 0, 0);
	sqe->ioprio |= IORING_RECV_MULTISHOT;
	sqe->user_data = RECV_TAG + index;
}

static void check_pattern(int index, const struct flow *f,
			  const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] != (f->pos + i) % PATTERN_PERIOD)
			error(1, 0, "flow %d: byte %llu is %u, expected %llu",
			      index, f->pos + i, p[i],
			      (f->pos + i) % PATTERN_PERIOD);
	}
}

/* One completion of flow INDEX; returns whether the flow reached EOF. */
static bool complete(struct io_uring *ring, struct flow *flows, int index,
		     const struct io_uring_cqe *cqe)
{
	const struct io_uring_zcrx_cqe *zcqe = (const void *)(cqe + 1);
	unsigned int mask = rq.ring_entries - 1;
	struct flow *f = &flows[index];
	struct io_uring_zcrx_rqe *rqe;
	__u64 off;

	if (cqe->res < 0) {
		/* The completion queue was full: the receive stopped there. */
		if (cqe->res == -ENOSPC && !(cqe->flags & IORING_CQE_F_MORE)) {
			stats.rearms++;
			arm_recv(ring, index, f->fd);
			return false;
		}
		error(1, -cqe->res, "flow %d: RECV_ZC", index);
	}
	if (!cqe->res) {
		if (cqe->flags & IORING_CQE_F_MORE)
			error(1, 0, "flow %d: an empty completion with more to come",
			      index);
		return true;
	}
	off = zcqe->off & ~IORING_ZCRX_AREA_MASK;
	if (off + cqe->res > area.size)
		error(1, 0, "flow %d: %d bytes at %llu, outside the %zu-byte area",
		      index, cqe->res, (unsigned long long)off, area.size);
	if (validate) {
		area_sync(DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ);
		check_pattern(index, f, area.mem + off, cqe->res);
		area_sync(DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ);
	}
	f->pos += cqe->res;
	stats.frags++;

	if (rq.rq_tail - io_uring_smp_load_acquire(rq.khead) >= rq.ring_entries)
		error(1, 0, "the refill ring is full (%u entries)",
		      rq.ring_entries);
	rqe = &rq.rqes[rq.rq_tail & mask];
	rqe->off = off | area.token;
	rqe->len = cqe->res;
	rq.rq_tail++;
	stats.ranges++;

	if (!(cqe->flags & IORING_CQE_F_MORE)) {
		stats.rearms++;
		arm_recv(ring, index, f->fd);
	}
	return false;
}

/* Receives every flow to its EOF; returns the wall time, sets *ru0. */
static unsigned long long receive_all(struct io_uring *ring,
				      struct flow *flows, struct rusage *ru0)
{
	struct __kernel_timespec idle = { .tv_sec = IDLE_TIMEOUT_S };
	unsigned long long t0 = 0, before;
	struct io_uring_cqe *cqe;
	unsigned int head, seen;
	int open = nflows, i, ret;

	for (i = 0; i < nflows; i++)
		arm_recv(ring, i, flows[i].fd);
	while (open) {
		ret = io_uring_submit_and_wait_timeout(ring, &cqe, 1, &idle,
						       NULL);
		if (ret == -ETIME)
			error(1, 0, "no data for %d s, %d of %d flows open",
			      IDLE_TIMEOUT_S, open, nflows);
		if (ret < 0 && ret != -EINTR)
			error(1, -ret, "io_uring_submit_and_wait_timeout");
		if (!t0) {
			t0 = now_ns();
			getrusage(RUSAGE_SELF, ru0);
		}
		seen = 0;
		before = stats.frags;
		io_uring_for_each_cqe(ring, head, cqe) {
			i = cqe->user_data - RECV_TAG;
			if (cqe->user_data < RECV_TAG || i >= nflows ||
			    flows[i].eof)
				error(1, 0, "a completion of no open flow (%llu)",
				      (unsigned long long)cqe->user_data);
			if (complete(ring, flows, i, cqe)) {
				flows[i].eof = true;
				open--;
			}
			seen++;
		}
		io_uring_cq_advance(ring, seen);
		stats.recvs++;
		if (stats.frags != before) {
			io_uring_smp_store_release(rq.ktail, rq.rq_tail);
			stats.dontneed++;
		}
	}
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
		ret = poll(&pfd, 1, IDLE_TIMEOUT_S * 1000);
		if (ret < 0)
			error(1, errno, "poll");
		if (!ret)
			error(1, 0, "connection %d of %d did not come in %d s",
			      i + 1, nflows, IDLE_TIMEOUT_S);
		flows[i].fd = accept(lfd, NULL, NULL);
		if (flows[i].fd < 0)
			error(1, errno, "accept");
	}
}

static void print_usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s -s SERVER_IP -p PORT -m zcrx|zcrx-dmabuf -f IFNAME -q QUEUE\n"
		"       [-n FLOWS] [-P PAGES] [-z RX_BUF_LEN] [-e BYTES_PER_FLOW]\n"
		"       [-v] [-w]\n", prog);
	exit(2);
}

int main(int argc, char *argv[])
{
	unsigned long long wall_ns, bytes = 0, expect_bytes = 0;
	const char *server = NULL, *ifname = NULL;
	int port = 0, queue = -1, opt, lfd, i;
	unsigned long pages = DEFAULT_PAGES;
	struct io_uring_params params = {};
	unsigned int ifindex, buf_len = 0;
	struct sockaddr_in6 addr;
	struct rusage ru0, ru1;
	struct io_uring ring;
	bool found, linger = false;
	struct flow *flows;
	int ret;
	char c;

	page_size = sysconf(_SC_PAGESIZE);
	while ((opt = getopt(argc, argv, "s:p:m:n:f:q:P:z:e:vw")) != -1) {
		switch (opt) {
		case 's':
			server = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'm':
			found = false;
			for (i = 0; i < 2; i++) {
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
		case 'P':
			pages = strtoul(optarg, NULL, 0);
			break;
		case 'z':
			buf_len = strtoul(optarg, NULL, 0);
			break;
		case 'e':
			expect_bytes = strtoull(optarg, NULL, 0);
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
	    nflows > MAX_FLOWS || !pages || !ifname || queue < 0)
		print_usage(argv[0]);
	if (buf_len == page_size)
		buf_len = 0;
	parse_address(server, port, &addr);
	ifindex = if_nametoindex(ifname);
	if (!ifindex)
		error(1, errno, "%s", ifname);

	area_alloc(pages * page_size, buf_len);
	flows = calloc(nflows, sizeof(*flows));
	if (!flows)
		error(1, ENOMEM, "calloc");

	/*
	 * As iou-zcrx: completions run in this task when it waits
	 * (DEFER_TASKRUN), 32-byte completions carry the zcrx part.
	 */
	params.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER |
		       IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SUBMIT_ALL |
		       IORING_SETUP_CQE32 | IORING_SETUP_CQSIZE;
	params.cq_entries = CQ_ENTRIES;
	ret = io_uring_queue_init_params(SQ_ENTRIES, &ring, &params);
	if (ret)
		error(1, -ret, "io_uring_queue_init_params");
	register_zcrx(&ring, ifindex, queue, buf_len);

	lfd = listen_on(&addr);
	printf("listening port=%d\n", port);
	fflush(stdout);
	accept_flows(lfd, flows);

	wall_ns = receive_all(&ring, flows, &ru0);
	getrusage(RUSAGE_SELF, &ru1);

	for (i = 0; i < nflows; i++) {
		bytes += flows[i].pos;
		if (expect_bytes && flows[i].pos != expect_bytes)
			error(1, 0, "flow %d carried %llu bytes, not %llu",
			      i, flows[i].pos, expect_bytes);
	}
	printf("zcrx_rx_bench mode=%s flows=%d bytes=%llu wall_ns=%llu user_ns=%llu sys_ns=%llu",
	       mode_names[mode], nflows, bytes, wall_ns,
	       tv_ns(&ru1.ru_utime) - tv_ns(&ru0.ru_utime),
	       tv_ns(&ru1.ru_stime) - tv_ns(&ru0.ru_stime));
	printf(" recvs=%llu frags=%llu ranges=%llu dontneed=%llu rearms=%llu\n",
	       stats.recvs, stats.frags, stats.ranges, stats.dontneed,
	       stats.rearms);
	fflush(stdout);

	for (i = 0; i < nflows; i++)
		close(flows[i].fd);
	close(lfd);
	while (linger && read(STDIN_FILENO, &c, 1) > 0)
		;
	io_uring_queue_exit(&ring);
	munmap(rq_mem, rq_mem_size);
	area_free();
	free(flows);
	return 0;
}
