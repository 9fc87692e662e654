{% set out = pillar['outdir'] %}
app-conf:
  file.managed:
    - name: {{ out }}/app.conf
    - contents: |
        # app
        port = 80
        debug = true
        name  =  app

append-lines:
  file.append:
    - name: {{ out }}/app.conf
    - text:
      - "name = app"
      - "workers = 4"
      - |
        [extra]
        a = 1
    - require:
      - file: app-conf

set-port:
  file.replace:
    - name: {{ out }}/app.conf
    - pattern: '^port = \d+'
    - repl: 'port = {{ pillar.get('port', 8080) }}'
    - require:
      - file: append-lines

add-missing:
  file.replace:
    - name: {{ out }}/app.conf
    - pattern: '^timeout = .*$'
    - repl: 'timeout = 30'
    - append_if_not_found: True
    - backup: False

group-ref:
  file.replace:
    - name: {{ out }}/app.conf
    - pattern: '^debug = (\w+)'
    - repl: 'debug = \1-checked'
    - count: 1
    - backup: False
    - show_changes: False

new-file-append:
  file.append:
    - name: {{ out }}/new.txt
    - text: hello

touched:
  file.touch:
    - name: {{ out }}/touched

missing-file:
  file.replace:
    - name: {{ out }}/nope.conf
    - pattern: x
    - repl: y

missing-ok:
  file.replace:
    - name: {{ out }}/nope.conf
    - pattern: x
    - repl: y
    - ignore_if_missing: True

after-edit:
  cmd.run:
    - name: grep -c . {{ out }}/app.conf
    - onchanges:
      - file: set-port

web-host:
  host.present:
    - name: web.example
    - ip: 10.0.0.9
    - clean: True

db-host:
  host.present:
    - name: db.example
    - ip: 10.0.0.7
    - comment: database

stale:
  host.absent:
    - name: old-alias
    - ip: 10.0.0.5

warn-host:
  host.present:
    - name: localhost
    - ip: 127.0.1.1

run-script:
  cmd.script:
    - name: salt://scripts/hello.sh world
    - cwd: /

script-args:
  cmd.script:
    - name: greet
    - source: salt://scripts/hello.sh
    - args: "a b"

missing-script:
  cmd.script:
    - name: salt://scripts/nope.sh

script-name-args:
  cmd.script:
    - name: hello.sh from-name
    - source: salt://scripts/hello.sh
    - cwd: /

line-replace:
  file.line:
    - name: {{ out }}/lines.conf
    - mode: replace
    - match: '^\s*key ='
    - content: 'key = {{ pillar.get("port", 8080) }}'

line-ensure-after:
  file.line:
    - name: {{ out }}/lines.conf
    - mode: ensure
    - after: '^\[main\]'
    - content: 'enabled = true'

line-ensure-before:
  file.line:
    - name: {{ out }}/lines.conf
    - mode: ensure
    - before: '^\[main\]'
    - content: '# managed'

line-delete:
  file.line:
    - name: {{ out }}/lines.conf
    - mode: delete
    - match: '^foo='

line-insert-before:
  file.line:
    - name: {{ out }}/lines.conf
    - mode: insert
    - before: '^# end'
    - content: 'last = yes'

line-new-file:
  file.line:
    - name: {{ out }}/created.conf
    - mode: insert
    - location: end
    - content: 'first line'

line-no-mode:
  file.line:
    - name: {{ out }}/lines.conf
    - content: x
