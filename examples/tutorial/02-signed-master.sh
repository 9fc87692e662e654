#!/usr/bin/env bash
# Tutorial step 2: a master that signs its public key, a minion that verifies it.
#
#   master  master_sign_pubkey: True      -> creates master_sign.pem/.pub on first start and
#                                            sends pub_sig (its key signed with master_sign.pem)
#   minion  verify_master_pubkey_sign: True, with master_sign.pub copied to its pki_dir
#
# Then a second minion holding the WRONG master_sign.pub: it refuses the master
# ("The Salt Master server's public key did not authenticate!").
# One master on 127.0.0.1. Env: see lib.sh.
source "$(dirname "$0")/lib.sh"
pick_ports 24510

step "master m1 on 127.0.0.1:$RET with master_sign_pubkey: True"
master_conf m1 127.0.0.1 <<<"master_sign_pubkey: True"
conf_show "$T/m1/conf/master" 'interface|publish_port|ret_port|master_sign_pubkey'
start_master m1 127.0.0.1
for f in master.pem master.pub master_sign.pem master_sign.pub; do
  [ -s "$T/m1/pki/$f" ] || die "m1 did not create $f"
done
say "    m1 created: $(cd "$T/m1/pki" && ls master*.p* | tr '\n' ' ')"

step "minion good: master_sign.pub copied from m1, verify_master_pubkey_sign: True"
minion_conf good 127.0.0.1 <<<"verify_master_pubkey_sign: True"
cp "$T/m1/pki/master_sign.pub" "$T/good/pki/"
start good "$BIN/salt-minion" -c "$T/good/conf" -l debug
wait_pending m1 good 30
say "    its key is pending on m1; accept it:"
accept m1 good
wait_log "$T/good.out" 'Authentication with master .* successful' 30
say "    minion console (salt-minion -l debug):"
show_log "$T/good.out" "$SIGNIN_LINES"
grep -q 'Successfully verified signature of master public key with verification public key master_sign.pub' "$T/good.out" \
  || die "no 'Successfully verified signature' line"
grep -q 'Received signed and verified master pubkey from master 127.0.0.1' "$T/good.out" \
  || die "no 'Received signed and verified master pubkey' line"

step "salt '*' test.ping through m1"
ping m1 good 30

step "minion bad: a master_sign.pub that is not m1's"
minion_conf bad 127.0.0.1 <<<"verify_master_pubkey_sign: True"
gen_pair master_sign "$T/bad-sign"
cp "$T/bad-sign/master_sign.pub" "$T/bad/pki/"
start bad "$BIN/salt-minion" -c "$T/bad/conf" -l debug
wait_pending m1 bad 30
accept m1 bad
wait_log "$T/bad.out" 'did not authenticate' 30
say "    minion console:"
show_log "$T/bad.out" "$SIGNIN_LINES" | head -8
grep -q 'Failed to verify signature of public key' "$T/bad.out" \
  || die "no 'Failed to verify signature of public key' line"

ok "minion good verified m1's signed key and answered test.ping; minion bad refused m1 (wrong master_sign.pub)"
