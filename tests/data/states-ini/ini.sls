{%- set out = pillar['outdir'] %}
{%- set v = pillar.get('val', 'one') %}

# Top-level options (no section header) and sections, in a file with comments,
# blank lines, commented-out options and repeated keys.
main-options:
  ini.options_present:
    - name: {{ out }}/main.ini
    - sections:
        top_key: {{ v }}
        new_top: 7
        general:
          color: blue
          size: {{ v }}
          flag: true
        Journal:
          Storage: persistent
          SystemMaxUse: 50M

colon-separator:
  ini.options_present:
    - name: {{ out }}/colon.ini
    - separator: ':'
    - sections:
        server:
          host: example.org
          port: {{ v }}
          list: [a, b]

spaced-separator:
  ini.options_present:
    - name: {{ out }}/spaced.conf
    - separator: ' = '
    - sections:
        main:
          dns: {{ v }}

no-spaces:
  ini.options_present:
    - name: {{ out }}/nospace.ini
    - no_spaces: True
    - sections:
        Time:
          NTP: {{ v }}
          FallbackNTP: ntp.example

strict-file:
  ini.options_present:
    - name: {{ out }}/strict.ini
    - strict: True
    - sections:
        keep: 1
        Time:
          NTP: {{ v }}

new-file:
  ini.options_present:
    - name: {{ out }}/new.ini
    - sections:
        first:
          a: 1
        second: {}

absent-options:
  ini.options_absent:
    - name: {{ out }}/absent.ini
    - sections:
        general:
          - gone
          - never_there
        {{ v }}:
          - x
        stale: ''

tricky-files:
  ini.options_present:
    - names:
{%- for f in ['dupsec.ini', 'weird.ini', 'blanks.ini', 'unknown.ini', 'commented.ini', 'spaced.ini', 'tabs.ini', 'crlf.ini'] %}
      - {{ out }}/{{ f }}
{%- endfor %}
    - sections:
        k: {{ v }}
        s:
          x: {{ v }}
          y: '3'
        x:
          y: {{ v }}

absent-sections:
  ini.sections_absent:
    - name: {{ out }}/sections.ini
    - sections:
        - old
        - missing
