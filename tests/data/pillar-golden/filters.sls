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
  # Values printed as Python prints them (str of lists and dicts is their repr).
  text_dict: {{ data | string | yaml_dquote }}
  text_list: {{ "%s" | format([1, 'a', None, 2.0, {'k': "it's"}]) | yaml_dquote }}
  text_float: "{{ 1e16 }} {{ 0.1 + 0.2 }} {{ 7 / 2 }}"
  round: "{{ 2.5 | round }} {{ 2.675 | round(2) }} {{ 2.1 | round(0, 'ceil') }}"
  {%- set grown = {'b': 1} %}
  {%- do grown.update({'z': [None, 'x']}) %}
  text_concat: {{ ('x' ~ grown ~ ' ' ~ '{} {}'.format(grown, [1.5])) | yaml_dquote }}
  # Salt's own filters (a pattern without groups gives the match from 3007 on, `()` in 3006: not here).
  salt_rs1: {{ ('abcd' | regex_search('^(.*)BC(.*)$', ignorecase=True)) | string | yaml_dquote }}
  salt_rs3: {{ ('abcd' | regex_search('x')) | string | yaml_dquote }}
  salt_rs4: {{ ('abcd' | regex_search('(b)(x)?')) | string | yaml_dquote }}
  salt_rs5: {{ ('abcd' | regex_search('(b)(c)'))[1] | yaml_dquote }}
  salt_rm1: {{ ('abcd' | regex_match('bc')) | string | yaml_dquote }}
  salt_rm2: {{ ('abcd' | regex_match('a(b)')) | string | yaml_dquote }}
  salt_rr1: {{ 'lets replace spaces' | regex_replace('\s+', '__') | yaml_dquote }}
  salt_rr2: {{ 'me@box' | regex_replace('(\w+)@(?P<host>\w+)', '\\2 at \\g<host> \\g<1> $') | yaml_dquote }}
  salt_rr3: {{ 'AbAb' | regex_replace('a', 'x', ignorecase=True) | yaml_dquote }}
  salt_re: {{ 'a.b*c d' | regex_escape | yaml_dquote }}
  salt_q1: {{ 'a b\'c' | quote | yaml_dquote }}
  salt_q2: {{ 'safe/p-1.txt' | quote | yaml_dquote }}
  salt_u: {{ ([1, 2, 3, 4] | union([2, 4, 6])) | string | yaml_dquote }}
  salt_i: {{ ([1, 2, 3, 4] | intersect([2, 4, 6])) | string | yaml_dquote }}
  salt_d: {{ ([1, 2, 3, 4] | difference([2, 4, 6])) | string | yaml_dquote }}
  salt_s: {{ ([1, 2, 3, 4] | symmetric_difference([2, 4, 6])) | string | yaml_dquote }}
  salt_md5: {{ 'abc' | md5 }}
  salt_sha1: {{ 'abc' | sha1 }}
  salt_sha256: {{ 'é' | sha256 }}
  salt_sha512: {{ 'abc' | sha512 }}
  salt_b64: {{ 'héllo' | base64_encode }}
  salt_b64d: {{ 'aMOpbGxv' | base64_decode | yaml_dquote }}
  salt_pj1: {{ '/etc' | path_join('/salt/', 'x/../y', 'z/') | yaml_dquote }}
  salt_pj2: {{ 'a' | path_join('b') | yaml_dquote }}
  salt_pj3: {{ '/' | path_join('/srv') | yaml_dquote }}
  # PyYAML as Salt dumps (libyaml's emitter): flow and block style, folding at 80 columns.
  {%- set conf = {'name': 'café', 'ports': [80, 443], 'ratio': 2.0, 'tls': {'on': True, 'ciphers': None, 'list': [[1, 2], {'a': 'yes'}]}, 'long': 'word ' * 30, 'multi': 'l1\nl2\n', 'empty': {}} %}
  yaml_flow: {{ conf | yaml | yaml_dquote }}
  yaml_block: {{ conf | yaml(False) | yaml_dquote }}
  yaml_encode: {{ (('é "x"' | yaml_encode) ~ ' ' ~ (2.5 | yaml_encode) ~ ' ' ~ (None | yaml_encode)) | yaml_dquote }}
  yaml_squote: {{ "it's é" | yaml_squote | yaml_dquote }}
  # traverse (Salt's traverse_dict_and_list: dicts inside lists, negative indexes, number keys).
  {%- set tv = {'a': {'b': [{'c': 'deep'}, 'x', {'k': 'v'}]}, 'n': {1: 'one'}, 'l': [10, 20, 30]} %}
  traverse_1: {{ tv | traverse('a:b:c') | string | yaml_dquote }}
  traverse_2: {{ tv | traverse('a:b:1') | string | yaml_dquote }}
  traverse_3: {{ tv | traverse('a:b:k') | string | yaml_dquote }}
  traverse_4: {{ tv | traverse('a:nope', 'dflt') | string | yaml_dquote }}
  traverse_5: {{ tv | traverse('n:1') | string | yaml_dquote }}
  traverse_6: {{ tv | traverse('l:-1') | string | yaml_dquote }}
  traverse_7: {{ tv | traverse('l:5') | string | yaml_dquote }}
  traverse_8: {{ tv | traverse('a/b/0/c', delimiter='/') | string | yaml_dquote }}
  traverse_9: {{ tv | traverse('a') | string | yaml_dquote }}
  traverse_10: {{ tv | traverse('l:x', 'none') | string | yaml_dquote }}
