#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Reads or sets a NIC's header split through the ethtool netlink family,
with the kernel tree's YNL library (the host's ethtool may predate
tcp-data-split).

Usage: rings.py DEV get            prints tcp-data-split and hds-thresh
       rings.py DEV split on|off   sets tcp-data-split
Needs KSRC, the kernel tree.
"""

import os
import sys

KSRC = os.environ['KSRC']
sys.path.insert(0, os.path.join(KSRC, 'tools/net/ynl/pyynl'))
# pylint: disable=wrong-import-position,import-error
from lib import YnlFamily  # noqa: E402

SPEC = os.path.join(KSRC, 'Documentation/netlink/specs/ethtool.yaml')


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    dev, op = sys.argv[1], sys.argv[2]
    ynl = YnlFamily(SPEC, schema='')
    header = {'header': {'dev-name': dev}}
    if op == 'get':
        r = ynl.do('rings-get', header)
        print(f"tcp-data-split {r.get('tcp-data-split', 'absent')} "
              f"hds-thresh {r.get('hds-thresh', 'absent')}")
    elif op == 'split' and len(sys.argv) == 4:
        value = {'on': 'enabled', 'off': 'disabled'}[sys.argv[3]]
        ynl.do('rings-set', {**header, 'tcp-data-split': value})
    else:
        sys.exit(__doc__)
    return 0


if __name__ == '__main__':
    sys.exit(main())
