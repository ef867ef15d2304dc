"""Print the head of each node-to-node request seen on one interface.

Usage (as root, in the namespace that holds the interface):
    python3 cluster_sniff.py IFACE
Prints "ready" once it listens, then one JSON line per TCP segment that
holds a request head carrying X-Pandastack-Node: {"head": "<request line
and headers>"}.  A request head that a node sends fits one segment (curl
writes it at once, far below the MTU).  Runs until it is killed.

This is what anyone on the path between two nodes sees when they talk
plain HTTP: test_cluster.py replays what it prints.
"""
import json
import socket
import struct
import sys

ETH_P_ALL = 0x0003


def payload(frame):
    """The TCP payload of an Ethernet frame holding IPv4/TCP, or b""."""
    if len(frame) < 14 or struct.unpack("!H", frame[12:14])[0] != 0x0800:
        return b""
    ip = frame[14:]
    if len(ip) < 20 or ip[9] != 6:
        return b""
    ihl = (ip[0] & 0x0F) * 4
    total = struct.unpack("!H", ip[2:4])[0]
    tcp = ip[ihl:total]
    if len(tcp) < 20:
        return b""
    return tcp[(tcp[12] >> 4) * 4:]


def main():
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(ETH_P_ALL))
    s.bind((sys.argv[1], 0))
    print("ready", flush=True)
    seen = set()
    while True:
        data = payload(s.recv(65535))
        end = data.find(b"\r\n\r\n")
        if end < 0 or b"\r\nX-Pandastack-Node: " not in data[:end]:
            continue
        head = data[:end].decode("latin-1")
        if head in seen:  # the same frame, seen leaving and arriving
            continue
        seen.add(head)
        print(json.dumps({"head": head}), flush=True)


if __name__ == "__main__":
    main()
