#!/usr/bin/env python3
"""Helper of scripts/bench-events.sh (run with a Salt venv's python).

    bench_events.py listen <master-conf-file> <count> <idle-timeout-s>
        A `salt.utils.event.get_master_event(..., listen=True)` reader: prints READY once
        connected, then counts events tagged `bench/...` until <count> arrived or none came
        for <idle-timeout-s>; prints `GOT <n> <first_unix> <last_unix>`.

    bench_events.py rawlisten <master-conf-file> <count> <idle-timeout-s> <tcp|ipc>
        The same, reading the pub socket's frames directly with msgpack's C unpacker (no
        `SaltEvent` decoding): what the master's publisher delivers when readers are fast.

    bench_events.py fire <master-conf-file> <count>
        Writes <count> events into the master's pull socket as Salt's writers frame them
        (`frame_msg_ipc(SaltEvent.pack(tag, data))`, which every Salt line's pull side and
        ours read), pre-framed so the writer is not what is measured; prints `FIRED <n>
        <start_unix> <end_unix>`.
"""

import datetime
import os
import socket
import sys
import time

import salt.config
import salt.payload
import salt.transport.frame
import salt.utils.event


def listen(conf, count, idle):
    opts = salt.config.master_config(conf)
    ev = salt.utils.event.get_master_event(opts, opts["sock_dir"], listen=True)
    while not ev.cpub:
        ev.connect_pub(timeout=1)
    print("READY", flush=True)
    n = 0
    first = last = 0.0
    while n < count:
        e = ev.get_event(wait=idle, full=True, tag="bench/")
        if e is None:
            break
        now = time.time()
        if n == 0:
            first = now
        last = now
        n += 1
    print(f"GOT {n} {first:.6f} {last:.6f}", flush=True)


def rawlisten(conf, count, idle, framing):
    import msgpack

    opts = salt.config.master_config(conf)
    if opts.get("ipc_mode") == "tcp":
        sock = socket.create_connection(("127.0.0.1", int(opts["tcp_master_pub_port"])))
    else:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(os.path.join(opts["sock_dir"], "master_event_pub.ipc"))
    sock.settimeout(idle)
    print("READY", flush=True)
    unpacker = msgpack.Unpacker(raw=True, max_buffer_size=64 * 1024 * 1024)
    buf = b""
    n = 0
    first = last = 0.0
    try:
        while n < count:
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            if framing == "tcp":
                unpacker.feed(chunk)
                got = sum(1 for _ in unpacker)
            else:
                buf += chunk
                got = 0
                while len(buf) >= 4:
                    size = int.from_bytes(buf[:4], "big")
                    if len(buf) < 4 + size:
                        break
                    buf = buf[4 + size :]
                    got += 1
            if got:
                now = time.time()
                if n == 0:
                    first = now
                last = now
                n += got
    except socket.timeout:
        pass
    print(f"GOT {n} {first:.6f} {last:.6f}", flush=True)


def fire(conf, count):
    opts = salt.config.master_config(conf)
    if opts.get("ipc_mode") == "tcp":
        sock = socket.create_connection(("127.0.0.1", int(opts["tcp_master_pull_port"])))
    else:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(os.path.join(opts["sock_dir"], "master_event_pull.ipc"))
    frames = []
    for i in range(count):
        data = {
            "i": i,
            "fun": "test.ping",
            "return": True,
            "_stamp": datetime.datetime.utcnow().isoformat(),
        }
        body = b"".join(
            [f"bench/{i}".encode(), b"\n\n", salt.payload.dumps(data, use_bin_type=True)]
        )
        frames.append(salt.transport.frame.frame_msg_ipc(body, raw_body=True))
    start = time.time()
    for f in frames:
        sock.sendall(f)
    end = time.time()
    sock.close()
    print(f"FIRED {count} {start:.6f} {end:.6f}", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "listen":
        listen(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    elif sys.argv[1] == "rawlisten":
        rawlisten(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5])
    else:
        fire(sys.argv[2], int(sys.argv[3]))
