#!/usr/bin/env bash
# Tutorial step 6: master_alive_interval with a single master. There is nowhere to fail over
# to, but the minion still notices that its master is gone, logs it, keeps trying, and logs
# when the connection is back (ZeroMQ alone would not tell it either).
#
#   master  m1 (127.0.0.1)
#   minion  master: 127.0.0.1, master_alive_interval: 5 (2 in quick mode)
#
# m1 is frozen with SIGSTOP, then resumed with SIGCONT.
# Env: see lib.sh.
source "$(dirname "$0")/lib.sh"
pick_ports 24550
if [ "$QUICK" = 1 ]; then ALIVE=2; else ALIVE=5; fi

master_conf m1 127.0.0.1 </dev/null
minion_conf n1 127.0.0.1 <<CONF
master_alive_interval: $ALIVE
CONF
conf_show "$T/n1/conf/minion" 'master|master_alive_interval'

step "start m1 and n1, accept n1's key"
start_master m1 127.0.0.1
M1=$LAST_PGID
start n1 "$BIN/salt-minion" -c "$T/n1/conf" -l info
wait_pending m1 n1 30
accept m1 n1
wait_log "$T/n1.out" 'Authentication with master at 127.0.0.1 successful' 30
ping m1 n1 30

step "freeze m1 (kill -STOP -$M1)"
mark "$T/n1.out"
stop_group "$M1" STOP
wait_log "$T/n1.out" 'Connection to master 127.0.0.1 lost' $((ALIVE + 30))
show_since "$T/n1.out" 'Connection to master|Attempting|lost'

step "resume m1 (kill -CONT -$M1)"
mark "$T/n1.out"
stop_group "$M1" CONT
wait_log "$T/n1.out" 'Connection to master 127.0.0.1 re-established' 60
show_since "$T/n1.out" 'Connection to master|Authentication with master'
ping m1 n1 30

ok "n1 logged the loss of its only master and the re-established connection, and answered again"
