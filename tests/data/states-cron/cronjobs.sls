{% set user = 'saltrs-e2e-cron' %}
backup:
  cron.present:
    - name: /usr/local/bin/backup --all
    - user: {{ user }}
    - minute: {{ pillar.get('minute', 15) }}
    - hour: 2

nightly:
  cron.present:
    - name: /bin/true
    - user: {{ user }}
    - identifier: nightly
    - comment: nightly job
    - dayweek: 1-5

disabled:
  cron.present:
    - name: /bin/false
    - user: {{ user }}
    - commented: True

old:
  cron.absent:
    - name: /bin/old
    - user: {{ user }}

never-there:
  cron.absent:
    - name: /bin/never
    - user: {{ user }}
