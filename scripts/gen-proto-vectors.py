#!/usr/bin/env python3
"""Generate msgpack golden vectors for crates/proto from real Salt.

Run with a Salt venv's python, e.g.:

    .venv/salt-3007.17/bin/python scripts/gen-proto-vectors.py

Writes crates/proto/tests/vectors/payload.json: a list of
{"name", "desc", "salt_version", "hex", "bin_hex"} where `hex` is
`salt.payload.dumps(obj)` (the wire form, use_bin_type=False) and `bin_hex` is
`salt.payload.dumps(obj, use_bin_type=True)` (the on-disk/IPC form). The Rust
tests decode both and check that re-encoding gives `hex` byte for byte.

Everything random comes from a seeded PRNG, so the output is reproducible.
Salt 3006.30, 3007.17 and 3008.5 produce identical files (checked 2026-11-22).
"""

import datetime
import hashlib
import json
import os
import random
import sys

import salt.payload
import salt.version
from salt.defaults import _Constant

RNG = random.Random(0x5A17)


def rbytes(n):
    return bytes(RNG.getrandbits(8) for _ in range(n))


def invalid_utf8(n):
    # Random bytes that are certainly not valid UTF-8 (0xff never appears in UTF-8).
    return b"\xff" + rbytes(n - 1)


def nonce():
    return "%032x" % RNG.getrandbits(128)


PUB = (
    "-----BEGIN PUBLIC KEY-----\n"
    + "\n".join(
        ("MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + "x" * 300)[i : i + 64]
        for i in range(0, 344, 64)
    )
    + "\n-----END PUBLIC KEY-----"
)
N_AUTH = nonce()
N_REQ = nonce()
JID = "20251122012345678901"

vectors = []


def add(name, desc, obj):
    vectors.append(
        {
            "name": name,
            "desc": desc,
            "hex": salt.payload.dumps(obj).hex(),
            "bin_hex": salt.payload.dumps(obj, use_bin_type=True).hex(),
        }
    )


auth_load = {
    "cmd": "_auth",
    "id": "minion1",
    "nonce": N_AUTH,
    "enc_algo": "OAEP-SHA1",
    "sig_algo": "PKCS1v15-SHA1",
    "token": invalid_utf8(256),
    "pub": PUB,
}
add("auth_request", "_auth clear request envelope with token (§3.3)",
    {"enc": "clear", "load": auth_load, "version": 3})

auth_load2 = {
    "cmd": "_auth",
    "id": "web-01.example.com",
    "nonce": nonce(),
    "enc_algo": "OAEP-SHA224",
    "sig_algo": "PKCS1v15-SHA224",
    "autosign_grains": {"uuid": "8c3f-11e0", "os": "Debian", "missing": None},
    "pub": PUB,
}
add("auth_request_autosign", "_auth request, first contact: autosign_grains, no token",
    {"enc": "clear", "load": auth_load2, "version": 3})

for ret in (False, True, "full"):
    inner = {"ret": ret, "nonce": N_AUTH}
    add("auth_fail_inner_%s" % str(ret).lower(), "auth failure inner map (§3.5)", inner)

success_inner = {
    "enc": "pub",
    "pub_key": PUB,
    "publish_port": 4505,
    "pub_sig": b"QUJDREVGR0g=\n",
    "token": invalid_utf8(256),
    "aes": invalid_utf8(256),
    "session": invalid_utf8(256),
    "sig": invalid_utf8(256),
    "nonce": N_AUTH,
}
add("auth_success_inner", "auth success inner map (§3.5)", success_inner)
add("auth_signed_reply", "signed clear auth reply {enc, load: bytes, sig} (§3.5)",
    {"enc": "clear", "load": salt.payload.dumps(success_inner), "sig": invalid_utf8(256)})
add("auth_signed_reply_fail", "signed clear auth reply with ret False",
    {"enc": "clear", "load": salt.payload.dumps({"ret": False, "nonce": N_AUTH}),
     "sig": invalid_utf8(256)})
add("auth_bad_enc_algo", "unsigned bad enc algo reply",
    {"enc": "clear", "load": {"ret": "bad enc algo"}})
add("bad_load", "the bare 'bad load' string reply", "bad load")

job = {
    "fun": "test.ping",
    "arg": [],
    "tgt": "minion1",
    "jid": JID,
    "ret": "",
    "tgt_type": "glob",
    "user": "root",
    "serial": 1,
}
add("job_load", "publish job load (§7.1)", job)
job2 = {
    "fun": "cmd.run",
    "arg": ["echo hi", {"__kwarg__": True, "timeout": 30, "env": {"LANG": "C"}}],
    "tgt": ["m1", "m2"],
    "jid": JID + "_4242",
    "ret": "",
    "tgt_type": "list",
    "to": 5,
    "metadata": {"k": "v"},
    "user": "sudo_alice",
    "serial": 70000,
}
add("job_load_kwargs", "job load with kwargs, list target, extra keys", job2)
add("publish_payload", "publish payload on PUB (§7.2)",
    {"enc": "aes", "load": invalid_utf8(144), "sig_algo": "PKCS1v15-SHA1",
     "sig": invalid_utf8(256)})

add("aes_request", "AES request envelope v3 (§2.3)",
    {"enc": "aes", "load": invalid_utf8(400), "version": 3, "id": "minion1",
     "enc_algo": "OAEP-SHA1", "sig_algo": "PKCS1v15-SHA1"})

ints = [0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63, 2**64 - 1,
        -1, -32, -33, -128, -129, -32768, -32769, -(2**31), -(2**31) - 1, -(2**63)]
ret_load = {
    "cmd": "_return",
    "id": "minion1",
    "success": True,
    "return": {
        "ints": ints,
        "huge": 2**70,  # Salt sends ints >= 2**64 as decimal strings
        "floats": [0.0, -1.5, 3.141592653589793, 1e300, float("inf")],
        "none": None,
        "bools": [True, False],
        "unicode": "héllo wörld ✓ 日本語 🧂",
        "bytes_invalid_utf8": b"\x80\x81\xfe\xffabc",
        "bytes_valid_utf8": b"plain bytes",
        "empty": ["", b"", [], {}],
        "int_keys": {1: "one", -2: "minus two", 300: [1, 2]},
        "tuple": (1, "two", 3.0),
        "set": {7},
        "str31": "a" * 31,
        "str32": "b" * 32,
        "str255": "c" * 255,
        "str256": "d" * 256,
        "list15": list(range(15)),
        "list16": list(range(16)),
        "map15": {"k%02d" % i: i for i in range(15)},
        "map16": {"k%02d" % i: i for i in range(16)},
        "nested": {"a": {"b": {"c": {"d": [[[{"e": "deep"}]]]}}}},
        "when": datetime.datetime(2025, 11, 22, 1, 23, 45, 678901),
        "constant": _Constant("NOT_SET"),
    },
    "retcode": 0,
    "jid": JID,
    "fun": "test.echo",
    "fun_args": ["x", {"__kwarg__": True, "n": -7}],
    "user": "root",
    "out": "nested",
    "nonce": N_REQ,
    "ts": 1763774625,
    "tok": invalid_utf8(256),
}
add("return_load", "_return load with every value kind (§7.4)", ret_load)
add("return_load_ping", "_return load of test.ping",
    {"cmd": "_return", "id": "minion1", "success": True, "return": True, "retcode": 0,
     "jid": JID, "fun": "test.ping", "fun_args": [], "user": "root",
     "nonce": N_REQ, "ts": 1763774625, "tok": invalid_utf8(256)})

add("minion_event", "_minion_event load with data+tag",
    {"id": "minion1", "cmd": "_minion_event", "pretag": None, "tok": invalid_utf8(256),
     "data": "Minion minion1 started at Sat Nov 22 01:23:45 2025",
     "tag": "salt/minion/minion1/start",
     "nonce": N_REQ, "ts": 1763774625})
add("minion_event_events", "_minion_event load with an events list",
    {"id": "minion1", "cmd": "_minion_event", "pretag": "salt/beacon",
     "tok": invalid_utf8(256),
     "events": [{"tag": "a/b", "data": {"x": 1}}, {"tag": "c", "data": {}}],
     "nonce": N_REQ, "ts": 1763774625})

add("pillar_request", "_pillar request load (§10.1)",
    {"id": "minion1",
     "grains": {"os": "Debian", "num_cpus": 2, "ipv4": ["127.0.0.1"], "mem_total": 1987},
     "saltenv": None, "pillarenv": None, "pillar_override": {},
     "extra_minion_data": {}, "ver": "2", "cmd": "_pillar",
     "nonce": N_REQ, "ts": 1763774625, "tok": invalid_utf8(256)})
add("pillar_reply", "send_private pillar reply {key, pillar} (§10.2)",
    {"key": invalid_utf8(256), "pillar": invalid_utf8(512)})
add("ping_request", "clear ping request (failback check)",
    {"enc": "clear", "load": {"cmd": "ping"}, "version": 3})
add("mine_load", "_mine load",
    {"cmd": "_mine", "data": {"network.ip_addrs": ["10.0.0.1"]}, "id": "minion1",
     "clear": False, "nonce": N_REQ, "ts": 1763774625, "tok": invalid_utf8(256)})
# Length boundaries of the 16/32-bit forms: too big to store as hex, so only a
# digest is kept; the Rust test builds the same value and compares digests.
large = ["e" * 65535, "f" * 65536, [None] * 65535, [None] * 65536,
         {"k%05d" % i: None for i in range(65536)}]
large_bytes = salt.payload.dumps(large)
vectors.append({
    "name": "large_boundaries",
    "desc": "['e'*65535, 'f'*65536, [None]*65535, [None]*65536, {'k%05d' % i: None for i in range(65536)}]",
    "len": len(large_bytes),
    "sha256": hashlib.sha256(large_bytes).hexdigest(),
})
add("none", "None (reply to _return)", None)
add("true", "True (reply to _mine)", True)
add("empty_map", "{} (reply to unknown cmd)", {})


# _return loads assembled by Salt's own Minion._prepare_return_pub from a `ret` dict
# filled in the order salt/minion.py `_thread_return` fills it (same in 3006, 3007, 3008):
# `ret = {"success": False}`, then per outcome, then jid, fun, fun_args, user.
# Appended last: they take nothing from RNG, so every vector above stays as it was.
class _FakeMinion:
    opts = {"id": "minion1", "cache_jobs": False, "pub_ret": True}
    proc_dir = "/nonexistent-proc-dir"
    functions = {}


def salt_return(outcome, fun, args):
    import salt.minion

    ret = {"success": False}
    for key, value in outcome:
        ret[key] = value
    ret["jid"] = JID
    ret["fun"] = fun
    ret["fun_args"] = args
    ret["user"] = "root"
    return salt.minion.Minion._prepare_return_pub(_FakeMinion(), ret)


# A function that ran: return, then retcode and success (success keeps its first place).
add("return_minion_ok", "_return of test.ping as Salt's minion builds it",
    salt_return([("return", True), ("retcode", 0), ("success", True)], "test.ping", []))
# A function that is not available: return, success, retcode, then out.
add("return_minion_missing", "_return of a missing function (out after retcode)",
    salt_return([("return", "'no.such' is not available."), ("success", False),
                 ("retcode", 1), ("out", "nested")], "no.such", ["x"]))
# A function that raised CommandExecutionError: return, out, then retcode.
add("return_minion_error", "_return of a function that raised (out before retcode)",
    salt_return([("return", "ERROR: boom"), ("out", "nested"), ("retcode", 1)],
                "cmd.run", ["false"]))

out = {
    "generator": "scripts/gen-proto-vectors.py",
    "salt_version": salt.version.__version__,
    "vectors": vectors,
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "proto",
                    "tests", "vectors", "payload.json")
with open(path, "w") as fh:
    json.dump(out, fh, indent=1)
    fh.write("\n")
print("wrote %d vectors to %s" % (len(vectors), os.path.normpath(path)), file=sys.stderr)
