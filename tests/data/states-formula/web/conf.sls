{% from "web/map.jinja" import out with context %}
{{ out }}/d:
  file.directory:
    - mode: 755
