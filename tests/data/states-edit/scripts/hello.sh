#!/bin/sh
echo "hello $*"
echo "to stderr" >&2
exit 0
