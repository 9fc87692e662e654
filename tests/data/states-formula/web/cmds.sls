{% from "web/map.jinja" import out with context %}
run_it:
  cmd.run:
    - name: echo hi
    - onchanges:
      - file: {{ out }}/a.txt

watcher:
  cmd.run:
    - name: echo watched
    - unless: 'false'
    - watch:
      - file: {{ out }}/c.txt

skipped:
  cmd.run:
    - name: echo never
    - onlyif: 'false'

created:
  cmd.run:
    - name: echo never2
    - creates: {{ out }}/a.txt

failing_cmd:
  cmd.run:
    - name: 'echo oops >&2; exit 3'

notify:
  cmd.run:
    - name: echo notified
    - onchanges_in:
      - file: {{ out }}/b.txt
    - watch_in:
      - test: watch_conf
