#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tests of make bench PROFILE=1's instruction counts: the QEMU plugin
(harness/insncount.c) built against a stand-in for QEMU's plugin API,
hostcpu.sh passing the guest's marks on to it, and the guest's profile
from its counts (harness/guest/insns.py)."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest

HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
sys.path.insert(0, os.path.join(HARNESS, 'guest'))
import insns  # noqa: E402  pylint: disable=wrong-import-position

# QEMU's side of the plugin API, driven from stdin: "trans VADDR N" makes
# a block of N instructions at VADDR (answers its number), "exec B VCPU
# K" runs block B K times on VCPU.
STUB = textwrap.dedent('''\
    #include <stdint.h>
    #include <stdio.h>
    #include <stdlib.h>
    struct qemu_plugin_tb { uint64_t vaddr; size_t n; };
    static void (*trans)(uint64_t, struct qemu_plugin_tb *);
    static struct { void (*cb)(unsigned int, void *); void *data; } blocks[64];
    static int nr, cur;
    void qemu_plugin_register_vcpu_tb_trans_cb(uint64_t id,
            void (*cb)(uint64_t, struct qemu_plugin_tb *)) { trans = cb; }
    void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
            void (*cb)(unsigned int, void *), int flags, void *data)
    { blocks[cur].cb = cb; blocks[cur].data = data; }
    size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb) { return tb->n; }
    uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb) { return tb->vaddr; }
    int qemu_plugin_install(uint64_t, const void *, int, char **);
    int main(int argc, char **argv)
    {
        char cmd[16];
        if (qemu_plugin_install(1, NULL, argc - 1, argv + 1))
            return 1;
        while (scanf("%15s", cmd) == 1) {
            if (cmd[0] == 't') {
                struct qemu_plugin_tb tb;
                scanf("%lx %zu", &tb.vaddr, &tb.n);
                cur = nr++;
                trans(1, &tb);
                printf("%d\\n", cur);
            } else {
                int b, k; unsigned int v;
                scanf("%d %u %d", &b, &v, &k);
                while (k--)
                    blocks[b].cb(v, blocks[b].data);
                printf("ok\\n");
            }
            fflush(stdout);
        }
        return 0;
    }
''')


def build(tmp):
    src = os.path.join(tmp, 'stub.c')
    with open(src, 'w', encoding='ascii') as f:
        f.write(STUB)
    exe = os.path.join(tmp, 'stub')
    cc = shutil.which('clang') or shutil.which('cc')
    subprocess.run([cc, '-O1', '-Wall', '-o', exe, src, os.path.join(HARNESS, 'insncount.c'),
                    '-lpthread'], check=True)
    return exe


def wait_answer(path, verb, key, timeout=10):
    """The line answering "verb key" in file path: "key verb" or an
    error."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path, encoding='ascii') as f:
                for line in f:
                    if line.startswith((f'{key} {verb}', f'{key} error')):
                        return line.split()
        time.sleep(0.005)
    raise AssertionError(f'no answer to "{verb} {key}" in {path}')


class Plugin(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.build_dir = tempfile.mkdtemp()
        cls.exe = build(cls.build_dir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.build_dir)

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        open(os.path.join(self.dir, 'insns.req'), 'w', encoding='ascii').close()
        self.qemu = subprocess.Popen([self.exe, f'dir={self.dir}'], text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def tearDown(self):
        self.qemu.kill()
        self.qemu.wait()
        self.qemu.stdin.close()
        self.qemu.stdout.close()
        shutil.rmtree(self.dir)

    def cmd(self, line):
        self.qemu.stdin.write(line + '\n')
        self.qemu.stdin.flush()
        return self.qemu.stdout.readline().strip()

    def mark(self, verb, key):
        with open(os.path.join(self.dir, 'insns.req'), 'a', encoding='ascii') as f:
            f.write(f'{verb} {key}\n')
        return wait_answer(os.path.join(self.dir, 'insns.ack'), verb, key)

    def counts(self, key):
        with open(os.path.join(self.dir, f'insns.{key}'), encoding='ascii') as f:
            return {int(p[0], 16): [int(x) for x in p[1:]] for p in (ln.split() for ln in f)}

    def test_counts_what_ran_between_the_marks_per_vcpu(self):
        a = self.cmd('trans ffffffff81000000 5')
        b = self.cmd('trans ffffffff81000040 3')
        self.cmd(f'exec {a} 0 7')
        self.assertEqual(self.mark('begin', 'k1'), ['k1', 'begin'])
        self.cmd(f'exec {a} 0 2')
        self.cmd(f'exec {a} 1 4')
        c = self.cmd('trans 401000 2')
        self.cmd(f'exec {c} 0 3')
        self.assertEqual(self.mark('end', 'k1'), ['k1', 'end'])
        got = self.counts('k1')
        # Block a: 5 instructions, run 2 times on vCPU 0 and 4 on vCPU 1
        # since the mark; b never ran; c, new, 3 times.
        self.assertEqual(got[0xffffffff81000000][:3], [5, 2, 4])
        self.assertNotIn(0xffffffff81000040, got)
        self.assertEqual(got[0x401000][:3], [2, 3, 0])
        self.assertEqual(b, '1')

    def test_each_span_starts_at_its_own_mark(self):
        a = self.cmd('trans ffffffff81000000 4')
        self.mark('begin', 'x')
        self.cmd(f'exec {a} 0 10')
        self.mark('end', 'x')
        self.mark('begin', 'y')
        self.cmd(f'exec {a} 0 1')
        self.mark('end', 'y')
        self.assertEqual(self.counts('x')[0xffffffff81000000][1], 10)
        self.assertEqual(self.counts('y')[0xffffffff81000000][1], 1)


# A process named as QEMU names itself, asleep.
FAKE_QEMU = textwrap.dedent('''\
    import ctypes, time
    ctypes.CDLL(None).prctl(15, b'qemu-system-x86', 0, 0, 0)  # PR_SET_NAME
    print('ready', flush=True)
    time.sleep(3600)
''')


class Watcher(unittest.TestCase):
    """hostcpu.sh passes the marks on to the plugin and answers the guest
    only once the plugin has: here a thread stands in for the plugin, and
    a sleeping process named as QEMU for QEMU."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        open(os.path.join(self.dir, 'insns.req'), 'w', encoding='ascii').close()
        self.fake = subprocess.Popen([sys.executable, '-c', FAKE_QEMU], text=True,
                                     stdout=subprocess.PIPE)
        self.assertEqual(self.fake.stdout.readline().strip(), 'ready')
        self.watcher = subprocess.Popen(['bash', os.path.join(HARNESS, 'hostcpu.sh'), self.dir,
                                         str(os.getpid())], start_new_session=True,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.seen = []
        self.answer = 'ok'
        self.stop = threading.Event()
        self.plugin = threading.Thread(target=self.fake_plugin, daemon=True)
        self.plugin.start()

    def tearDown(self):
        self.stop.set()
        self.plugin.join()
        os.killpg(self.watcher.pid, signal.SIGTERM)
        self.watcher.wait()
        self.fake.kill()
        self.fake.wait()
        self.fake.stdout.close()
        shutil.rmtree(self.dir)

    def fake_plugin(self):
        done = 0
        while not self.stop.is_set():
            with open(os.path.join(self.dir, 'insns.req'), encoding='ascii') as f:
                lines = f.read().splitlines()
            for line in lines[done:]:
                verb, key = line.split()
                self.seen.append(line)
                what = verb if self.answer == 'ok' else 'error'
                if verb == 'end' and what == 'end':
                    with open(os.path.join(self.dir, f'insns.{key}'), 'w', encoding='ascii') as f:
                        f.write('ffffffff81000000 1 1 0\n')
                with open(os.path.join(self.dir, 'insns.ack'), 'a', encoding='ascii') as f:
                    f.write(f'{key} {what}\n')
            done = len(lines)
            time.sleep(0.005)

    def ask(self, verb, key):
        deadline = time.monotonic() + 10
        while not os.path.exists(os.path.join(self.dir, 'ack')):
            self.assertLess(time.monotonic(), deadline, 'hostcpu.sh made no files')
            time.sleep(0.01)
        with open(os.path.join(self.dir, 'req'), 'a', encoding='ascii') as f:
            f.write(f'{verb} {key}\n')
        return wait_answer(os.path.join(self.dir, 'ack'), verb, key, 15)

    def test_marks_reach_the_plugin_before_the_guest_is_answered(self):
        self.assertEqual(self.ask('begin', 'r1'), ['r1', 'begin'])
        self.assertEqual(self.seen, ['begin r1'])
        answer = self.ask('end', 'r1')
        self.assertEqual(answer[:2], ['r1', 'end'])
        self.assertEqual(self.seen, ['begin r1', 'end r1'])
        # The counts are there when the guest hears the end.
        self.assertTrue(os.path.exists(os.path.join(self.dir, 'insns.r1')))

    def test_a_plugin_error_is_the_guests_error(self):
        self.answer = 'error'
        self.assertEqual(self.ask('begin', 'r2')[:2], ['r2', 'error'])


class Profile(unittest.TestCase):
    def test_demangles_rust_functions(self):
        cases = {
            '_RNvXs_NtCserj0sjppuUF_6igb_rs5queueNtB4_9QueuePairNtNtNtCs1EKtwoKEMO2_6kernel3net'
            '4napi4Poll4poll': '<QueuePair as Poll>::poll',
            '_RNvMs1_NtCserj0sjppuUF_6igb_rs4ringNtB5_6RxRing6refill': 'RxRing::refill',
            '_RNvMs4_NtNtNtCs1EKtwoKEMO2_6kernel3net9page_pool8providerINtB5_7AdapterNtNtCs2x1Np'
            '781m4X_9devmem_rs7binding7BindingE13alloc_netmemsB1b_': 'Binding::alloc_netmems',
            '_RINvNtNtCs1EKtwoKEMO2_6kernel3irq7request19handle_irq_callbackNtNtCserj0sjppuUF_6igb'
            '_rs3irq8QueueIrqEB12_': 'request::handle_irq_callback<QueueIrq>',
            'xas_store': 'xas_store',
        }
        for sym, want in cases.items():
            self.assertEqual(insns.demangle(sym), want)

    def test_sums_one_vcpus_instructions_per_function_per_kib(self):
        tmp = tempfile.mkdtemp()
        try:
            with open(os.path.join(tmp, 'kallsyms'), 'w', encoding='ascii') as f:
                f.write('ffffffff81000000 T alpha\nffffffff81000100 t beta\n'
                        'ffffffffa0000000 t _RNvMs1_NtCserj0sjppuUF_6igb_rs4ringNtB5_6RxRing6refill\t[igb_rs]\n')
            with open(os.path.join(tmp, 'counts'), 'w', encoding='ascii') as f:
                # Two blocks of alpha, one of beta, one in the module, one
                # in user space; vCPU 1's runs are another CPU's.
                f.write('ffffffff81000000 10 3 100\nffffffff81000080 2 5 0\n'
                        'ffffffff81000100 4 1 0\nffffffffa0000010 7 2 0\n401000 3 4 9\n')
            out = subprocess.run([sys.executable, os.path.join(HARNESS, 'guest', 'insns.py'),
                                  os.path.join(tmp, 'counts'), os.path.join(tmp, 'kallsyms'),
                                  '0', '2048', os.path.join(tmp, 'per')],
                                 check=True, capture_output=True, text=True).stdout.split()
            # 30 + 10 + 4 + 14 + 12 = 70 instructions in 3+5+1+2+4 = 15
            # blocks, over 2 KiB.
            self.assertEqual(out, ['35', '8'])
            with open(os.path.join(tmp, 'per'), encoding='ascii') as f:
                per = [line.rstrip('\n').split('\t') for line in f]
            self.assertEqual(per, [['alpha', '20.0'], ['RxRing::refill', '7.0'],
                                   ['[user]', '6.0'], ['beta', '2.0']])
        finally:
            shutil.rmtree(tmp)


if __name__ == '__main__':
    unittest.main()
