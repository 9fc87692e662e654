{#- Salt's serializing filters, compared byte for byte (each result is a string). #}
{%- set data = {'b': 'é ü <a> & \'q\' "d"', 'a': [1, 2.5, None, True, 1e16, 1e-5], 'c': {}} %}
filters:
  json: {{ data | json | yaml_dquote }}
  json_unsorted: {{ data | json(sort_keys=False) | yaml_dquote }}
  json_indent: {{ data | json(indent=2) | yaml_dquote }}
  json_scalar: {{ 'ö' | json | yaml_dquote }}
  tojson: {{ data | tojson | yaml_dquote }}
  tojson_indent: {{ data | tojson(2) | yaml_dquote }}
  tojson_sorted_unicode: {{ data | tojson(sort_keys=True, ensure_ascii=False) | yaml_dquote }}
