#!/usr/bin/env python3
"""Sends the file-server requests a Python minion sends (and a few hostile ones) to a master
through Salt's own request channel, and prints the replies as normalized JSON.

Run with a Salt venv's python (it imports salt):

    fileserver-requests.py tree DIR
        writes the fixed test tree under DIR (base/, dev/, outside/)
    fileserver-requests.py ask --port RET --pub PUB --dir MINION_DIR --tree DIR [--id ID]
        signs in as minion ID (the master must auto-accept) and prints {request: reply}

Used by scripts/gen-fileserver-golden.sh (against Salt's master, recording
tests/data/fileserver-golden.json) and tests/tests/fileserver_golden.rs (against ours).
Normalized: the tree path becomes <TREE>, `stat` lists keep mode and size only (inode,
device, owner and times differ between runs), gzip chunks are decompressed, bytes that are
UTF-8 become text, `_file_envs` is sorted (Salt returns a set).
"""
import argparse
import gzip
import json
import os
import sys
import time

BUF = 4096  # file_buffer_size both masters are given


def make_tree(d):
    def w(rel, data):
        p = os.path.join(d, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)

    w("base/top.sls", b"base:\n  '*':\n    - web\n")
    w("base/web/init.sls", b"x:\n  test.nop\n")
    w("base/files/a.txt", b"hello\n")
    w("base/files/big.bin", bytes((i * 7) % 251 for i in range(10000)))
    w("base/files/sub/deep/c.txt", b"c\n")
    w("base/.hidden/ignored.txt", b"ignored\n")
    w("base/_modules/hello.py", b"def world():\n    return 'hi'\n")
    w("dev/files/a.txt", b"dev\n")
    w("dev/only-dev.sls", b"y:\n  test.nop\n")
    w("outside/secret", b"secret\n")
    os.makedirs(os.path.join(d, "base/empty"), exist_ok=True)
    for link, dest in (
        ("base/files/link_in", "a.txt"),
        ("base/files/link_out", os.path.join(d, "outside/secret")),
    ):
        p = os.path.join(d, link)
        if not os.path.lexists(p):
            os.symlink(dest, p)


def requests():
    """(label, load) pairs, in order."""
    out = [("_file_envs", {"cmd": "_file_envs"})]
    for label, extra in (
        ("base", {"saltenv": "base"}),
        ("prefix", {"saltenv": "base", "prefix": "/files/"}),
        ("dev", {"saltenv": "dev"}),
        ("unknown-env", {"saltenv": "nope"}),
        ("no-saltenv", {}),
    ):
        for cmd in ("_file_list", "_file_list_emptydirs", "_dir_list", "_symlink_list"):
            out.append((f"{cmd} {label}", dict(cmd=cmd, **extra)))
    paths = [
        "files/a.txt",
        "files/./a.txt",
        "files/a.txt?saltenv=dev",
        "|files/a.txt",
        "files/link_in",
        "files/link_out",
        "missing.txt",
        "",
        "../outside/secret",
        "files/../../outside/secret",
        "/etc/hostname",
        ".hidden/ignored.txt",
    ]
    for p in paths:
        out.append((f"_file_find {p}", {"cmd": "_file_find", "path": p, "saltenv": "base"}))
        out.append((f"_file_hash {p}", {"cmd": "_file_hash", "path": p, "saltenv": "base"}))
        out.append(
            (
                f"_file_hash_and_stat {p}",
                {"cmd": "_file_hash_and_stat", "path": p, "saltenv": "base"},
            )
        )
    out.append(("_file_hash no-saltenv", {"cmd": "_file_hash", "path": "files/a.txt"}))
    out.append(("_file_find no-saltenv", {"cmd": "_file_find", "path": "files/a.txt"}))
    serve = {"cmd": "_serve_file", "path": "files/big.bin", "saltenv": "base"}
    for loc in (0, BUF, 2 * BUF, 10000, 10**9):
        out.append((f"_serve_file loc={loc}", dict(serve, loc=loc)))
    out.append(("_serve_file gzip", dict(serve, loc=0, gzip=5)))
    out.append(("_serve_file missing", dict(serve, path="missing.txt", loc=0)))
    out.append(("_serve_file no-loc", {"cmd": "_serve_file", "path": "files/a.txt", "saltenv": "base"}))
    out.append(("_serve_file escape", dict(serve, path="../outside/secret", loc=0)))
    out.append(("_serve_file negative-loc", dict(serve, loc=-1)))
    out.append(("_master_opts", {"cmd": "_master_opts"}))
    out.append(("_master_opts env_only", {"cmd": "_master_opts", "env_only": True}))
    out.append(("_master_tops", {"cmd": "_master_tops"}))
    out.append(
        ("_file_recv off", {"cmd": "_file_recv", "path": ["x"], "loc": 0, "data": b"x"})
    )
    out.append(("unknown command", {"cmd": "_no_such_command"}))
    out.append(("unknown command again", {"cmd": "_no_such_command"}))
    out.append(("minion_pub", {"cmd": "minion_pub", "fun": "test.ping", "tgt": "*", "arg": []}))
    out.append(("minion_pub again", {"cmd": "minion_pub", "fun": "test.ping", "tgt": "*", "arg": []}))
    return out


def normalize(v, tree, key=None):
    if isinstance(v, bytes):
        try:
            v = v.decode()
        except UnicodeDecodeError:
            return {"hex": v.hex()}
    if isinstance(v, str):
        return v.replace(tree, "<TREE>")
    if isinstance(v, dict):
        d = {}
        for k, x in v.items():
            k = normalize(k, tree)
            if k == "stat" and isinstance(x, list) and len(x) == 10:
                d[k] = {"mode": x[0], "size": x[6]}
            else:
                d[k] = normalize(x, tree, k)
        raw = v.get("data", v.get(b"data"))
        if "gzip" in d and isinstance(raw, bytes):
            d["data"] = normalize(gzip.decompress(raw), tree)
        return d
    if isinstance(v, (list, tuple)):
        if key is None and len(v) == 2 and isinstance(v[1], list) and len(v[1]) == 10:
            return [normalize(v[0], tree), {"mode": v[1][0], "size": v[1][6]}]
        return [normalize(x, tree) for x in v]
    return v


def ask(args):
    import salt.channel.client
    import salt.config

    d = args.dir
    for sub in ("pki", "cache", "sock"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    opts = salt.config.minion_config(None)
    opts.update(
        id=args.id,
        master="127.0.0.1",
        master_port=args.port,
        publish_port=args.pub,
        pki_dir=os.path.join(d, "pki"),
        cachedir=os.path.join(d, "cache"),
        sock_dir=os.path.join(d, "sock"),
        master_uri=f"tcp://127.0.0.1:{args.port}",
        master_ip="127.0.0.1",
        acceptance_wait_time=1,
    )
    tree = os.path.realpath(args.tree)
    replies = {}
    with salt.channel.client.ReqChannel.factory(opts, crypt="aes") as channel:
        for label, load in requests():
            t0 = time.monotonic()
            raw = load["cmd"] == "_serve_file"
            ret = channel.send(dict(load), tries=3, timeout=60, raw=raw)
            if label == "_file_envs" and isinstance(ret, list):
                ret = sorted(ret)
            if label.startswith("_master_opts") and isinstance(ret, dict):
                ret["file_roots"] = {k: ret["file_roots"][k] for k in sorted(ret["file_roots"])}
            replies[label] = normalize(ret, tree)
            took = time.monotonic() - t0
            if took > 1:
                print(f"{label}: {took:.1f} s", file=sys.stderr)
    json.dump(replies, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="what", required=True)
    t = sub.add_parser("tree")
    t.add_argument("dir")
    a = sub.add_parser("ask")
    a.add_argument("--port", type=int, required=True)
    a.add_argument("--pub", type=int, required=True)
    a.add_argument("--dir", required=True)
    a.add_argument("--tree", required=True)
    a.add_argument("--id", default="fsgolden")
    args = p.parse_args()
    if args.what == "tree":
        make_tree(args.dir)
    else:
        ask(args)


if __name__ == "__main__":
    main()
