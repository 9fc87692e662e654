#!/usr/bin/env python3
"""Golden command-line argument parsing from Salt itself, for crates/render/tests/yamlify.rs.

Run with a Salt venv's Python (3007.17 is the reference; 3006.30 and 3008.5 have the same
``yamlify_arg``, ``parse_kwarg``, ``parse_input`` and ``condition_input``):

    .venv/salt-3007.17/bin/python scripts/gen-yamlify-golden.py > crates/render/tests/golden/yamlify.json

``yamlify``: each string through ``salt.utils.args.yamlify_arg``. ``parse_input``: argument
lists through ``salt.utils.args.parse_input`` (``condition=True``, as ``salt``, ``salt-run``
and ``salt-call`` call it), with a ``no_parse`` list. Values are written typed, so an int, a
float and a string stay apart: ``{"i": "1"}``, ``{"f": "1.0"}`` (Python ``repr``), a map as
``{"m": [[key, value], ...]}``, other types as ``{"other": "<type name>"}``.
"""

import json
import sys

import salt.utils.args

ARGS = [
    "", " ", "---", "...", "abc", "hello world", "1", "-1", "+1", "0", "007", "0644", "08",
    "1_000", "1_0", "_", "1.0", "1.5e3", "1e3", ".5", "5.", ".inf", "-.inf", ".nan", "0x10",
    "0o17", "0b101", "1:30", "190:20:30", "yes", "no", "Yes", "NO", "on", "Off", "y", "n",
    "true", "True", "TRUE", "false", "False", "null", "Null", "None", "none", "~",
    '{"a": 1}', '{"app": "shop"}', '{"ver": "2"}', "{a: b}", "{a: {b: [1, 2]}}", "{1: 2}",
    "[1, 2]", "[a, b]", "[]", "{}", "- a", "a: b", "a:b", "a: 1", "key: {b: 1}",
    "a=b", 'a={"b": 1}', "#", "# comment", "a #b", "a#b", "[1, 2] # x", "{a: 1} #c",
    "|", "!", ">", "'quoted'", '"dq"', "'", '"', "!!python/object:os.system", "!!str 1",
    "!!int 5", "!!binary aGVsbG8=", "!!float 1", "&a x", "*a", "a\tb", "a\nb", "line\r",
    "2026-11-27", "2026-11-27 16:00:00", "12:30:00", "@home", "`x`", "%x", "a, b", "a,b",
    "a:", ":a", "-", "--", "-a", "?", "? a", "a?", "/srv/salt", "salt://top.sls", "*",
    "web-*", "G@os:Debian", "http://x:8080/a?b=c#d", "1.2.3.4", "3.10", "1.10", "01.5",
    "20261127160303123456", "123456789012345678901", "18446744073709551616",
    "-9223372036854775809", "9223372036854775807", " 1", "1 ", " a ", "é", "\u00e9=1",
]

PARSE_INPUT = [
    (["web-1", "event.send"], []),
    (["myco/x", '{"app": "shop"}'], []),
    (["pillar={\"ver\": \"2\"}", "saltenv=base"], []),
    (["a=1", "b=yes", "c=~", "d=[1, 2]", "e={x: 1}", "f=a=b", "g==x"], []),
    (["1a=1", "_x=1", "x.y=2", "x-y=3", "a b=1", "=1", "a=", "é=1"], []),
    (["a=1", "a=2"], []),
    (["a=1\n", "b=\n", "c=x\n\n"], []),
    (["cmd=ls #", "x=1\n2", "y=a\nb=c"], []),
    (["20261127160303123456", "12345678901234567890", "jid=20261127160303123456"], []),
    (["pillar={\"ver\": \"2\"}", "name=1"], ["pillar"]),
    (["name=001", "other=001"], ["name"]),
]


def typed(v):
    if v is None or isinstance(v, bool) or isinstance(v, str):
        return v
    if isinstance(v, int):
        return {"i": str(v)}
    if isinstance(v, float):
        return {"f": repr(v)}
    if isinstance(v, list):
        return [typed(x) for x in v]
    if isinstance(v, dict):
        return {"m": [[typed(k), typed(x)] for k, x in v.items()]}
    return {"other": type(v).__name__}


def main():
    out = {
        "yamlify": [[a, typed(salt.utils.args.yamlify_arg(a))] for a in ARGS],
        "parse_input": [
            [args, no_parse, typed(salt.utils.args.parse_input(list(args), no_parse=no_parse))]
            for args, no_parse in PARSE_INPUT
        ],
    }
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
