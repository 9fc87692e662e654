{% set out = pillar['outdir'] %}
{% set port = pillar.get('port', 8080) %}
block-between-markers:
  file.blockreplace:
    - name: {{ out }}/app.conf
    - marker_start: "# BEGIN managed"
    - marker_end: "# END managed"
    - content: |
        listen = {{ port }}
        workers = 4

block-appended:
  file.blockreplace:
    - name: {{ out }}/app.conf
    - marker_start: "## start extra"
    - marker_end: "## end extra"
    - content: "extra = {{ port }}"
    - append_if_not_found: True
    - require:
      - file: block-between-markers

block-prepended:
  file.blockreplace:
    - name: {{ out }}/app.conf
    - marker_start: "; head"
    - marker_end: "; /head"
    - content: "generated for port {{ port }}"
    - prepend_if_not_found: True
    - append_newline: False
    - show_changes: False
    - backup: False
    - require:
      - file: block-appended

block-no-markers:
  file.blockreplace:
    - name: {{ out }}/lines.conf
    - marker_start: "# nowhere"
    - marker_end: "# never"
    - content: x

comment-bind:
  file.comment:
    - name: {{ out }}/lines.conf
    - regex: ^bind 127.0.0.1

comment-missing-ignored:
  file.comment:
    - name: {{ out }}/lines.conf
    - regex: ^nothing-here
    - ignore_missing: True

uncomment-extra:
  file.uncomment:
    - name: {{ out }}/lines.conf
    - regex: EXTRA_GROUPS
    - backup: False

serialize-json:
  file.serialize:
    - name: {{ out }}/app.json
    - dataset_pillar: app
    - serializer: json
    - mode: '0640'

serialize-yaml:
  file.serialize:
    - name: {{ out }}/app.yaml
    - formatter: yaml
    - dataset:
        name: app
        port: {{ port }}
        tags: [a, b]
        nested:
          enabled: true
          ratio: 0.5

serialize-merge:
  file.serialize:
    - name: {{ out }}/merge.yaml
    - merge_if_exists: True
    - dataset:
        port: {{ port }}
        added: yes

serialize-quiet:
  file.serialize:
    - name: {{ out }}/quiet.json
    - formatter: json
    - show_changes: False
    - dataset:
        port: {{ port }}

serialize-not-created:
  file.serialize:
    - name: {{ out }}/absent.json
    - create: False
    - dataset: {a: 1}

run-new-style:
  module.run:
    - test.echo:
      - text: port {{ port }}
    - test.true: []

run-old-style:
  module.run:
    - name: test.echo
    - text: hello {{ port }}

run-unknown:
  module.run:
    - nosuch.function: []

run-old-unknown:
  module.run:
    - name: nosuch.function

wait-only:
  module.wait:
    - name: test.echo
    - text: never

uncomment-permit:
  file.uncomment:
    - name: {{ out }}/lines.conf
    - regex: ^PermitRoot

comment-semicolon:
  file.comment:
    - name: {{ out }}/php.ini
    - regex: ^extension=(gd|curl)$
    - char: ';'
    - backup: .orig

block-after-match:
  file.blockreplace:
    - name: {{ out }}/php.ini
    - marker_start: "; >>> salt"
    - marker_end: "; <<< salt"
    - content: "memory_limit = {{ port }}M"
    - insert_after_match: '^\[PHP\]'

serialize-missing-pillar:
  file.serialize:
    - name: {{ out }}/missing.yaml
    - dataset_pillar: no:such:key

run-positional-and-failures:
  module.run:
    - test.echo:
      - positional {{ port }}
    - test.false: []

run-missing-argument:
  module.run:
    - test.echo: []

run-old-missing-argument:
  module.run:
    - name: test.echo

block-empty-content-no-final-newline:
  file.blockreplace:
    - name: {{ out }}/tail.txt
    - append_if_not_found: True

watched-conf:
  file.managed:
    - name: {{ out }}/watched.conf
    - contents: port {{ port }}

wait-on-change:
  module.wait:
    - name: test.echo
    - text: changed to {{ port }}
    - watch:
      - file: watched-conf

run-on-change:
  module.run:
    - test.echo:
      - text: run {{ port }}
    - watch:
      - file: watched-conf
