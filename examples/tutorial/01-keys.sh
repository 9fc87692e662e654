#!/usr/bin/env bash
# Tutorial step 1: the keys of a multi-master PKI, made with our salt-key, and a signature
# checked by hand with openssl.
#
#   * a master key pair (what salt-master creates on first start: master.pem / master.pub);
#   * `salt-key --gen-signature --auto-create`: creates the signing pair master_sign.pem /
#     master_sign.pub next to it and writes master_pubkey_signature, the base64 signature of
#     master.pub (PKCS#1 v1.5, SHA-1, over the key text without its trailing newline);
#   * the same signature made "on another system": --priv / --pub / --signature-path;
#   * verifying the signature with openssl, as a minion does with master_sign.pub.
#
# No daemons. Env: see lib.sh (BIN_DIR, TUTORIAL_KEEP).
source "$(dirname "$0")/lib.sh"

step "a master's key pair: salt-key --gen-keys master --gen-keys-dir <pki_dir>"
PKI="$T/master/pki"
mkdir -p "$T/master/conf"
printf 'pki_dir: %s\ncachedir: %s\n' "$PKI" "$T/master/cache" >"$T/master/conf/master"
"$BIN/salt-key" -c "$T/master/conf" --gen-keys master --gen-keys-dir "$PKI" | sed 's/^/    /'
ls -l "$PKI" | sed 's/^/    /'

step "signing pair + signature in one go: salt-key --gen-signature --auto-create"
"$BIN/salt-key" -c "$T/master/conf" --gen-signature --auto-create | sed 's/^/    /'
for f in master_sign.pem master_sign.pub master_pubkey_signature; do
  [ -s "$PKI/$f" ] || die "$PKI/$f was not created"
done
ls -l "$PKI" | sed 's/^/    /'
say "    master_pubkey_signature (base64):"
sed 's/^/      /' "$PKI/master_pubkey_signature"

step "the same signature made elsewhere: --priv <signing key> --pub <master.pub> --signature-path <dir>"
# An "offline signer" that holds only the signing pair; the master never sees master_sign.pem.
SIGNER="$T/signer"
mkdir -p "$SIGNER/out"
cp "$PKI/master_sign.pem" "$PKI/master_sign.pub" "$SIGNER/"
printf 'pki_dir: %s\ncachedir: %s\n' "$SIGNER/pki" "$SIGNER/cache" >"$SIGNER/master"
"$BIN/salt-key" -c "$SIGNER" --gen-signature --priv "$SIGNER/master_sign.pem" \
  --pub "$PKI/master.pub" --signature-path "$SIGNER/out" | sed 's/^/    /'
cmp -s "$SIGNER/out/master_pubkey_signature" "$PKI/master_pubkey_signature" \
  || die "the two signatures differ (PKCS#1 v1.5 is deterministic)"
say "    identical to the first one (PKCS#1 v1.5 signatures are deterministic)"
say "    a second run does not replace the file:"
"$BIN/salt-key" -c "$SIGNER" --gen-signature --priv "$SIGNER/master_sign.pem" \
  --pub "$PKI/master.pub" --signature-path "$SIGNER/out" | sed 's/^/    /'

step "verify it like a minion does, with openssl and master_sign.pub only"
# The signed message is master.pub without its trailing newline (Salt's clean_key form).
printf '%s' "$(cat "$PKI/master.pub")" >"$T/message"
base64 -d "$PKI/master_pubkey_signature" >"$T/signature.bin"
out="$(openssl dgst -sha1 -verify "$PKI/master_sign.pub" -signature "$T/signature.bin" "$T/message")"
say "    $out"
[ "$out" = "Verified OK" ] || die "openssl did not verify the signature"

step "a different signing key does not verify it"
gen_pair other_sign "$T/other"
if openssl dgst -sha1 -verify "$T/other/other_sign.pub" -signature "$T/signature.bin" "$T/message" \
  >"$T/bad.out" 2>&1; then
  die "a foreign key verified the signature"
fi
say "    $(grep -m1 -i failure "$T/bad.out" || head -1 "$T/bad.out")"

ok "master pair, signing pair and master_pubkey_signature created; signature verified with master_sign.pub"
