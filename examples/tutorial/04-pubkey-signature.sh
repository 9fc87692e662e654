#!/usr/bin/env bash
# Tutorial step 4: the performance-tuning path. Instead of signing its key for sign-ins, each
# master sends a signature made ahead of time with `salt-key --gen-signature`:
#
#   master_sign_pubkey: True
#   master_use_pubkey_signature: True
#   master_pubkey_signature: <file in pki_dir>     (named after the master, as the seed advises)
#
# The signing pair lives on a separate "signer" only: the masters get master_sign.pub (our
# master then checks the file against it at start) but never master_sign.pem. A stale or
# foreign signature file stops the master at start instead of locking minions out.
# Env: see lib.sh; TUTORIAL_QUICK=1 uses master_alive_interval 2 (default 5).
source "$(dirname "$0")/lib.sh"
pick_ports 24530
if [ "$QUICK" = 1 ]; then ALIVE=2; else ALIVE=5; fi

step "the signer: one signing pair (salt-key --gen-keys master_sign), kept off the masters"
SIGNER="$T/signer"
gen_pair master_sign "$SIGNER"
printf 'pki_dir: %s\ncachedir: %s\n' "$SIGNER/pki" "$SIGNER/cache" >"$SIGNER/master"

step "each master's own key pair, and its signature made on the signer"
for m in m1:127.0.0.1 m2:127.0.0.2; do
  name=${m%%:*} addr=${m#*:}
  master_conf "$name" "$addr" <<CONF
master_sign_pubkey: True
master_use_pubkey_signature: True
master_pubkey_signature: ${name}_pubkey_signature
CONF
  gen_pair master "$T/$name/pki"
  say "    $name: salt-key --gen-signature --priv signer/master_sign.pem --pub $name/pki/master.pub --signature-path $name/pki"
  # master_pubkey_signature names the output file; pass it through a config for the signer.
  printf 'pki_dir: %s\ncachedir: %s\nmaster_pubkey_signature: %s_pubkey_signature\n' \
    "$SIGNER/pki" "$SIGNER/cache" "$name" >"$SIGNER/master"
  "$BIN/salt-key" -c "$SIGNER" --gen-signature --priv "$SIGNER/master_sign.pem" \
    --pub "$T/$name/pki/master.pub" --signature-path "$T/$name/pki" | sed 's/^/      /'
  cp "$SIGNER/master_sign.pub" "$T/$name/pki/"
  [ -s "$T/$name/pki/${name}_pubkey_signature" ] || die "no signature file for $name"
  [ -e "$T/$name/pki/master_sign.pem" ] && die "$name holds the signing key"
done
say "    m1's pki_dir: $(cd "$T/m1/pki" && ls | tr '\n' ' ')"
conf_show "$T/m1/conf/master" 'master_sign_pubkey|master_use_pubkey_signature|master_pubkey_signature'

step "a foreign signature stops a master at start"
mkdir -p "$T/bad"
cp -r "$T/m1/conf" "$T/bad/"
cp -r "$T/m1/pki" "$T/bad/"
sed -i "s|$T/m1|$T/bad|g; s|^interface: .*|interface: 127.0.0.3|" "$T/bad/conf/master"
cp "$T/m2/pki/m2_pubkey_signature" "$T/bad/pki/m1_pubkey_signature" # m2's signature on m1's key
if "$BIN/salt-master" -c "$T/bad/conf" -l info >"$T/bad.out" 2>&1; then
  die "a master with a foreign signature file started"
fi
grep -E 'not a valid signature' "$T/bad.out" | sed 's/^/    /' | head -2
grep -q 'not a valid signature' "$T/bad.out" || die "no 'not a valid signature' error"

step "start m1 and m2, then minion n1 (failover list, verify_master_pubkey_sign, always_verify_signature)"
start_master m1 127.0.0.1
M1=$LAST_PGID
start_master m2 127.0.0.2
minion_conf n1 127.0.0.1 127.0.0.2 <<CONF
master_type: failover
master_alive_interval: $ALIVE
retry_dns: 0
verify_master_pubkey_sign: True
always_verify_signature: True
CONF
gen_pair minion "$T/n1/pki"
cp "$SIGNER/master_sign.pub" "$T/n1/pki/"
for m in m1 m2; do
  mkdir -p "$T/$m/pki/minions_pre"
  cp "$T/n1/pki/minion.pub" "$T/$m/pki/minions_pre/n1"
  accept "$m" n1
done
start n1 "$BIN/salt-minion" -c "$T/n1/conf" -l debug
wait_log "$T/n1.out" 'Authentication with master at 127.0.0.1 successful' 30
show_log "$T/n1.out" "$SIGNIN_LINES"
ping m1 n1 30

step "stop m1 (SIGTERM): n1 moves to m2 and verifies m2's pre-computed signature"
mark "$T/n1.out"
stop_group "$M1" TERM
wait_log "$T/n1.out" 'Authentication with master at 127.0.0.2 successful' $((ALIVE + 30))
show_since "$T/n1.out" "$FAILOVER_LINES"
grep -qF 'Received signed and verified master pubkey from master 127.0.0.2' "$T/n1.out" \
  || die "m2's signature was not verified"
ping m2 n1 30

ok "m1 and m2 served pre-computed signatures made on a separate signer; n1 verified both and answered through each"
