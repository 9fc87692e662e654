{%- set out = pillar['outdir'] %}
sections-present:
  ini.sections_present:
    - name: {{ out }}/sections.ini
    - sections:
        keep: {}
        fresh: {}
