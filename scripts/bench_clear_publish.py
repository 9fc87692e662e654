#!/usr/bin/env python3
"""Helper of scripts/bench-clear-publish.sh (run with a Salt venv's python).

    bench_clear_publish.py <master-conf-file> <target-list> <seconds> <clients>

Starts <clients> processes; each opens Salt's own clear request channel
(`salt.channel.client.ReqChannel.factory(opts, crypt="clear")`, what `LocalClient.pub` uses)
and sends `publish` loads with the root key (`cachedir/.root_key`), `test.ping` to the
comma-separated minion list, one in flight, for <seconds>. Counts replies carrying a jid and
prints `RATE <round trips/s> <ok> <failed> <seconds>` (ok over the slowest client's time).
"""

import multiprocessing
import sys
import time


def client(conf, tgt, secs, q):
    import salt.channel.client
    import salt.config

    opts = salt.config.client_config(conf)
    key = open(opts["cachedir"] + "/.root_key").read()
    chan = salt.channel.client.ReqChannel.factory(opts, crypt="clear")
    load = {"cmd": "publish", "tgt": tgt.split(","), "tgt_type": "list",
            "fun": "test.ping", "arg": [], "user": "root", "ret": "", "jid": "",
            "kwargs": {}, "key": key}
    ok = failed = 0
    start = time.time()
    while time.time() - start < secs:
        try:
            r = chan.send(dict(load), timeout=30)
        except Exception:  # noqa: BLE001 - counted, the bench goes on
            failed += 1
            continue
        if isinstance(r, dict) and r.get("load", {}).get("jid"):
            ok += 1
        else:
            failed += 1
    elapsed = time.time() - start
    chan.close()
    q.put((ok, failed, elapsed))


def main():
    conf, tgt, secs, clients = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    q = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=client, args=(conf, tgt, secs, q))
             for _ in range(clients)]
    for p in procs:
        p.start()
    results = [q.get() for _ in procs]
    for p in procs:
        p.join()
    ok = sum(r[0] for r in results)
    failed = sum(r[1] for r in results)
    elapsed = max(r[2] for r in results)
    print(f"RATE {ok / elapsed:.1f} {ok} {failed} {elapsed:.2f}", flush=True)


if __name__ == "__main__":
    main()
