#!/usr/bin/env python3
"""Writes the seed corpora of every fuzz target from the golden vectors.

Usage: python3 fuzz/seed_corpora.py [OUT_DIR]   (default: fuzz/seeds)

The seeds are the starting point only; the committed corpora (fuzz/corpus/<target>)
are what `cargo fuzz run` grew from them, minimized with `cargo fuzz cmin`.
"""
import base64
import hashlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "fuzz", "seeds")
MESSAGE_KINDS = 20


def load(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return json.load(f)


def put(target, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


payload = load("crates/proto/tests/vectors/payload.json")["vectors"]
keys = load("crates/pki/tests/vectors/keys.json")
cryp = load("crates/pki/tests/vectors/crypticle.json")
psig = load("crates/pki/tests/vectors/pubsig.json")
rsa = load("crates/pki/tests/vectors/rsa.json")

wire = []
for v in payload:
    for k in ("hex", "bin_hex"):
        if v.get(k):
            wire.append(bytes.fromhex(v[k]))

for w in wire:
    put("envelope", w)
    put("publish", w)
    for sel in range(MESSAGE_KINDS):
        put("messages", bytes([sel]) + w)

for d in cryp["dumps"]:
    ct = base64.b64decode(d["data_b64"])
    body = bytes.fromhex(d["msgpack_hex"])
    put("crypticle", b"\x00" + ct)
    put("crypticle", b"\x02" + ct[:-32])
    nonce = (d["nonce"] or "").encode()
    put("crypticle", b"\x01" + b"pickle::" + nonce + body)
    put("crypticle", b"\x03" + body)
for e in cryp["encrypt"]:
    ct = base64.b64decode(e["data_b64"])
    put("crypticle", b"\x00" + ct)
    put("crypticle", b"\x02" + ct[:-32])
    put("crypticle", b"\x01" + bytes.fromhex(e["plaintext_hex"]))
put("crypticle", b"\x00" + cryp["key_string"].encode())

for k in ("encrypted_private_pem", "encrypted_private_pem_pkcs8", "encrypted_public_pem",
          "private_pem", "private_pem_pkcs8", "public_pem", "public_pem_pkcs1"):
    put("pem", keys[k].encode())
    put("pubkey", keys[k].encode())
for k in ("sign_private_pem", "sign_public_pem", "pub_key_sent", "signature_file"):
    put("pem", psig[k].encode())
    put("pubkey", psig[k].encode())

pub_key = psig["pub_key_sent"].encode()
for d in psig["dynamic"]:
    sel = b"\x00" if d["alg"].endswith("SHA1") else b"\x01"
    put("pubsig", sel + pub_key + b"\x00" + d["pub_sig"].encode())
put("pubsig", b"\x00" + pub_key + b"\x00" + psig["signature_file"].encode())
put("pubsig", b"\x00" + psig["master_pub_file"].encode() + b"\x00"
    + psig["legacy_raw_file_signature_file"].encode())

for o in rsa["oaep"]:
    put("rsa", b"\x00" + base64.b64decode(o["ciphertext_b64"]))
    put("rsa", b"\x03" + bytes.fromhex(o["plaintext_hex"]))
for p in rsa["pkcs1v15"]:
    msg = bytes.fromhex(p["message_hex"])
    if b"\x00" not in msg:
        put("rsa", b"\x01" + msg + b"\x00" + base64.b64decode(p["signature_b64"]))
for x in rsa["x931"]:
    put("rsa", b"\x02" + base64.b64decode(x["signature_b64"]))

for t in sorted(os.listdir(OUT)):
    print(t, len(os.listdir(os.path.join(OUT, t))))


# --- auth handshake -------------------------------------------------------------------
def mp(o):
    """Minimal msgpack writer (str, bytes, int >= 0, bool, None, dict, list)."""
    if o is None:
        return b"\xc0"
    if o is True:
        return b"\xc3"
    if o is False:
        return b"\xc2"
    if isinstance(o, int):
        return bytes([o]) if o < 128 else b"\xcd" + o.to_bytes(2, "big")
    if isinstance(o, str):
        b = o.encode()
        if len(b) < 32:
            return bytes([0xA0 | len(b)]) + b
        if len(b) < 256:
            return b"\xd9" + bytes([len(b)]) + b
        return b"\xda" + len(b).to_bytes(2, "big") + b
    if isinstance(o, bytes):
        return (b"\xc4" + bytes([len(o)]) if len(o) < 256 else b"\xc5" + len(o).to_bytes(2, "big")) + o
    if isinstance(o, dict):
        return bytes([0x80 | len(o)]) + b"".join(mp(k) + mp(v) for k, v in o.items())
    if isinstance(o, list):
        return bytes([0x90 | len(o)]) + b"".join(mp(v) for v in o)
    raise TypeError(o)


NONCE = "f650c9aafb2846868b5f5c90b7275a3d"
by_name = {v["name"]: bytes.fromhex(v["hex"]) for v in payload if "hex" in v}
for name in ("auth_request", "auth_request_autosign"):
    for a in (0, 1, 2, 4, 8, 16, 2 | 32, 2 | 64, 96, 1 | 64):
        for b in (0, 1, 5, 13, 2):
            put("auth_master", bytes([a, b]) + by_name[name])

for name in ("auth_signed_reply", "auth_signed_reply_fail", "auth_bad_enc_algo",
             "auth_fail_inner_false", "auth_fail_inner_true", "auth_fail_inner_full",
             "auth_success_inner"):
    for sel in (0, 1, 2, 16):
        put("auth_client", bytes([sel]) + by_name[name])
ks2 = base64.b64encode(bytes(range(56))).decode()
success = {
    "enc": "pub", "pub_key": psig["pub_key_sent"], "publish_port": 4505,
    "token": cryp["key_string"], "aes": cryp["key_string"], "session": ks2,
    "sig": "x931", "nonce": NONCE,
}
signed = {"enc": "pub", "pub_key": psig["pub_key_sent"], "publish_port": 4505,
          "pub_sig": psig["dynamic"][0]["pub_sig"], "token": cryp["key_string"],
          "aes": cryp["key_string"], "session": ks2, "sig": "x931", "nonce": NONCE}
for sel in (64, 65, 65 | 4, 65 | 32, 64 | 8, 64 | 16):
    put("auth_client", bytes([sel]) + mp(success))
for sel in (64 | 2, 65 | 2, 65 | 2 | 4):
    put("auth_client", bytes([sel]) + mp(signed))
for ret in (False, True, "full"):
    for sel in (64, 65, 64 | 16):
        put("auth_client", bytes([sel]) + mp({"ret": ret, "nonce": NONCE}))
for t in ("auth_master", "auth_client"):
    print(t, len(os.listdir(os.path.join(OUT, t))))


# --- file server (the requests of scripts/fileserver-requests.py and hostile ones) -----
FS_PATHS = ["files/a.txt", "files/./a.txt", "files/a.txt?saltenv=dev", "|files/a.txt",
            "files/escape", "outdir/secret", "../outside/secret", "/etc/passwd",
            "d.txt?saltenv=dev", "x?saltenv=..", "files/sub/b.txt", "", "a\x00b"]
FS_CMDS = ["_file_envs", "_file_list", "_file_list_emptydirs", "_dir_list", "_symlink_list",
           "_file_find", "_file_hash", "_file_hash_and_stat", "_serve_file", "_master_opts",
           "_master_tops", "_file_recv"]
for i, cmd in enumerate(FS_CMDS):
    put("fileserver", bytes([i]) + mp({"cmd": cmd, "saltenv": "base", "prefix": "files"}))
    for p in FS_PATHS:
        load_ = {"cmd": cmd, "path": p, "saltenv": "base", "loc": 1024}
        if cmd == "_file_recv":
            load_ = {"cmd": cmd, "path": p.split("/"), "loc": 0, "data": b"x"}
        put("fileserver", bytes([i]) + mp(load_))
put("fileserver", bytes([8]) + mp({"cmd": "_serve_file", "path": "files/sub/b.txt",
                                   "saltenv": "base", "loc": 0, "gzip": 5}))
put("fileserver", bytes([1]) + mp({"cmd": "_file_list", "saltenv": "dev"}))
print("fileserver", len(os.listdir(os.path.join(OUT, "fileserver"))))

# clear: the loads Salt's own clients send (scripts/gen-clear-loads.py)
for c in load("crates/proto/tests/golden/clear_loads.json")["cases"]:
    put("clear", bytes.fromhex(c["hex"]))
