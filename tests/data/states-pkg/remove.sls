{% from "map.jinja" import pkgmap with context %}
drop-alpha:
  pkg.removed:
    - name: {{ pkgmap.alpha }}

drop-beta:
  pkg.purged:
    - pkgs:
      - {{ pkgmap.beta }}
      - {{ pkgmap.gamma }}
    - require:
      - pkg: drop-alpha
