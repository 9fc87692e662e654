{% from "map.jinja" import pkgmap with context %}
{{ pillar.get('outdir', '/nonexistent') }}/alpha.conf:
  file.managed:
    - contents: "installed {{ pkgmap.alpha }}"
    - makedirs: True
    - require:
      - pkg: alpha
