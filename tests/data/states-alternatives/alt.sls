{% set out = pillar['outdir'] %}
alt-a:
  alternatives.install:
    - name: saltrs-e2e-alt
    - link: {{ out }}/bin/saltrs-alt
    - path: {{ out }}/opt/alt-a
    - priority: 10

alt-b:
  alternatives.install:
    - name: saltrs-e2e-alt
    - link: {{ out }}/bin/saltrs-alt
    - path: {{ out }}/opt/alt-b
    - priority: {{ pillar.get('prio_b', 20) }}

choose-a:
  alternatives.set:
    - name: saltrs-e2e-alt
    - path: {{ out }}/opt/alt-a

choose-missing:
  alternatives.set:
    - name: saltrs-e2e-alt
    - path: {{ out }}/opt/alt-none

missing-target:
  alternatives.install:
    - name: saltrs-e2e-alt2
    - link: {{ out }}/bin/saltrs-alt2
    - path: {{ out }}/opt/does-not-exist
    - priority: 5
