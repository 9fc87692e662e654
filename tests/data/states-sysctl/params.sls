{# `current` is the running vm.swappiness: an apply writes the config file and sets the
   same value again, so the host's kernel settings do not change. #}
swappiness:
  sysctl.present:
    - name: vm.swappiness
    - value: {{ pillar['current'] }}
    - config: {{ pillar['config'] }}

{% if pillar.get('test_only') %}
other-value:
  sysctl.present:
    - name: vm.swappiness
    - value: {{ pillar['current'] + 1 }}
    - config: {{ pillar['config'] }}

spaced:
  sysctl.present:
    - name: kernel.printk
    - value: 1   2  3    4
    - config: {{ pillar['config'] }}
{% endif %}

missing-key:
  sysctl.present:
    - name: salt.rs.no_such_key
    - value: 1
    - config: {{ pillar['config'] }}
