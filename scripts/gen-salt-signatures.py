"""Golden data: the arguments of each Salt state function salt-rs registers (the `REGISTRY`
table of crates/states/src/mods/mod.rs, read here, not hand-listed), with their defaults, from
`inspect.signature` on Salt's state modules, for crates/states/tests/state_args.rs.

    .venv/salt-3007.17/bin/python scripts/gen-salt-signatures.py \
        > crates/states/tests/data/salt-state-signatures.json
"""
import importlib
import inspect
import json
import pathlib
import re

import salt.version

ROOT = pathlib.Path(__file__).resolve().parent.parent
src = (ROOT / "crates/states/src/mods/mod.rs").read_text()
table = re.search(r"pub const REGISTRY: &\[\(&str, &Args\)\] = &\[(.*?)\];", src, re.S).group(1)
names = re.findall(r'"([a-z_]+\.[a-z_]+)"', table)


# Virtual names whose Python module is named otherwise.
MODULE_FILES = {"ini": "ini_manage"}


def plain(v):
    if v is inspect.Parameter.empty:
        return None
    try:
        json.dumps(v)
        return v
    except TypeError:
        return repr(v)


out = {}
no_kwargs = []
for full in names:
    mod, fun = full.split(".")
    module = importlib.import_module(f"salt.states.{MODULE_FILES.get(mod, mod)}")
    # `__func_alias__` maps a state's name to its Python function (`set` -> `set_`).
    alias = {v: k for k, v in getattr(module, "__func_alias__", {}).items()}
    func = getattr(module, alias.get(fun, fun))
    params = []
    sig = inspect.signature(func).parameters.values()
    if not any(p.kind == p.VAR_KEYWORD for p in sig):
        no_kwargs.append(full)
    for p in sig:
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        params.append(
            {"name": p.name, "default": plain(p.default), "required": p.default is p.empty}
        )
    out[full] = params
# `no_kwargs`: the functions without `**kwargs`, whose other keywords Salt refuses
# ("'x' is an invalid keyword argument for 'state.fun'").
print(json.dumps({"salt": salt.version.__version__, "functions": out, "no_kwargs": sorted(no_kwargs)}, indent=1))
