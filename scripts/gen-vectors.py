#!/usr/bin/env python3
"""Generate golden vectors for crates/pki from real Salt.

Run with a Salt venv's python (installs nothing):

    .venv/salt-3007.17/bin/python scripts/gen-vectors.py [OUT_DIR]

OUT_DIR defaults to crates/pki/tests/vectors. Every value is produced by Salt's own code:
salt.crypt.gen_keys / PrivateKey / PublicKey / sign_message / gen_signature / Crypticle,
salt.utils.rsax931 (through PrivateKey.encrypt), salt.payload and salt.utils.crypt.pem_finger.
Keys and random IVs differ on every run; the Rust tests only rely on the relations between
the values in one run.
"""

import base64
import binascii
import hashlib
import json
import os
import sys
import tempfile
import uuid

import salt.crypt
import salt.payload
import salt.utils.crypt
import salt.utils.rsax931
import salt.version
from cryptography.hazmat.primitives import serialization

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "crates", "pki", "tests", "vectors"
)
PASSPHRASE = "salt-vector-pass"


def b64(b):
    return base64.b64encode(b).decode()


def read(path):
    with open(path, "rb") as f:
        return f.read().decode()


def dump(name, obj):
    obj = {"generator": "scripts/gen-vectors.py", "salt_version": salt.version.__version__, **obj}
    path = os.path.join(OUT, name)
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", os.path.normpath(path))


def main():
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="salt-pki-vectors-")

    # --- keys -------------------------------------------------------------------------
    priv_path = salt.crypt.gen_keys(tmp, "master", 2048)
    pub_path = os.path.join(tmp, "master.pub")
    sign_priv_path = salt.crypt.gen_keys(tmp, "master_sign", 2048)
    sign_pub_path = os.path.join(tmp, "master_sign.pub")
    enc_priv_path = salt.crypt.gen_keys(tmp, "encrypted", 2048, passphrase=PASSPHRASE)
    enc_key = salt.crypt.get_rsa_key(enc_priv_path, PASSPHRASE)
    pkcs8_enc = enc_key.private_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PrivateFormat.PKCS8,
        encryption_algorithm=serialization.BestAvailableEncryption(PASSPHRASE.encode()),
    ).decode()
    master_key = salt.crypt.get_rsa_key(priv_path, None)
    pkcs8_plain = master_key.private_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PrivateFormat.PKCS8,
        encryption_algorithm=serialization.NoEncryption(),
    ).decode()
    pkcs1_pub = master_key.public_key().public_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PublicFormat.PKCS1,
    ).decode()

    fingerprints = []
    for path, label in ((pub_path, "master.pub"), (priv_path, "master.pem")):
        for hash_type in ("sha256", "md5", "sha1", "sha512"):
            fingerprints.append(
                {
                    "file": label,
                    "hash_type": hash_type,
                    "finger": salt.utils.crypt.pem_finger(path, sum_type=hash_type),
                }
            )
    # pem_finger on the clean_key form (a key string, as sent on the wire) must agree.
    fingerprints.append(
        {
            "file": "clean_key(master.pub)",
            "hash_type": "sha256",
            "finger": salt.utils.crypt.pem_finger(
                key=salt.crypt.clean_key(read(pub_path)), sum_type="sha256"
            ),
        }
    )

    dump(
        "keys.json",
        {
            "bits": 2048,
            "private_pem": read(priv_path),
            "public_pem": read(pub_path),
            "public_pem_pkcs1": pkcs1_pub,
            "private_pem_pkcs8": pkcs8_plain,
            "passphrase": PASSPHRASE,
            "encrypted_private_pem": read(enc_priv_path),
            "encrypted_private_pem_pkcs8": pkcs8_enc,
            "encrypted_public_pem": read(os.path.join(tmp, "encrypted.pub")),
            "fingerprints": fingerprints,
        },
    )

    # --- RSA operations -----------------------------------------------------------------
    priv = salt.crypt.PrivateKey(priv_path)
    pub = salt.crypt.PublicKey(pub_path)
    messages = [b"salt", os.urandom(24), b"x" * 100, b""]
    oaep = []
    for alg in salt.crypt.VALID_ENCRYPTION_ALGORITHMS:
        for m in messages:
            ct = pub.encrypt(m, algorithm=alg)
            assert priv.decrypt(ct, algorithm=alg) == m
            oaep.append({"alg": alg, "plaintext_hex": m.hex(), "ciphertext_b64": b64(ct)})
    pkcs1 = []
    for alg in salt.crypt.VALID_SIGNING_ALGORITHMS:
        for m in messages + [salt.payload.dumps({"ret": True, "nonce": uuid.uuid4().hex})]:
            sig = salt.crypt.sign_message(priv_path, m, algorithm=alg)
            assert salt.crypt.verify_signature(pub_path, m, sig, algorithm=alg)
            pkcs1.append({"alg": alg, "message_hex": m.hex(), "signature_b64": b64(sig)})
    x931 = []
    for m in [b"salt", hashlib.sha256(os.urandom(16)).hexdigest().encode()]:
        out = priv.encrypt(m)  # salt.utils.rsax931.RSAX931Signer
        assert pub.decrypt(out) == m
        assert salt.utils.rsax931.RSAX931Verifier(read(pub_path).encode()).verify(out) == m
        x931.append({"message_hex": m.hex(), "signature_b64": b64(out)})
    dump("rsa.json", {"oaep": oaep, "pkcs1v15": pkcs1, "x931": x931})

    # --- Crypticle ----------------------------------------------------------------------
    key_string = salt.crypt.Crypticle.generate_key_string()
    crypticle = salt.crypt.Crypticle({}, key_string)
    encrypt = []
    for m in [b"", b"a", b"0123456789abcdef", os.urandom(100), b"x" * 4096]:
        data = crypticle.encrypt(m)
        assert crypticle.decrypt(data) == m
        encrypt.append({"plaintext_hex": m.hex(), "data_b64": b64(data)})
    dumps = []
    objects = [
        {"fun": "test.ping", "arg": [], "tgt": "*", "jid": "20261122120000123456"},
        {"ret": True, "id": "minion-1", "data": b"\x00\xff".decode("latin-1")},
        "a string",
        [1, 2.5, None, {"k": "v"}],
    ]
    for obj in objects:
        body = salt.payload.dumps(obj)
        for nonce in (None, uuid.uuid4().hex):
            data = crypticle.dumps(obj, nonce=nonce)
            assert salt.crypt.Crypticle({}, key_string).loads(data, nonce=nonce) == obj
            dumps.append(
                {"nonce": nonce, "msgpack_hex": body.hex(), "data_b64": b64(data)}
            )
    dump(
        "crypticle.json",
        {"key_string": key_string, "encrypt": encrypt, "dumps": dumps},
    )

    # --- master pubkey signature (§5.2) -------------------------------------------------
    sig_path = os.path.join(tmp, "master_pubkey_signature")
    assert salt.crypt.gen_signature(sign_priv_path, pub_path, sig_path)
    pub_text = read(pub_path)
    pub_key_sent = salt.crypt.clean_key(pub_text)  # MasterKeys.get_pub_str()
    dynamic = []
    for alg in salt.crypt.VALID_SIGNING_ALGORITHMS:
        # channel/server.py: binascii.b2a_base64(sign_message(sign_key, pub_key, algorithm))
        pub_sig = binascii.b2a_base64(
            salt.crypt.sign_message(sign_priv_path, pub_key_sent, algorithm=alg)
        )
        dynamic.append({"alg": alg, "pub_sig": pub_sig.decode()})
    # What pre-#68930-fix Salt wrote: a signature over the raw file text (with its "\n").
    legacy = binascii.b2a_base64(salt.crypt.sign_message(sign_priv_path, pub_text)).decode()
    dump(
        "pubsig.json",
        {
            "sign_private_pem": read(sign_priv_path),
            "sign_public_pem": read(sign_pub_path),
            "master_pub_file": pub_text,
            "pub_key_sent": pub_key_sent,
            "signature_file": read(sig_path),
            "dynamic": dynamic,
            "legacy_raw_file_signature_file": legacy,
        },
    )


if __name__ == "__main__":
    main()
