{% set out = pillar['outdir'] %}
{% set version = pillar.get('version', 1) %}
dep-one:
  file.managed:
    - name: {{ out }}/dep-one.conf
    - contents: one {{ version }}

dep-two:
  file.managed:
    - name: {{ out }}/dep-two.conf
    - contents: two
