u1-gone:
  user.absent:
    - name: saltrs-e2e-u1
    - purge: True

g1-gone:
  group.absent:
    - name: saltrs-e2e-g1
    - require:
      - user: u1-gone

g2-gone:
  group.absent:
    - name: saltrs-e2e-g2
    - require:
      - user: u1-gone

never:
  user.absent:
    - name: saltrs-e2e-never
