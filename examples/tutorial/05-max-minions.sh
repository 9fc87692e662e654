#!/usr/bin/env bash
# Tutorial step 5: max_minions spreads a fleet over masters of different sizes.
#
#   m1 (127.0.0.1): max_minions: 1      (the "weaker" master)
#   m2 (127.0.0.2): no limit
#   minions a and b: master: [127.0.0.1, 127.0.0.2], master_type: failover
#
# a signs in to m1 first; m1 is then full and answers b's sign-in with "full"; b logs it and
# takes the next master of its list, m2. Signing is left out here to keep the step short; it
# combines with everything of steps 2-4.
# Env: see lib.sh.
source "$(dirname "$0")/lib.sh"
pick_ports 24540

master_conf m1 127.0.0.1 <<<"max_minions: 1"
master_conf m2 127.0.0.2 </dev/null
for n in a b; do
  minion_conf "$n" 127.0.0.1 127.0.0.2 <<CONF
master_type: failover
master_alive_interval: 5
retry_dns: 0
CONF
  gen_pair minion "$T/$n/pki"
  for m in m1 m2; do
    mkdir -p "$T/$m/pki/minions_pre"
    cp "$T/$n/pki/minion.pub" "$T/$m/pki/minions_pre/$n"
  done
done

step "m1 with max_minions: 1, m2 without a limit; keys of a and b accepted on both"
conf_show "$T/m1/conf/master" 'interface|max_minions'
start_master m1 127.0.0.1
start_master m2 127.0.0.2
for m in m1 m2; do "$BIN/salt-key" -c "$T/$m/conf" -A -y >/dev/null; done
"$BIN/salt-key" -c "$T/m1/conf" -L | sed 's/^/    /'

step "minion a: takes m1's only place"
start a "$BIN/salt-minion" -c "$T/a/conf" -l info
wait_log "$T/a.out" 'Authentication with master at 127.0.0.1 successful' 30
ping m1 a 30

step "minion b: m1 is full, b goes on to m2"
start b "$BIN/salt-minion" -c "$T/b/conf" -l info
wait_log "$T/b.out" 'Authentication with master at 127.0.0.2 successful' 30
say "    minion b console:"
show_log "$T/b.out" 'full|ip address changed|Authentication with master'
say "    m1 console:"
show_log "$T/m1.out" 'Too many minions'
grep -qF 'Master 127.0.0.1 is full (max_minions reached), trying next master' "$T/b.out" \
  || die "b did not log that m1 is full"
grep -qF 'Too many minions connected (max_minions=1). Rejecting connection from id b' "$T/m1.out" \
  || die "m1 did not log the rejection"
ping m2 b 30

step "salt '*' test.ping on each master: a answers through m1 only, b through m2 only"
say "    (both keys are accepted on both masters, so each CLI also waits for the other minion)"
out="$("$BIN/salt" -c "$T/m1/conf" '*' test.ping -t 3 2>&1 || true)"
sed 's/^/    m1> /' <<<"$out"
grep -A1 '^b:' <<<"$out" | grep -q True && die "b answered through m1"
grep -A1 '^a:' <<<"$out" | grep -q True || die "a did not answer through m1"
out="$("$BIN/salt" -c "$T/m2/conf" '*' test.ping -t 3 2>&1 || true)"
sed 's/^/    m2> /' <<<"$out"
grep -A1 '^a:' <<<"$out" | grep -q True && die "a answered through m2"
grep -A1 '^b:' <<<"$out" | grep -q True || die "b did not answer through m2"

ok "m1 (max_minions 1) took a and turned b away as full; b answered through m2"
