#!/usr/bin/env bash
# Tutorial step 3: two masters sharing one signing pair, one minion with both in a failover
# list; the first master goes away and the minion tunes in to the second.
#
#   masters m1 (127.0.0.1) and m2 (127.0.0.2): own master.pem each, the SAME master_sign pair
#           (made once with salt-key, copied to both), master_sign_pubkey: True
#   minion  master: [127.0.0.1, 127.0.0.2], master_type: failover, master_alive_interval,
#           verify_master_pubkey_sign: True with master_sign.pub
#
# m1 is frozen with SIGSTOP (like a firewall rule dropping the minion's packets: no FIN, no
# RST, nothing answers); the minion's alive check notices within master_alive_interval + 1 s.
# Env: see lib.sh; TUTORIAL_QUICK=1 uses master_alive_interval 2 (default 5).
source "$(dirname "$0")/lib.sh"
pick_ports 24520
if [ "$QUICK" = 1 ]; then ALIVE=2; else ALIVE=5; fi

step "one signing pair for both masters: salt-key --gen-keys master_sign"
gen_pair master_sign "$T/signing"
ls "$T/signing" | sed 's/^/    /'

step "a minion key made ahead (salt-key --gen-keys minion), pre-seeded as pending on both masters"
minion_conf n1 127.0.0.1 127.0.0.2 <<CONF
master_type: failover
master_alive_interval: $ALIVE
retry_dns: 0
verify_master_pubkey_sign: True
CONF
gen_pair minion "$T/n1/pki"
cp "$T/signing/master_sign.pub" "$T/n1/pki/"
say "    minion n1:"
grep -E '^(master|  - |master_type|master_alive_interval|verify_master_pubkey_sign)' "$T/n1/conf/minion" \
  | grep -v master_port | sed 's/^/      /'

for m in m1:127.0.0.1 m2:127.0.0.2; do
  name=${m%%:*} addr=${m#*:}
  master_conf "$name" "$addr" <<<"master_sign_pubkey: True"
  cp "$T/signing/master_sign.pem" "$T/signing/master_sign.pub" "$T/$name/pki/"
  # In a fleet the key arrives by itself the first time the minion asks this master; here it
  # is placed in minions_pre so that both masters can accept it before the minion starts.
  mkdir -p "$T/$name/pki/minions_pre"
  cp "$T/n1/pki/minion.pub" "$T/$name/pki/minions_pre/n1"
done

step "start m1 on 127.0.0.1 and m2 on 127.0.0.2 (ports $PUB/$RET), accept n1 on both"
start_master m1 127.0.0.1
M1=$LAST_PGID
start_master m2 127.0.0.2
accept m1 n1
accept m2 n1
cmp -s "$T/m1/pki/master.pub" "$T/m2/pki/master.pub" && die "m1 and m2 share master.pub"
say "    m1 and m2 have different master.pub, the same master_sign.pub"

step "start minion n1 (salt-minion -l debug): it signs in to the first master of its list"
start n1 "$BIN/salt-minion" -c "$T/n1/conf" -l debug
wait_log "$T/n1.out" 'Authentication with master at 127.0.0.1 successful' 30
show_log "$T/n1.out" "$SIGNIN_LINES"
ping m1 n1 30

step "freeze m1 (kill -STOP -$M1) and watch the minion"
mark "$T/n1.out"
stop_group "$M1" STOP
t0=$SECONDS
wait_log "$T/n1.out" 'Authentication with master at 127.0.0.2 successful' $((ALIVE + 30))
took=$((SECONDS - t0))
show_since "$T/n1.out" "$FAILOVER_LINES"
for l in 'Connection to master 127.0.0.1 lost' 'Trying to tune in to next master from master-list' \
  'Removing possibly failed master 127.0.0.1 from list of masters' \
  'Master ip address changed from 127.0.0.1 to 127.0.0.2' \
  'Received signed and verified master pubkey from master 127.0.0.2'; do
  grep -qF "$l" "$T/n1.out" || die "no '$l' line"
done
say "    (failed over about $took s after the freeze; master_alive_interval is $ALIVE s)"

step "salt '*' test.ping through m2"
ping m2 n1 30

ok "n1 verified both masters with the shared master_sign.pub and failed over from m1 to m2 in about $took s"
