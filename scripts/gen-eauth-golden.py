#!/usr/bin/env python3
"""Golden ACL and eauth answers from Salt itself, for crates/eauth/tests/golden.rs.

Run with a Salt venv's Python (3007.17 is the reference):

    .venv/salt-3007.17/bin/python scripts/gen-eauth-golden.py > crates/eauth/tests/golden/acl.json

Evaluates, on the same inputs the Rust test feeds our engine:
* ``CkMinions.auth_check`` over a matrix of auth lists x functions x arguments x targeted
  minions (``minions=`` given, as ``ClearFuncs.publish`` passes them; the accepted minions
  are files in a temporary ``pki_dir/minions``);
* ``CkMinions.spec_check`` (runner and wheel) over auth lists x functions x ``kwarg`` maps;
* ``CkMinions.fill_auth_list`` over providers x names x groups x ``permissive_acl``;
* ``LoadAuth.check_authentication`` / ``mk_token`` / ``get_tok`` with the ``auto``,
  ``sharedsecret`` and ``file`` (text) backends, and a token file as ``localfs`` writes it.

Matrices are stored compactly: the inputs once, the answers as one string in loop order
('1' allowed, '0' denied, 's' the syntax-error dict).
"""

import copy
import hashlib
import json
import os
import sys
import tempfile

import salt.auth
import salt.config
import salt.utils.minions
import salt.version

MINIONS = ["web1", "web2", "db1", "dbx"]

AUTH_LISTS = [
    [".*"],
    ["test.*"],
    ["test.ping"],
    ["test.(ping|echo)\\Z"],
    [{"web*": ["test.*", "cmd.run"]}],
    [{"web1": [{"cmd.run": {"args": ["ls.*"]}}]}],
    [{"*": [{"cmd.run": {"args": [None, "x"], "kwargs": {"cwd": "/tmp"}}}]}],
    [{"L@web1,web2": ["pkg.*"]}, "test.ping"],
    [{"web*": ["test.*"], "db*": ["cmd.*"]}],
    [{"E@web[0-9]": "test.echo"}],
    [
        "saltutil.*",
        {"db*": [{"cmd.run": [{"args": ["echo.*"]}, {"kwargs": {"runas": "nobody"}}]}]},
    ],
    [{"web* or db1": [{"cmd.run": {"kwargs": {"cwd": None}}}]}],
    ["@runner", "@wheel"],
    [{"db*": ["test.ping"]}, 42, None],
    [{"*": [{"test.arg": {"args": ["1", "True", "\\['a', 1\\]"]}}]}],
]

FUNS = [
    "test.ping",
    "test.pingx",
    "test.echo",
    "cmd.run",
    "pkg.install",
    "saltutil.find_job",
    "test.arg",
    ["test.ping", "cmd.run"],
]

ARGS = [
    [],
    ["ls -l"],
    ["echo hi"],
    ["ls", "x", {"__kwarg__": True, "cwd": "/tmp"}],
    [{"__kwarg__": True, "runas": "nobody"}],
    [1, True, ["a", 1]],
]

MINION_SETS = [["web1"], ["web1", "web2"], ["web1", "db1"], ["db1", "dbx"], []]

SPEC_LISTS = [
    ["@runner"],
    ["@runners"],
    ["@wheel"],
    ["@jobs"],
    ["@jobs", {"@wheel": ["key.list.*"]}, {"@manage": ["up"]}],
    [{"@runner": [{"jobs.lookup_jid": {"kwargs": {"jid": "2026.*"}}}]}],
    [{"@jobs": [{"lookup_jid": {"args": ["x"]}}]}],
    [".*"],
    [],
    [{"@wheel": ["key.*"], "@runner": [".*"]}],
]

SPEC_FUNS = ["jobs.list_jobs", "jobs.lookup_jid", "manage.up", "key.list_all", "key.accept", "nodots", "a.b.c"]

SPEC_KWARGS = [{}, {"jid": "20260101"}, {"kwarg": {"jid": "2026x"}}, {"arg": ["x"]}, {"kwarg": {"jid": "1999"}}]

PROVIDERS = [
    {"fred": ["a"], "admins%": ["b"], "*": ["c"], "fr.*": ["d"], "f*": ["e"]},
    {"*": ["any"], "ops%%": ["ops"]},
    {"alice|bob": ["x"], "carol": [{"web*": ["test.*"]}]},
]
NAMES = ["fred", "frodo", "bob", "alicexyz", "carol", "f.*", "*"]
GROUPS = [[], ["admins"], ["ops"], ["admins%"]]


def ckminions(pki):
    opts = copy.deepcopy(salt.config.DEFAULT_MASTER_OPTS)
    opts.update(
        {"pki_dir": pki, "cachedir": os.path.join(pki, "cache"), "key_cache": "", "__role": "master"}
    )
    return salt.utils.minions.CkMinions(opts)


def auth_matrix(ck):
    out = []
    for acl in AUTH_LISTS:
        for fun in FUNS:
            for args in ARGS:
                for minions in MINION_SETS:
                    arg = [args, args] if isinstance(fun, list) else args
                    ok = ck.auth_check(
                        acl,
                        fun,
                        arg,
                        ",".join(minions),
                        "list",
                        minions=minions,
                        whitelist=["saltutil.find_job"],
                    )
                    out.append("1" if ok else "0")
    return "".join(out)


def spec_matrix(ck):
    out = []
    for acl in SPEC_LISTS:
        for fun in SPEC_FUNS:
            for kwarg in SPEC_KWARGS:
                for form in ("runner", "wheel"):
                    ret = ck.spec_check(acl, fun, kwarg, form)
                    out.append("s" if isinstance(ret, dict) else ("1" if ret else "0"))
    return "".join(out)


def fill_cases(ck):
    cases = []
    for provider in PROVIDERS:
        for name in NAMES:
            for groups in GROUPS:
                for permissive in (False, True):
                    got = ck.fill_auth_list(provider, name, groups, permissive=permissive)
                    cases.append(
                        {
                            "provider": provider,
                            "name": name,
                            "groups": groups,
                            "permissive": permissive,
                            "expect": got,
                        }
                    )
    return cases


def loadauth_cases(tmp):
    users = os.path.join(tmp, "users.txt")
    with open(users, "w") as fh:
        fh.write("dean:goneFishing\ngene:OceanMan\n")
    legacy = os.path.join(tmp, "legacy.txt")
    with open(legacy, "w") as fh:
        fh.write(
            "46|trey|{}\n555|mike|{}\n".format(
                hashlib.md5(b"rockstar").hexdigest(), hashlib.md5(b"x").hexdigest()
            )
        )
    external_auth = {
        "auto": {"fred": [".*"], "f.*": ["test.*"], "*": ["grains.items"]},
        "sharedsecret": {"ssuser": [".*", "@jobs"]},
        "file": {"^filename": users, "dean": ["test.*"], "gene": [{"web*": ["cmd.run"]}]},
    }
    opts = copy.deepcopy(salt.config.DEFAULT_MASTER_OPTS)
    opts.update(
        {
            "cachedir": os.path.join(tmp, "cache"),
            "pki_dir": os.path.join(tmp, "pki"),
            "token_dir": os.path.join(tmp, "cache", "tokens"),
            "sharedsecret": "s3cr3t",
            "external_auth": external_auth,
            "__role": "master",
        }
    )
    os.makedirs(opts["token_dir"], exist_ok=True)
    loads = [
        {"eauth": "auto", "username": "fred", "password": "anything"},
        {"eauth": "auto", "username": "frank", "password": "x"},
        {"eauth": "auto", "username": "zed", "password": "x"},
        {"eauth": "auto", "username": "fred"},
        {"eauth": "sharedsecret", "username": "ssuser", "password": "s3cr3t"},
        {"eauth": "sharedsecret", "username": "ssuser", "password": "wrong"},
        {"eauth": "file", "username": "dean", "password": "goneFishing"},
        {"eauth": "file", "username": "dean", "password": "goneFishinG"},
        {"eauth": "file", "username": "gene", "password": "OceanMan"},
        {"eauth": "file", "username": "nobody", "password": "OceanMan"},
        {"eauth": "ldap", "username": "fred", "password": "x"},
        {"username": "fred", "password": "x"},
    ]
    la = salt.auth.LoadAuth(opts)
    cases = []
    for load in loads:
        kind = "eauth" if "eauth" in load else "user"
        if kind == "user":
            continue
        try:
            ret = la.check_authentication(dict(load), "eauth")
        except Exception as exc:  # 3006: a missing password raises out of __auth_call
            ret = {"raises": repr(exc)}
        cases.append({"load": load, "expect": ret})
    # token flow: mk_token then check_authentication by token; an unknown token
    tok = la.mk_token({"eauth": "auto", "username": "fred", "password": "x"})
    with open(os.path.join(opts["token_dir"], tok["token"]), "rb") as fh:
        raw = fh.read()
    token_case = {
        "tdata": {k: tok[k] for k in ("name", "eauth", "token")},
        "file_hex": raw.hex(),
        "by_token": la.check_authentication({"token": tok["token"]}, "token"),
        "unknown": la.check_authentication({"token": "0" * 64}, "token"),
    }
    # the file backend's legacy text format
    legacy_opts = copy.deepcopy(opts)
    legacy_opts["external_auth"] = {
        "file": {
            "^filename": legacy,
            "^filetype": "text",
            "^hashtype": "md5",
            "^username_field": 2,
            "^password_field": 3,
            "^field_separator": "|",
            "trey": [".*"],
            "mike": [".*"],
        }
    }
    la2 = salt.auth.LoadAuth(legacy_opts)
    legacy_cases = []
    for user, pw in (("trey", "rockstar"), ("trey", "md5"), ("mike", "x"), ("mike", "X")):
        load = {"eauth": "file", "username": user, "password": pw}
        legacy_cases.append({"load": load, "expect": la2.check_authentication(dict(load), "eauth")})
    return {
        "external_auth": external_auth,
        "sharedsecret": "s3cr3t",
        "users_txt": open(users).read(),
        "cases": cases,
        "token": token_case,
        "legacy": {
            "external_auth": legacy_opts["external_auth"],
            "legacy_txt": open(legacy).read(),
            "cases": legacy_cases,
        },
    }


def main():
    with tempfile.TemporaryDirectory() as tmp:
        pki = os.path.join(tmp, "pki")
        os.makedirs(os.path.join(pki, "minions"))
        for m in MINIONS:
            with open(os.path.join(pki, "minions", m), "w") as fh:
                fh.write("key")
        ck = ckminions(pki)
        golden = {
            "salt_version": salt.version.__version__,
            "minions": MINIONS,
            "auth_check": {
                "auth_lists": AUTH_LISTS,
                "funs": FUNS,
                "args": ARGS,
                "minion_sets": MINION_SETS,
                "expect": auth_matrix(ck),
            },
            "spec_check": {
                "auth_lists": SPEC_LISTS,
                "funs": SPEC_FUNS,
                "kwargs": SPEC_KWARGS,
                "expect": spec_matrix(ck),
            },
            "fill_auth_list": fill_cases(ck),
            "loadauth": loadauth_cases(tmp),
        }
    json.dump(golden, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
