{% set out = pillar['outdir'] %}
retry-until-second:
  cmd.run:
    - name: "n=$(cat {{ out }}/count 2>/dev/null || echo 0); n=$((n+1)); echo $n > {{ out }}/count; test $n -ge 2"
    - retry:
        attempts: 3
        interval: 0

retry-exhausted:
  test.fail_without_changes:
    - retry:
        attempts: 2
        until: True
        interval: 0

retry-defaults:
  test.succeed_without_changes:
    - retry: True

check-fails:
  cmd.run:
    - name: "true"
    - check_cmd:
      - "true"
      - "false"

check-ok:
  cmd.run:
    - name: "false"
    - check_cmd: "true"

after-retry:
  test.nop:
    - require:
      - cmd: retry-until-second
