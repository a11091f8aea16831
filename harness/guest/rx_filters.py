#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The NIC's receive filters, as TAP: which frames the device lets in.

The peer (in netns ns-remote) sends raw frames of an experimental
EtherType to chosen destination addresses; a packet socket on NETIF counts
those that arrive. A frame the filters drop never reaches the socket; one
they pass does, whatever the stack then makes of it. Covers the device's
own address, unknown unicast, promiscuous mode, multicast joined and not,
all-multicast, a secondary unicast address (a static FDB entry) without
promiscuous mode, and a changed device address.

  rx_filters.py                         run the checks (needs NETIF)
  rx_filters.py send IFNAME DST N TAG   send N frames (run in ns-remote)
"""

import os
import socket
import subprocess
import sys
import time

ETH_P_ALL = 0x0003
ETHERTYPE = 0x88b5  # IEEE local experimental
MAC_UNKNOWN = "02:00:00:00:00:99"
MAC_SECONDARY = "02:00:00:00:00:42"
MAC_NEW = "52:54:00:82:57:70"
MC_JOINED = "01:00:5e:01:02:03"
MC_OTHER = "01:00:5e:07:08:09"


def mac_bytes(mac):
    return bytes(int(b, 16) for b in mac.split(":"))


def send(ifname, dst, count, tag):
    """Sends `count` frames to `dst` from `ifname`, `tag` in the payload."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    src = s.getsockname()[4]
    frame = mac_bytes(dst) + src + ETHERTYPE.to_bytes(2, "big")
    frame += tag.encode().ljust(46, b"\0")
    for _ in range(count):
        s.send(frame)
        time.sleep(0.01)
    s.close()


def peer_ifname():
    out = subprocess.run(["ip", "-n", "ns-remote", "-o", "link", "show"],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        if name != "lo":
            return name
    raise RuntimeError("no peer device in ns-remote")


class Rig:
    def __init__(self, netif):
        self.netif = netif
        self.peer = peer_ifname()
        self.n = 0
        self.checks = 0
        self.failed = False

    def received(self, dst, count=5):
        """How many of `count` frames sent to `dst` arrive on NETIF."""
        self.n += 1
        tag = f"rx-filters-{os.getpid()}-{self.n}"
        r = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                          socket.htons(ETH_P_ALL))
        r.bind((self.netif, 0))
        r.settimeout(0.2)
        subprocess.run(["ip", "netns", "exec", "ns-remote", sys.executable,
                        os.path.abspath(__file__), "send", self.peer, dst,
                        str(count), tag], check=True)
        got = 0
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            try:
                data = r.recv(2048)
            except socket.timeout:
                continue
            if data[12:14] == ETHERTYPE.to_bytes(2, "big") and \
               data[14:14 + len(tag)] == tag.encode():
                got += 1
        r.close()
        return got

    def check(self, desc, dst, want):
        got = self.received(dst)
        ok = (got > 0) == want
        self.checks += 1
        print(f"{'ok' if ok else 'not ok'} {self.checks} {desc}")
        if not ok:
            print(f"# {got} of 5 frames to {dst} arrived, "
                  f"expected {'some' if want else 'none'}")
            self.failed = True


def ip(*args):
    subprocess.run(["ip", *args], check=True)


def cycle_up(netif):
    """Brings NETIF up and waits for its carrier."""
    ip("link", "set", netif, "up")
    for _ in range(100):
        with open(f"/sys/class/net/{netif}/carrier", encoding="ascii") as f:
            if f.read().strip() == "1":
                return
        time.sleep(0.1)
    raise RuntimeError(f"{netif}: no carrier after 10 s")


def promiscuity(netif):
    out = subprocess.run(["ip", "-d", "-o", "link", "show", netif],
                         capture_output=True, text=True, check=True).stdout
    words = out.split()
    return int(words[words.index("promiscuity") + 1])


def main():
    netif = os.environ["NETIF"]
    with open(f"/sys/class/net/{netif}/address", encoding="ascii") as f:
        own = f.read().strip()
    rig = Rig(netif)
    print("TAP version 13")
    print("1..12")
    rig.check("own address", own, True)
    rig.check("unknown unicast dropped", MAC_UNKNOWN, False)
    ip("link", "set", netif, "promisc", "on")
    rig.check("unknown unicast in promiscuous mode", MAC_UNKNOWN, True)
    ip("link", "set", netif, "promisc", "off")
    rig.check("unknown unicast dropped again", MAC_UNKNOWN, False)
    rig.check("multicast not joined dropped", MC_JOINED, False)
    ip("maddr", "add", MC_JOINED, "dev", netif)
    rig.check("multicast joined (ip maddr add)", MC_JOINED, True)
    ip("maddr", "del", MC_JOINED, "dev", netif)
    rig.check("multicast left dropped", MC_JOINED, False)
    ip("link", "set", netif, "allmulticast", "on")
    rig.check("multicast in all-multicast mode", MC_OTHER, True)
    ip("link", "set", netif, "allmulticast", "off")
    # A static FDB entry on the device itself goes to its unicast list.
    fdb = ["bridge", "fdb", "{}", MAC_SECONDARY, "dev", netif, "self", "permanent"]
    subprocess.run([a.format("add") for a in fdb], check=True)
    try:
        rig.check("secondary unicast (fdb add ... self) received",
                  MAC_SECONDARY, True)
        n = promiscuity(netif)
        rig.check(f"... by filter, not promiscuous mode (promiscuity {n})",
                  MAC_UNKNOWN, False)
    finally:
        subprocess.run([a.format("del") for a in fdb], check=True)
    ip("link", "set", netif, "down")
    ip("link", "set", netif, "address", MAC_NEW)
    cycle_up(netif)
    try:
        rig.check("changed address received", MAC_NEW, True)
        rig.check("old address dropped", own, False)
    finally:
        ip("link", "set", netif, "down")
        ip("link", "set", netif, "address", own)
        cycle_up(netif)
    return 1 if rig.failed else 0


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "send":
        send(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
        sys.exit(0)
    sys.exit(main())
