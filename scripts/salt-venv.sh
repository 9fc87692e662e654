#!/usr/bin/env bash
# Build (or reuse) a venv holding a runnable real Salt, as in the recipe in
# shared/docs/salt-wire-protocol.md. Usage: scripts/salt-venv.sh VERSION [DIR]
# Prints the venv path. Idempotent: a venv whose salt imports is reused.
set -euo pipefail
ver="${1:?salt version, e.g. 3007.17}"
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${2:-$root/.venv/salt-$ver}"
# Salt 3008's master needs xxhash for its resource registry (`salt/utils/mmap_cache.py`): without
# it `_register_resources` and every `T@` target fail on the master.
extra=""; check=""
case "$ver" in 3006.*|3007.*) ;; *) extra="xxhash>=3.7.0"; check=", xxhash" ;; esac
if [ -x "$dir/bin/python" ] && "$dir/bin/python" -c "import salt.version, zmq, msgpack$check; assert salt.version.__version__ == '$ver'" 2>/dev/null; then
  # salt-api's rest_cherrypy (the reference of tests/tests/api_*.rs) and ws4py (its /ws),
  # added to older venvs.
  "$dir/bin/python" -c "import cherrypy" 2>/dev/null || "$dir/bin/pip" install -q CherryPy >&2
  "$dir/bin/python" -c "import ws4py" 2>/dev/null || "$dir/bin/pip" install -q ws4py >&2
  # Salt's `postgres` returner (the reference of tests/tests/returner_postgres.rs).
  "$dir/bin/python" -c "import psycopg2" 2>/dev/null || "$dir/bin/pip" install -q psycopg2-binary >&2
  echo "$dir"; exit 0
fi
rm -rf "$dir"
python3 -m venv "$dir" >&2
"$dir/bin/pip" install -q --no-deps "salt==$ver" >&2
"$dir/bin/pip" install -q "pyzmq<26" msgpack cryptography pycryptodomex PyYAML Jinja2 MarkupSafe \
  tornado psutil distro looseversion packaging jmespath requests certifi python-dateutil \
  setproctitle contextvars immutables jaraco.text jaraco.functools jaraco.context \
  more-itertools croniter attrs filelock urllib3 idna charset-normalizer aiohttp CherryPy ws4py psycopg2-binary $extra >&2
"$dir/bin/python" -c "import salt.version; print(salt.version.__version__)" >&2
echo "$dir"
