{% set web = pillar.get('unit', 'saltrs-e2e-web') %}
conf:
  file.managed:
    - name: {{ pillar['outdir'] }}/web.conf
    - contents: "port {{ pillar.get('port', 80) }}"

web:
  service.running:
    - name: {{ web }}
    - enable: True
    - watch:
      - file: conf

web2:
  service.running:
    - name: saltrs-e2e-web2
    - reload: True
    - watch:
      - file: conf

worker:
  service.dead:
    - name: saltrs-e2e-worker
    - enable: False

boot:
  service.enabled:
    - name: saltrs-e2e-worker2

turn-off:
  service.disabled:
    - name: saltrs-e2e-worker

missing:
  service.running:
    - name: saltrs-e2e-nosuch
