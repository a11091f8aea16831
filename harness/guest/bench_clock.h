/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The clocks of the benchmark programs (devmem_send, tcp_sendfile,
 * zcrx_rx_bench): the monotonic clock and a getrusage() time, in ns.
 */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <sys/time.h>
#include <time.h>

static inline unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline unsigned long long tv_ns(const struct timeval *tv)
{
	return tv->tv_sec * 1000000000ULL + tv->tv_usec * 1000ULL;
}

#endif /* BENCH_CLOCK_H */
