{% set out = pillar['outdir'] %}
{% set version = pillar.get('version', 1) %}
# The pre-required state comes first in the order, named as a string; two pre-requiring states.
more-conf:
  file.managed:
    - name: {{ out }}/more.conf
    - contents: more {{ version }}

more-first:
  cmd.run:
    - name: echo first >> {{ out }}/more-marker
    - prereq:
      - more-conf

more-second:
  test.succeed_with_changes:
    - prereq:
      - file: more-conf

# A prereq naming nothing.
lost-prereq:
  test.succeed_without_changes:
    - prereq:
      - file: nothing-here

# prereq on a whole SLS.
sls-pre:
  cmd.run:
    - name: echo sls >> {{ out }}/sls-marker
    - prereq:
      - sls: prereq.slsdeps

# The pre-required state names a missing requisite: Salt files it with its test runs only
# (it is not in the output); the pre-requiring command fails.
pre-lost:
  cmd.run:
    - name: echo lost >> {{ out }}/pre-lost-marker
    - prereq:
      - test: lost-target

lost-target:
  test.succeed_with_changes:
    - require:
      - file: nowhere
