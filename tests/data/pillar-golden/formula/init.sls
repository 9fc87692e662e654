{% from "formula/map.jinja" import app with context %}
{% set extra = {} %}
{% do extra.update({'port': app.port + 1, 'id': grains['id']}) %}
{% set names = [] %}
{% for n in ['a', 'b', 'a'] | unique %}{% do names.append(n | upper) %}{% endfor %}
include:
  - formula.sub
  - formula.keyed:
      key: nested:deep
      defaults:
        color: blue
app: {{ app | yaml }}
extra: {{ extra | json }}
names: {{ names | yaml }}
list: [3]
conf: {{ salt['config.get']('kernel') | yaml_dquote }}
seq: {{ 'x' | sequence | json }}
