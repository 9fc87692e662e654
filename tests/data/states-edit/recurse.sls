{% set out = pillar['outdir'] %}
recurse-tree:
  file.recurse:
    - name: {{ out }}/tree
    - source: salt://tree
    - file_mode: 640

recurse-missing:
  file.recurse:
    - name: {{ out }}/nope
    - source: salt://nothere

after-recurse:
  cmd.run:
    - name: cat {{ out }}/tree/sub/b.conf
    - onchanges:
      - file: recurse-tree
