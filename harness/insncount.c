// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin that counts the guest's instructions per vCPU and
 * translated block, between marks a host process asks for: make bench
 * PROFILE=1's profile of the receive path (harness/guest/bench_rx.sh,
 * profile pass).
 *
 *   qemu-system-x86_64 ... -plugin insncount.so,dir=DIR
 *
 * A process appends "begin KEY" or "end KEY" lines to DIR/insns.req
 * (harness/hostcpu.sh does, when the guest asks it for a reading). On
 * "begin" the plugin notes every block's count; on "end" it writes, to
 * DIR/insns.KEY, one line per block that ran since:
 *
 *   VADDR INSNS EXECS_VCPU0 EXECS_VCPU1 ...
 *
 * (the block's guest virtual address in hex, its instructions, how often
 * each vCPU ran it), then appends "KEY begin" or "KEY end" to
 * DIR/insns.ack once that is done. Under TCG a guest's own profiler
 * samples guest time, which counts what the vCPU thread waited for (a
 * host CPU, QEMU's lock in an MMIO access); these counts are exact.
 *
 * Counting calls into the plugin on every block: run it in a boot of its
 * own, never under a timed run.
 *
 * The QEMU plugin API's header is not in Debian's QEMU packages: the few
 * functions used here, stable since the API's first version, are declared
 * below.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
		void (*cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb));
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
		void (*cb)(unsigned int vcpu_index, void *userdata),
		int flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);

#define EXPORT __attribute__((visibility("default")))
#define CB_NO_REGS 0
/* vCPUs counted; the others' blocks run uncounted. */
#define VCPUS 8

EXPORT int qemu_plugin_version = 4;

struct block {
	uint64_t vaddr;
	uint64_t insns;
	/* Written by vCPU n's thread alone; read by the control thread. */
	uint64_t execs[VCPUS];
	/* The counts at the last "begin": the control thread's. */
	uint64_t mark[VCPUS];
};

static struct block **blocks;
static size_t nr_blocks, cap_blocks;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char dir[4096];

static void exec_cb(unsigned int vcpu, void *data)
{
	struct block *b = data;

	if (vcpu < VCPUS)
		b->execs[vcpu]++;
}

static void trans_cb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	struct block *b = calloc(1, sizeof(*b));

	(void)id;
	if (!b)
		return;
	b->vaddr = qemu_plugin_tb_vaddr(tb);
	b->insns = qemu_plugin_tb_n_insns(tb);
	pthread_mutex_lock(&lock);
	if (nr_blocks == cap_blocks) {
		size_t cap = cap_blocks ? 2 * cap_blocks : 1 << 16;
		struct block **p = realloc(blocks, cap * sizeof(*p));

		if (!p) {
			pthread_mutex_unlock(&lock);
			free(b);
			return;
		}
		blocks = p;
		cap_blocks = cap;
	}
	blocks[nr_blocks++] = b;
	pthread_mutex_unlock(&lock);
	qemu_plugin_register_vcpu_tb_exec_cb(tb, exec_cb, CB_NO_REGS, b);
}

static size_t snapshot_len(void)
{
	size_t n;

	pthread_mutex_lock(&lock);
	n = nr_blocks;
	pthread_mutex_unlock(&lock);
	return n;
}

static void begin(void)
{
	size_t i, n = snapshot_len();

	for (i = 0; i < n; i++)
		memcpy(blocks[i]->mark, blocks[i]->execs, sizeof(blocks[i]->mark));
}

static int end(const char *key)
{
	char path[sizeof(dir) + 300], tmp[sizeof(path) + 8];
	size_t i, n = snapshot_len();
	FILE *f;
	int v;

	snprintf(path, sizeof(path), "%s/insns.%s", dir, key);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	for (i = 0; i < n; i++) {
		struct block *b = blocks[i];
		uint64_t d[VCPUS], any = 0;

		for (v = 0; v < VCPUS; v++) {
			d[v] = b->execs[v] - b->mark[v];
			any |= d[v];
		}
		if (!any)
			continue;
		fprintf(f, "%" PRIx64 " %" PRIu64, b->vaddr, b->insns);
		for (v = 0; v < VCPUS; v++)
			fprintf(f, " %" PRIu64, d[v]);
		fputc('\n', f);
	}
	if (fclose(f))
		return -errno;
	return rename(tmp, path) ? -errno : 0;
}

static void ack(const char *key, const char *what)
{
	char path[sizeof(dir) + 16];
	FILE *f;

	snprintf(path, sizeof(path), "%s/insns.ack", dir);
	f = fopen(path, "a");
	if (!f)
		return;
	fprintf(f, "%s %s\n", key, what);
	fclose(f);
}

/* Follows DIR/insns.req, a line at a time. */
static void *control(void *arg)
{
	char req[sizeof(dir) + 16], line[512], key[256], verb[16];
	long off = 0;

	(void)arg;
	snprintf(req, sizeof(req), "%s/insns.req", dir);
	for (;;) {
		FILE *f = fopen(req, "r");

		if (f && fseek(f, off, SEEK_SET) == 0) {
			while (fgets(line, sizeof(line), f) && strchr(line, '\n')) {
				off = ftell(f);
				if (sscanf(line, "%15s %255s", verb, key) != 2)
					continue;
				if (!strcmp(verb, "begin")) {
					begin();
					ack(key, "begin");
				} else if (!strcmp(verb, "end")) {
					ack(key, end(key) ? "error" : "end");
				}
			}
		}
		if (f)
			fclose(f);
		usleep(1000);
	}
	return NULL;
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const void *info, int argc, char **argv)
{
	pthread_t thread;
	int i;

	(void)info;
	for (i = 0; i < argc; i++)
		if (!strncmp(argv[i], "dir=", 4))
			snprintf(dir, sizeof(dir), "%s", argv[i] + 4);
	if (!dir[0]) {
		fprintf(stderr, "insncount: no dir= argument\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, trans_cb);
	if (pthread_create(&thread, NULL, control, NULL)) {
		fprintf(stderr, "insncount: no control thread\n");
		return -1;
	}
	pthread_detach(thread);
	return 0;
}
