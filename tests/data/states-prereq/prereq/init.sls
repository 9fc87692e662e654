{% set out = pillar['outdir'] %}
{% set version = pillar.get('version', 1) %}
# The pre-required file changes: the pre-requiring command runs first, then the file.
restart-app:
  cmd.run:
    - name: echo restarted for {{ version }} >> {{ out }}/restarts
    - prereq:
      - file: app-conf

app-conf:
  file.managed:
    - name: {{ out }}/app.conf
    - contents: version {{ version }}

# The pre-required file is already as wanted: the command is not run.
stable-conf:
  file.managed:
    - name: {{ out }}/stable.conf
    - contents: stable

never-run:
  cmd.run:
    - name: touch {{ out }}/never
    - prereq:
      - file: stable-conf

# prereq_in: the file names the command that runs before it changes.
in-marker:
  cmd.run:
    - name: echo in >> {{ out }}/in-marker

in-conf:
  file.managed:
    - name: {{ out }}/in.conf
    - contents: in {{ version }}
    - prereq_in:
      - cmd: in-marker

# The pre-requiring command fails: the pre-required file is not changed.
fail-first:
  cmd.run:
    - name: exit 3
    - prereq:
      - file: guarded

guarded:
  file.managed:
    - name: {{ out }}/guarded.conf
    - contents: guarded

# The pre-required state fails in its test run.
needs-broken:
  cmd.run:
    - name: touch {{ out }}/broken-marker
    - prereq:
      - file: broken

broken:
  file.managed:
    - name: {{ out }}/broken.conf
    - source: salt://prereq/nope.txt

# A state requiring the pre-requiring one.
after-restart:
  test.succeed_without_changes:
    - require:
      - cmd: restart-app
