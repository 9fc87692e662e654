#!/usr/bin/env python3
"""Helper of scripts/bench-reactor.sh (run with a Salt venv's python).

    bench_reactor.py listen <master-conf-file> <count> <idle-timeout-s> <tcp|ipc> [<minions>]
        Reads the master's pub socket frames directly (msgpack's C unpacker; only the events
        the benchmark needs are decoded): each fired `bench/react/<n>` event's `_stamp`, and
        each `salt/run/<jid>/new` / `/ret` of `runner.test.arg` whose `fun_args` carry
        `{"n": <n>}`. Prints READY once connected; when <count> reactions have returned (or
        nothing came for <idle-timeout-s>) prints
        `RESULT <started> <returned> <p50_ms> <p99_ms> <max_ms> <reactions_per_s>`:
        latency = the reaction's `new` `_stamp` minus its event's `_stamp` (event to reaction
        start, both stamped on this host), rate = returned / (last `ret` - first event).
        With <minions> > 0 each event also has a `local.test.arg` reaction (old-style `arg: [<n>]`) to
        <minions> minions: its `salt/job/<jid>/new` is its start and its last of <minions>
        `salt/job/<jid>/ret/<id>` its end; a second line
        `LOCAL <started> <completed> <p50_ms> <p99_ms> <max_ms> <completed_per_s> <both_per_s>`
        gives the same figures for the local reactions (completed = all <minions> returned)
        and events whose two reactions both completed per second (first event to last end).

    bench_reactor.py fire <master-conf-file> <count> [<events/s>]
        Writes <count> events `bench/react/<n>` ({"n": n}, stamped when written) into the
        master's pull socket as Salt's writers frame them, as fast as it can or paced at
        <events/s>; prints `FIRED <n> <start> <end>`.
"""

import datetime
import os
import socket
import sys
import time

import salt.config
import salt.payload
import salt.transport.frame


def stamp(s):
    if isinstance(s, bytes):
        s = s.decode()
    d = datetime.datetime.fromisoformat(s)
    if d.tzinfo is not None:
        d = d.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return d.timestamp()


def connect(opts, name, port_key):
    if opts.get("ipc_mode") == "tcp":
        return socket.create_connection(("127.0.0.1", int(opts[port_key])))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(os.path.join(opts["sock_dir"], name))
    return sock


def listen(conf, count, idle, framing, minions=0):
    import msgpack

    opts = salt.config.master_config(conf)
    sock = connect(opts, "master_event_pub.ipc", "tcp_master_pub_port")
    sock.settimeout(idle)
    print("READY", flush=True)
    unpacker = msgpack.Unpacker(raw=False, max_buffer_size=256 * 1024 * 1024)
    buf = b""
    fired, started, returned = {}, {}, {}
    first_fire = last_ret = None
    # local reactions: jid -> n (from `new`), jid -> returns seen, jid -> stamp of the last
    jid_n, jid_started, jid_rets, jid_done = {}, {}, {}, {}

    def event(body):
        nonlocal first_fire, last_ret
        if isinstance(body, dict):
            body = body.get("body", b"")
        if isinstance(body, str):
            body = body.encode()
        tag, _, raw = body.partition(b"\n\n")
        if tag.startswith(b"bench/react/"):
            data = msgpack.unpackb(raw, raw=False)
            fired[data["n"]] = stamp(data["_stamp"])
            if first_fire is None:
                first_fire = fired[data["n"]]
        elif minions and tag.startswith(b"salt/job/"):
            parts = tag.split(b"/")
            if len(parts) == 4 and parts[3] == b"new":
                data = msgpack.unpackb(raw, raw=False)
                args = data.get("arg") or []
                if data.get("fun") == "test.arg" and args and isinstance(args[0], int):
                    jid_n[parts[2]] = args[0]
                    jid_started[parts[2]] = stamp(data["_stamp"])
            elif len(parts) == 5 and parts[3] == b"ret":
                jid = parts[2]
                jid_rets[jid] = jid_rets.get(jid, 0) + 1
                if jid_rets[jid] == minions:
                    data = msgpack.unpackb(raw, raw=False)
                    jid_done[jid] = stamp(data["_stamp"])
        elif tag.startswith(b"salt/run/") and (tag.endswith(b"/new") or tag.endswith(b"/ret")):
            data = msgpack.unpackb(raw, raw=False)
            if data.get("fun") != "runner.test.arg":
                return
            args = data.get("fun_args") or [{}]
            n = args[-1].get("n") if isinstance(args[-1], dict) else None
            if n is None:
                return
            if tag.endswith(b"/new"):
                started[n] = stamp(data["_stamp"])
            else:
                returned[n] = stamp(data["_stamp"])
                last_ret = max(last_ret or 0, returned[n])

    try:
        while len(returned) < count or (
            minions and len([j for j in jid_done if j in jid_n]) < count
        ):
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            if framing == "tcp":
                unpacker.feed(chunk)
                for obj in unpacker:
                    event(obj)
            else:
                buf += chunk
                while len(buf) >= 4:
                    size = int.from_bytes(buf[:4], "big")
                    if len(buf) < 4 + size:
                        break
                    obj = msgpack.unpackb(buf[4 : 4 + size], raw=False)
                    buf = buf[4 + size :]
                    event(obj)
    except socket.timeout:
        pass
    lat = sorted((started[n] - fired[n]) * 1000 for n in started if n in fired)
    if not lat:
        print(f"RESULT {len(started)} {len(returned)} - - - 0 (events seen: {len(fired)})", flush=True)
        return
    pct = lambda p: lat[min(len(lat) - 1, int(len(lat) * p))]
    secs = (last_ret - first_fire) if last_ret and first_fire else 0
    rate = len(returned) / secs if secs > 0 else 0
    print(
        f"RESULT {len(started)} {len(returned)} {pct(0.5):.2f} {pct(0.99):.2f} {lat[-1]:.2f} {rate:.0f}"
        f" (events seen: {len(fired)})",
        flush=True,
    )
    if not minions:
        return
    local_start = {n: jid_started[j] for j, n in jid_n.items()}
    local_done = {jid_n[j]: t for j, t in jid_done.items() if j in jid_n}
    llat = sorted((local_start[n] - fired[n]) * 1000 for n in local_start if n in fired)
    lpct = lambda p: llat[min(len(llat) - 1, int(len(llat) * p))] if llat else float("nan")
    ends = [t for t in local_done.values()]
    lsecs = (max(ends) - first_fire) if ends and first_fire else 0
    both = [max(returned[n], local_done[n]) for n in returned if n in local_done]
    bsecs = (max(both) - first_fire) if both and first_fire else 0
    print(
        f"LOCAL {len(local_start)} {len(local_done)} {lpct(0.5):.2f} {lpct(0.99):.2f}"
        f" {(llat[-1] if llat else float('nan')):.2f}"
        f" {(len(local_done) / lsecs if lsecs > 0 else 0):.0f}"
        f" {(len(both) / bsecs if bsecs > 0 else 0):.1f}",
        flush=True,
    )


def fire(conf, count, rate=0.0):
    opts = salt.config.master_config(conf)
    sock = connect(opts, "master_event_pull.ipc", "tcp_master_pull_port")
    start = time.time()
    for n in range(count):
        if rate:
            ahead = start + n / rate - time.time()
            if ahead > 0:
                time.sleep(ahead)
        data = {"n": n, "_stamp": datetime.datetime.utcnow().isoformat()}
        body = b"".join(
            [f"bench/react/{n}".encode(), b"\n\n", salt.payload.dumps(data, use_bin_type=True)]
        )
        sock.sendall(salt.transport.frame.frame_msg_ipc(body, raw_body=True))
    end = time.time()
    sock.close()
    print(f"FIRED {count} {start:.6f} {end:.6f}", flush=True)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "listen":
        minions = int(sys.argv[6]) if len(sys.argv) > 6 else 0
        listen(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], minions)
    elif cmd == "fire":
        fire(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)
    else:
        sys.exit(__doc__)
