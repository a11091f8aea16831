# SPDX-License-Identifier: GPL-2.0
"""Tests of coreprof.py, which counts a devmem core's own code in a
profiled run: the devmem-rx-profile-core line and goal."""

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import coreprof  # noqa: E402

# Mangled v0 names: kernel::net::netmem::NetIov::reset_pp (the provider
# abstraction) and kernel::net::napi::poll (not).
RESET_PP = '_RNvMs0_NtNtCs1EKtwoKEMO2_6kernel3net6netmemNtB5_6NetIov8reset_pp'
NAPI_POLL = '_RNvNtNtCs1EKtwoKEMO2_6kernel3net4napi4poll'

# Each object's functions, by the object's file name.
OBJECTS = {
    'devmem.o': {'mp_alloc', 'mp_release', 'dup', 'sdup'},
    'devmem_rs.o': {'pop_bulk', 'dup', 'sdup'},
    'genalloc.o': {'gen_pool_alloc'},
    'other.o': {'nowhere'},
}


def boot(blocks):
    """A results directory whose devmem run's receiver (vCPU 0) ran
    blocks: [(symbol, address, insns, runs)], 4 KiB received."""
    d = tempfile.mkdtemp()
    hc = os.path.join(d, 'hostcpu')
    os.makedirs(hc)
    # The kernel's text: a shared function, the core's object (its copies
    # of the statics 'sdup' and 'dup' at its two edges), the library
    # object, then another 'sdup' and 'dup' elsewhere. 'foreign', inside
    # the core's range, is no name of its object.
    syms = [('tcp_recvmsg', 0x1000), ('sdup', 0x1f00), ('mp_alloc', 0x2000),
            ('pop_bulk', 0x2000), ('dup', 0x2100), ('foreign', 0x2180), ('mp_release', 0x2200),
            ('end_core', 0x2300),
            ('gen_pool_alloc', 0x3000), ('end_lib', 0x3100),
            ('page_pool_set_pp_info', 0x4000), (RESET_PP, 0x4100), (NAPI_POLL, 0x4200),
            ('dup', 0x9000), ('sdup', 0x9100)]
    names = {s for s, _, _, _ in blocks}
    with open(os.path.join(hc, 'devmem.kallsyms'), 'w', encoding='utf-8') as f:
        for name, addr in syms:
            # Each core's kernel has its own object's names.
            if name in ('mp_alloc', 'mp_release', 'pop_bulk') and name not in names:
                continue
            f.write(f'ffffffff8{addr:07x} t {name}\n')
    with open(os.path.join(hc, 'devmem.run'), 'w', encoding='utf-8') as f:
        f.write('0 4096\n')
    with open(os.path.join(hc, 'devmem.counts'), 'w', encoding='utf-8') as f:
        for _, addr, n, runs in blocks:
            f.write(f'ffffffff8{addr:07x} {n} {runs} 5\n')
    return d


def run(args):
    out = io.StringIO()
    real = coreprof.object_functions
    coreprof.object_functions = lambda obj: OBJECTS[os.path.basename(obj)]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            rc = coreprof.main(['coreprof.py', 'rx'] + args)
    finally:
        coreprof.object_functions = real
    return rc, out.getvalue().splitlines()


OBJS = ['--object', 'rust:devmem_rs.o', '--object', 'c:devmem.o',
        '--object', 'rust:genalloc.o', '--object', 'c:genalloc.o']


class CoreProfile(unittest.TestCase):
    def test_the_core_s_own_code_alone_on_both_sides(self):
        shared = [('tcp_recvmsg', 0x1000, 500, 10), ('dup', 0x9000, 100, 3),
                  ('sdup', 0x9100, 100, 3), (NAPI_POLL, 0x4200, 50, 4),
                  ('foreign', 0x2180, 30, 3)]
        c = boot(shared + [('mp_alloc', 0x2000, 10, 4), ('mp_alloc', 0x2010, 3, 4),
                           ('mp_release', 0x2200, 4, 2), ('dup', 0x2100, 2, 2),
                           ('gen_pool_alloc', 0x3000, 20, 4),
                           ('page_pool_set_pp_info', 0x4000, 1, 4)])
        rust = boot(shared + [('pop_bulk', 0x2000, 8, 4), ('dup', 0x2100, 1, 2),
                              ('sdup', 0x1f00, 1, 2),
                              ('gen_pool_alloc', 0x3000, 20, 1), (RESET_PP, 0x4100, 3, 2)])
        rc, out = run([rust, c] + OBJS)
        self.assertEqual(rc, 0)
        # Per KiB (4 KiB): c (40 + 12 + 8 + 4 + 80 + 4) / 4 = 37, rust
        # (32 + 2 + 2 + 20 + 6) / 4 = 15.5; neither side counts
        # tcp_recvmsg, napi's poll, 'foreign' or the 'dup' and 'sdup'
        # outside the core's object. The
        # functions by their instructions per KiB on both sides, most
        # first, then by name.
        self.assertEqual(out[0], 'devmem-rx-profile-core: devmem rust core 15.5 insns/KiB, '
                         'c core 37.0 insns/KiB, ratio rust/c 0.42: gen_pool_alloc 20.0/20.0, '
                         'mp_alloc -/13.0, pop_bulk 8.0/-, mp_release -/4.0, '
                         'NetIov::reset_pp 3.0/-, dup 1.0/2.0, page_pool_set_pp_info -/1.0, '
                         'sdup 1.0/- rust/c insns/call')
        self.assertEqual(out[1], 'goal: rust core at most c on devmem-rx-profile-core: met (0.42)')

    def test_a_core_that_costs_more_fails_its_goal(self):
        c = boot([('mp_alloc', 0x2000, 10, 4)])
        rust = boot([('pop_bulk', 0x2000, 11, 4)])
        rc, out = run([rust, c] + OBJS)
        self.assertEqual(rc, 0)
        self.assertEqual(out[1], 'goal: rust core at most c on devmem-rx-profile-core: NOT met (1.10)')

    def test_a_run_that_never_reached_a_core_compares_nothing(self):
        c = boot([('mp_alloc', 0x2000, 10, 4)])
        rust = boot([('pop_bulk', 0x2000, 8, 4)])
        idle_c = boot([('mp_alloc', 0x2000, 10, 0), ('tcp_recvmsg', 0x1000, 500, 10)])
        idle_rust = boot([('pop_bulk', 0x2000, 8, 0), ('tcp_recvmsg', 0x1000, 500, 10)])
        self.assertEqual(run([idle_rust, c] + OBJS)[0], 1)
        self.assertEqual(run([rust, idle_c] + OBJS)[0], 1)

    def test_an_object_the_kernel_does_not_have_is_an_error(self):
        c = boot([('mp_alloc', 0x2000, 10, 4)])
        rust = boot([('pop_bulk', 0x2000, 8, 4)])
        self.assertEqual(run([rust, c] + OBJS + ['--object', 'c:other.o'])[0], 1)

    def test_object_functions_reads_the_object_s_text_symbols(self):
        cc = shutil.which('clang') or shutil.which('cc')
        if not cc:
            self.skipTest('no C compiler')
        d = tempfile.mkdtemp()
        src = os.path.join(d, 'o.c')
        with open(src, 'w', encoding='utf-8') as f:
            f.write('int data = 1;\nextern int ext(void);\n'
                    'static int __attribute__((noinline)) st(int x) { return x + ext(); }\n'
                    'int global(int x) { return st(x) + data; }\n')
        obj = os.path.join(d, 'o.o')
        subprocess.run([cc, '-O2', '-c', '-o', obj, src], check=True)
        self.assertEqual(coreprof.object_functions(obj), {'st', 'global'})

    def test_each_core_needs_its_objects(self):
        c = boot([('mp_alloc', 0x2000, 10, 4)])
        self.assertEqual(run([c, c, '--object', 'c:devmem.o'])[0], 2)
        self.assertEqual(run([c, c, '--object', 'x:devmem.o'] + OBJS)[0], 2)
        self.assertEqual(run([c] + OBJS)[0], 2)

    def test_the_provider_abstraction_counts_wherever_it_is(self):
        self.assertTrue(coreprof.helper(RESET_PP))
        self.assertTrue(coreprof.helper('net_mp_niov_set_page_pool'))
        self.assertTrue(coreprof.helper(
            '_RNvNtNtNtCs1EKtwoKEMO2_6kernel3net9page_pool8provider9take_back'))
        self.assertFalse(coreprof.helper(NAPI_POLL))
        # A module named kernel::net::netmem inside another crate.
        self.assertFalse(coreprof.helper(
            '_RNvNtNtNtCs1EKtwoKEMO2_6devmem6kernel3net6netmem5reset'))
        self.assertFalse(coreprof.helper('tcp_recvmsg'))


if __name__ == '__main__':
    unittest.main()
