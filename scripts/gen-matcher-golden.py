#!/usr/bin/env python3
"""Golden ``subdict_match`` answers from Salt itself, for crates/matcher/tests/golden.rs.

Run with a Salt venv's Python (3007.17 is the reference):

    .venv/salt-3007.17/bin/python scripts/gen-matcher-golden.py > crates/matcher/tests/golden/subdict.json

``salt.utils.data.subdict_match(data, expr, delimiter, regex_match)`` (what the grain,
grain_pcre, pillar and pillar_pcre matchers call) over a matrix of data sets x expressions x
delimiters x glob/regex. The answers are one string in loop order ('1' match, '0' none).
"""

import json
import logging

import salt.utils.data

logging.disable(logging.CRITICAL)

DATA = [
    {
        "os": "Debian",
        "os_family": "Debian",
        "num_cpus": 2,
        "virtual": False,
        "osrelease": "12.4",
        "ipv4": ["127.0.0.1", "10.0.0.5"],
        "roles": ["web", "Base", {"tier": "front", "zone": ["a", "b"]}, ["nested", "list"]],
        "locale_info": {"defaultlanguage": "en_US", "defaultencoding": "UTF-8"},
        "selinux": {"enabled": False, "enforced": "Disabled"},
        "url": "http://x:8080/p",
        "path": "/usr/bin:/bin",
        "gpus": [{"model": "Virtio GPU", "vendor": "unknown"}],
        "empty": {},
        "none": None,
        "deep": {"a": {"b": {"c": "Leaf", "d": ["x|y", "z"]}}, "e": "f:g"},
        "pipe|key": "piped",
        "Straße": "ÄÖÜ",
        "float": 2.5,
    },
    {"roles": {"web": True, "tier": "front"}, "a:b": "colon-key", "x": {"y|z": "w"}},
]

EXPRS = [
    "os:Debian", "os:debian", "os:Deb*", "os:^Deb", "os:RedHat", "os:*", "os", "missing:x",
    "num_cpus:2", "num_cpus:2*", "virtual:False", "virtual:false", "osrelease:12.*",
    "ipv4:10.0.0.*", "ipv4:192.*", "ipv4:1", "ipv4:-1", "ipv4:0:127*",
    "roles:web", "roles:base", "roles:tier:front", "roles:tier", "roles:zone:a", "roles:front",
    "roles:*nested*", "roles:*tier*", "roles:[wx]eb", "roles:w.b", "roles:(web|db)$",
    "locale_info:defaultlanguage:en_US", "locale_info:en_*", "locale_info:defaultlanguage",
    "locale_info:*:en_US", "locale_info:*:utf-8", "locale_info:*", "*:Debian", "*:*",
    "*:defaultlanguage:en_US", "selinux:enabled:False", "selinux:*:disabled",
    "url:http://x:8080/p", "url:http://x*", "path:/usr/bin:/bin", "gpus:model:Virtio GPU",
    "gpus:model:virtio*", "gpus:*virtio*", "gpus:vendor", "empty:x", "empty:*", "none:None",
    "deep:a:b:c:leaf", "deep:a:b:c", "deep:a:b:d:z", "deep:a:b:d:x|y", "deep:*:b:c:leaf",
    "deep:e:f:g", "deep:a:*:c:Leaf", "deep:*:*:leaf", "deep:a:b:*leaf*",
    "pipe|key:piped", "pipe|key", "Straße:äöü", "straße:ÄÖÜ", "float:2.5", "float:2.*",
    "a:b:colon-key", "x:y|z:w", "x|y|z|w", "roles|tier|front", "deep|a|b|c|leaf", "deep|e|f:g",
    "*|Debian", "*|x:y|z", "roles:[", "os:(", "os:D[!x]bian", "roles:web:", ":Debian",
    "os::Debian", "roles:tier:*", "roles:*:front", "roles:*",
]

DELIMS = [":", "|"]


def main():
    out = []
    for data in DATA:
        for expr in EXPRS:
            for delim in DELIMS:
                for regex in (False, True):
                    try:
                        hit = salt.utils.data.subdict_match(
                            data, expr, delimiter=delim, regex_match=regex
                        )
                    except Exception:  # pylint: disable=broad-except
                        hit = False
                    out.append("1" if hit else "0")
    json.dump(
        {
            "salt": salt.version.__version__,
            "data": DATA,
            "exprs": EXPRS,
            "delims": DELIMS,
            "expect": "".join(out),
        },
        __import__("sys").stdout,
        ensure_ascii=False,
        indent=1,
    )


if __name__ == "__main__":
    import salt.version

    main()
