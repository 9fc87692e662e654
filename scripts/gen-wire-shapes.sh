#!/bin/sh
# Regenerates tests/data/wire-shapes.json: records one session (sign-in, publish of test.ping,
# return) between a real Python salt-minion and salt-master of every available Salt version
# (SALT_VENVS="venv1:venv2:..." or the default venvs) through a recording ZeroMQ proxy, and
# stores the shape of each message kind (keys, order, value types, str vs bin).
set -eu
cd "$(dirname "$0")/.."
exec cargo test -p salt-integration-tests --test interop_wire -- --ignored --exact record_reference --nocapture
