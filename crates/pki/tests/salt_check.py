"""Checks run by tests/salt_interop.rs with a Salt venv's python.

argv[1] is a directory holding keys written by salt-pki and manifest.json with our outputs.
Every check uses Salt's own functions and prints "ok <name>"; any failure raises.
"""

import base64
import json
import os
import sys
import types

import salt.crypt
import salt.utils.crypt
import salt.utils.rsax931

d = sys.argv[1]
m = json.load(open(os.path.join(d, "manifest.json")))
b = base64.b64decode
pem = os.path.join(d, "master.pem")
pub = os.path.join(d, "master.pub")


def ok(name):
    print("ok", name, flush=True)


# 3006/3007: PrivateKey(path, passphrase); 3008: PrivateKey(key_bytes), PrivateKey.from_file.
load_priv = getattr(salt.crypt.PrivateKey, "from_file", salt.crypt.PrivateKey)
load_pub = salt.crypt.PublicKey.from_file

priv_key = load_priv(pem)
pub_key = load_pub(pub)
ok("load our master.pem / master.pub")

enc = load_priv(os.path.join(d, "encrypted.pem"), m["passphrase"])
assert enc.key.public_key().public_numbers() == load_pub(
    os.path.join(d, "encrypted.pub")
).key.public_numbers()
ok("load our passphrase-protected PEM")

for t in m["pkcs1"]:
    msg = bytes.fromhex(t["message_hex"])
    assert salt.crypt.verify_signature(pub, msg, b(t["signature"]), algorithm=t["alg"])
    assert priv_key.sign(msg, algorithm=t["alg"]) == b(t["signature"])
    ok("verify pkcs1 " + t["alg"])

for t in m["x931"]:
    msg = bytes.fromhex(t["message_hex"])
    assert pub_key.decrypt(b(t["signature"])) == msg
    assert salt.utils.rsax931.RSAX931Verifier(open(pub, "rb").read()).verify(
        b(t["signature"])
    ) == msg
    assert priv_key.encrypt(msg) == b(t["signature"])
    ok("x931 recover %d bytes" % len(msg))

for t in m["oaep"]:
    assert priv_key.decrypt(b(t["ciphertext"]), algorithm=t["alg"]) == bytes.fromhex(
        t["plaintext_hex"]
    )
    ok("oaep decrypt " + t["alg"])

for t in m["crypticle"]:
    c = salt.crypt.Crypticle({}, m["key_string"])
    got = c.loads(b(t["data"]), nonce=t["nonce"])
    assert got == t["expect"], (got, t["expect"])
    ok("crypticle loads nonce=%s" % bool(t["nonce"]))
assert salt.crypt.Crypticle({}, m["key_string"]).decrypt(b(m["encrypted"])) == b"hello salt"
ok("crypticle decrypt")

# Master pubkey signature, verified by the minion's own AsyncAuth.verify_pubkey_sig.
sign_dir = os.path.join(d, "minion_pki")
fake = types.SimpleNamespace(
    opts={
        "master_sign_key_name": "master_sign",
        "pki_dir": sign_dir,
        "signing_algorithm": "PKCS1v15-SHA1",
    }
)
pub_key_sent = salt.crypt.clean_key(open(pub).read())  # MasterKeys.get_pub_str()
with open(os.path.join(d, "master_pubkey_signature")) as f:
    file_sig = salt.crypt.clean_key(f.read())  # master_use_pubkey_signature path
assert salt.crypt.AsyncAuth.verify_pubkey_sig(fake, pub_key_sent, file_sig)
ok("verify_pubkey_sig over our master_pubkey_signature file")
for t in m["pub_sig"]:
    fake.opts["signing_algorithm"] = t["alg"]
    assert salt.crypt.AsyncAuth.verify_pubkey_sig(fake, pub_key_sent, t["value"].encode())
    ok("verify_pubkey_sig dynamic pub_sig " + t["alg"])

# salt.crypt.gen_signature over our files must produce the very same file.
if hasattr(salt.crypt, "gen_signature"):  # moved into MasterKeys in 3008
    out = os.path.join(d, "salt_made_signature")
    assert salt.crypt.gen_signature(os.path.join(d, "master_sign.pem"), pub, out)
    assert open(out).read() == open(os.path.join(d, "master_pubkey_signature")).read()
    ok("gen_signature byte-identical")
else:
    print("skip gen_signature (not a module function in this Salt)")

for t in m["fingers"]:
    assert salt.utils.crypt.pem_finger(pub, sum_type=t["hash_type"]) == t["finger"]
    ok("pem_finger " + t["hash_type"])
print("ALL OK")
