#!/usr/bin/env python3
"""Golden bytes of Salt's master event bus, from real Salt (crates/proto/src/ipc.rs tests).

Run once per Salt line with that venv's python, from the repository root:

    for v in 3006.30 3007.17 3008.5; do
        .venv/salt-$v/bin/python scripts/gen-ipc-golden.py
    done

Each run writes crates/proto/tests/vectors/ipc-<version>.json with:
  * `pack`: `salt.utils.event.SaltEvent.pack(tag, data)` for fixed data (no `_stamp`; 3006
    packs inline in `fire_event`, the same bytes);
  * `pull`: the bytes a real `get_master_event(opts, sock_dir, listen=False).fire_event(...)`
    writes into `master_event_pull.ipc`, captured by a plain socket listening there;
  * `pub`: what the master's publisher writes to each `master_event_pub.ipc` reader for
    that event: `salt.transport.frame.frame_msg(body)` (3007/3008, `salt.transport.tcp`
    `PubServer.publish_payload`) or `frame_msg_ipc(body)` (3006, `salt.transport.ipc`
    `IPCMessagePublisher.publish`).
"""

import json
import os
import socket
import sys
import tempfile
import threading

import salt.config
import salt.payload
import salt.transport.frame
import salt.utils.event
import salt.version

VERSION = salt.version.__version__
TAG = "myco/custom/event"
DATA = {
    "x": 1,
    "neg": -70000,
    "big": 2**40,
    "pi": 3.25,
    "ok": True,
    "none": None,
    "list": ["a", 2, [3.5]],
    "long": "l" * 40,
    "unicode": "h\u00e9llo \u2603",
    "nested": {"a": {"b": "c"}},
}


def capture_pull():
    """A real fire_event into a socket we listen on; returns the bytes Salt wrote."""
    sock_dir = tempfile.mkdtemp(prefix="ipc-golden-")
    path = os.path.join(sock_dir, "master_event_pull.ipc")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    got = bytearray()

    def serve():
        conn, _ = srv.accept()
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            got.extend(chunk)
        conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    opts = salt.config.master_config(None)
    opts["sock_dir"] = sock_dir
    opts["ipc_mode"] = "ipc"
    event = salt.utils.event.get_master_event(opts, sock_dir, listen=False)
    assert event.fire_event(dict(DATA), TAG) is not False
    event.destroy()
    t.join(10)
    srv.close()
    os.unlink(path)
    os.rmdir(sock_dir)
    return bytes(got)


def main():
    if hasattr(salt.utils.event.SaltEvent, "pack"):
        body = salt.utils.event.SaltEvent.pack(TAG, DATA)
    else:  # 3006: fire_event packs inline, the same way
        body = b"".join(
            [TAG.encode(), b"\n\n", salt.payload.dumps(DATA, use_bin_type=True)]
        )
    if int(VERSION.split(".")[0]) >= 3007:
        pub = salt.transport.frame.frame_msg(body)
        framing = "tcp"
    else:
        pub = salt.transport.frame.frame_msg_ipc(body, raw_body=True)
        framing = "ipc"
    out = {
        "salt_version": VERSION,
        "tag": TAG,
        "data": DATA,
        "pack": body.hex(),
        "pull": capture_pull().hex(),
        "pub_framing": framing,
        "pub": pub.hex(),
    }
    dst = os.path.join("crates", "proto", "tests", "vectors", f"ipc-{VERSION}.json")
    with open(dst, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(dst)


if __name__ == "__main__":
    sys.exit(main())
