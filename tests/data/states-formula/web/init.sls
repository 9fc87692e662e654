{% from "web/map.jinja" import web, out with context %}
include:
  - .conf
  - web.cmds

{{ out }}/a.txt:
  file.managed:
    - contents: {{ web.greeting }}
    - mode: '{{ web.conf_mode }}'
    - makedirs: True

{{ out }}/b.txt:
  file.managed:
    - source: salt://web/files/b.txt
    - template: jinja
    - context:
        who: world

{{ out }}/c.txt:
  file.managed:
    - contents: |
        line1
        line2

{{ out }}/gone:
  file.absent

{{ out }}/link:
  file.symlink:
    - target: {{ out }}/a.txt

many:
  file.directory:
    - names:
      - {{ out }}/n1
      - {{ out }}/n2:
        - mode: 700

failing:
  test.fail_without_changes: []

after_fail:
  test.nop:
    - require:
      - test: failing

rescue:
  test.succeed_with_changes:
    - onfail:
      - test: failing

nochg:
  test.succeed_without_changes:
    - require_in:
      - cmd: run_it

watch_conf:
  test.succeed_without_changes:
    - watch:
      - file: {{ out }}/c.txt

lost_req:
  test.nop:
    - require:
      - file: /does/not/exist

by_sls:
  test.nop:
    - require:
      - sls: web.conf

last_one:
  test.nop:
    - order: last

first_one:
  test.nop:
    - order: 1

extend:
  {{ out }}/d:
    file:
      - mode: 700

not_here:
  pkgx.installed: []

{{ out }}/motd:
  file.managed:
    - contents: "{{ salt['pillar.get']('web:motd', 'none') }} on {{ pillar['web']['port'] }}"
