# The file holds another line than `name` (its comment): emptied, then written again.
two-clean:
  pkgrepo.managed:
    - name: deb [trusted=yes] file:{{ pillar['repo'] }}/two ./
    - file: /etc/apt/sources.list.d/saltrs-two.list
    - clean_file: True
