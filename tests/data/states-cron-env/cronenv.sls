{% set user = 'saltrs-e2e-cron' %}
mailto:
  cron.env_present:
    - name: MAILTO
    - value: {{ pillar.get('mailto', 'ops@example.com') }}
    - user: {{ user }}

path:
  cron.env_present:
    - name: PATH
    - value: /usr/bin:/bin
    - user: {{ user }}

number:
  cron.env_present:
    - name: RETRIES
    - value: 3
    - user: {{ user }}

empty:
  cron.env_present:
    - name: EMPTY
    - user: {{ user }}

shell:
  cron.env_absent:
    - name: SHELL
    - user: {{ user }}

never-there:
  cron.env_absent:
    - name: ' NEVER '
    - user: {{ user }}
