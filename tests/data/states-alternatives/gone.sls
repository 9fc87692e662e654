{% set out = pillar['outdir'] %}
remove-b:
  alternatives.remove:
    - name: saltrs-e2e-alt
    - path: {{ out }}/opt/alt-b

remove-a:
  alternatives.remove:
    - name: saltrs-e2e-alt
    - path: {{ out }}/opt/alt-a

remove-never:
  alternatives.remove:
    - name: saltrs-e2e-never
    - path: {{ out }}/opt/alt-a
