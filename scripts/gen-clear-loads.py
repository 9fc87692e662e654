#!/usr/bin/env python3
"""Clear-command loads exactly as Salt's own clients build them, for
crates/proto/tests/clear_golden.rs.

Run with a Salt venv's Python (3007.17 is the reference):

    .venv/salt-3007.17/bin/python scripts/gen-clear-loads.py > crates/proto/tests/golden/clear_loads.json

Salt's request channel is replaced by a recorder, then the real client code runs:
``LocalClient.pub`` / ``run_job`` (root key and eauth), ``salt.auth.Resolver.mk_token`` /
``get_token``, ``RunnerClient`` / ``WheelClient`` ``cmd_sync`` (what salt-api's runner and
wheel clients call). Each load is stored as ``salt.payload.dumps(load)`` in hex with a summary
of what the reader must find in it.
"""

import copy
import json
import os
import sys
import tempfile

import salt.auth
import salt.channel.client
import salt.client
import salt.config
import salt.payload
import salt.runner
import salt.version
import salt.wheel

RECORDED = []


class Recorder:
    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *args):
        pass

    def close(self):
        pass

    def send(self, load, *args, **kwargs):
        RECORDED.append(copy.deepcopy(load))
        cmd = load.get("cmd")
        if cmd == "publish":
            return {"enc": "clear", "load": {"jid": "20260101000000000000", "minions": ["m1"]}}
        if cmd == "mk_token":
            return {"token": "0" * 64}
        return {}


salt.channel.client.ReqChannel.factory = staticmethod(lambda *a, **k: Recorder())
salt.channel.client.AsyncReqChannel.factory = staticmethod(lambda *a, **k: Recorder())


def summary(load):
    out = {"cmd": load.get("cmd")}
    for k in ("fun", "tgt", "tgt_type", "user", "eauth", "username", "jid"):
        if k in load:
            out[k] = load[k]
    auth_src = load.get("kwargs", {}) if load.get("cmd") == "publish" else load
    out["auth_kind"] = (
        "token" if "token" in auth_src else "eauth" if "eauth" in auth_src else "user"
    )
    out["has_password"] = "password" in auth_src
    out["has_key"] = "key" in load
    if "arg" in load:
        out["arg_len"] = len(load["arg"])
    if "kwarg" in load:
        out["kwarg"] = load["kwarg"]
    return out


def main():
    tmp = tempfile.mkdtemp()
    opts = salt.config.master_config(os.devnull)
    opts.update(
        {
            "cachedir": os.path.join(tmp, "cache"),
            "sock_dir": os.path.join(tmp, "sock"),
            "pki_dir": os.path.join(tmp, "pki"),
            "conf_file": os.path.join(tmp, "master"),
        }
    )
    os.makedirs(opts["cachedir"])
    os.makedirs(opts["sock_dir"])
    open(os.path.join(opts["sock_dir"], "publish_pull.ipc"), "w").close()
    with open(os.path.join(opts["cachedir"], ".root_key"), "w") as fh:
        fh.write("R00tK3y-from-cachedir")
    cases = []

    def record(name, fn):
        RECORDED.clear()
        try:
            fn()
        except Exception as exc:  # the recorder's replies do not satisfy every client
            print(f"{name}: {exc!r}", file=sys.stderr)
        for i, load in enumerate(RECORDED):
            cases.append(
                {
                    "name": name if i == 0 else f"{name}#{i}",
                    "hex": salt.payload.dumps(load).hex(),
                    "expect": summary(load),
                }
            )

    local = salt.client.LocalClient(mopts=opts)
    record("local_glob_ping", lambda: local.pub("*", "test.ping"))
    record(
        "local_list_args",
        lambda: local.pub(
            ["web1", "web2"], "cmd.run", ["ls -l", {"__kwarg__": True, "cwd": "/tmp"}], tgt_type="list", jid="20260101000000000001"
        ),
    )
    record(
        "local_compound_command",
        lambda: local.pub("G@os:Debian and web*", ["test.ping", "cmd.run"], [[], ["uptime"]], tgt_type="compound"),
    )
    record(
        "local_eauth",
        lambda: local.pub("*", "test.ping", username="fred", password="s3cr3t", eauth="pam"),
    )
    record("local_token", lambda: local.pub("*", "grains.items", token="ab" * 32))
    resolver = salt.auth.Resolver(opts)
    record(
        "mk_token",
        lambda: resolver.mk_token({"username": "fred", "password": "s3cr3t", "eauth": "pam"}),
    )
    record(
        "mk_token_expire",
        lambda: resolver.mk_token(
            {"username": "fred", "password": "s3cr3t", "eauth": "file", "token_expire": 60}
        ),
    )
    record("get_token", lambda: resolver.get_token("ab" * 32))
    runner = salt.runner.RunnerClient(opts)
    record(
        "runner_eauth",
        lambda: runner.cmd_sync(
            {
                "fun": "jobs.lookup_jid",
                "kwarg": {"jid": "20260101000000000001"},
                "username": "fred",
                "password": "s3cr3t",
                "eauth": "pam",
            }
        ),
    )
    record(
        "runner_token",
        lambda: runner.cmd_sync({"fun": "manage.up", "token": "ab" * 32}),
    )
    wheel = salt.wheel.WheelClient(opts)
    record(
        "wheel_eauth",
        lambda: wheel.cmd_sync(
            {"fun": "key.list_all", "username": "fred", "password": "s3cr3t", "eauth": "auto"}
        ),
    )
    for name, load in (
        ("unknown_prep_auth_info", {"cmd": "_prep_auth_info", "eauth": "pam"}),
        ("unknown_send_pub", {"cmd": "_send_pub", "load": {}}),
        ("ping", {"cmd": "ping"}),
    ):
        cases.append({"name": name, "hex": salt.payload.dumps(load).hex(), "expect": summary(load)})
    json.dump({"salt_version": salt.version.__version__, "cases": cases}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
