{% from "map.jinja" import pkgmap with context %}
# Installed already: only the hold is released.
beta-unpinned:
  pkg.installed:
    - name: {{ pkgmap.beta }}
    - hold: False
    - refresh: False

unhold-beta:
  pkg.unheld:
    - name: {{ pkgmap.beta }}
    - version: 2.1-1
    - require:
      - pkg: beta-unpinned

unhold-alpha:
  pkg.unheld:
    - pkgs:
      - {{ pkgmap.alpha }}
      - {{ pkgmap.gamma }}

not-held:
  pkg.unheld:
    - name: {{ pkgmap.gamma }}
