{% set out = pillar['outdir'] %}
g1:
  group.present:
    - name: saltrs-e2e-g1

g2:
  group.present:
    - name: saltrs-e2e-g2

u1:
  user.present:
    - name: saltrs-e2e-u1
    - home: {{ out }}/home/u1
    - shell: {{ pillar.get('shell', '/bin/sh') }}
    - fullname: {{ pillar.get('fullname', 'Test User') }}
    - groups: {{ pillar.get('groups', ['saltrs-e2e-g1']) | json }}
    - require:
      - group: g1
      - group: g2

g2-members:
  group.present:
    - name: saltrs-e2e-g2
    - addusers:
      - saltrs-e2e-u1
    - require:
      - user: u1
