{% from "map.jinja" import pkgmap with context %}
include:
  - pkgs.conf

alpha:
  pkg.installed:
    - name: {{ pkgmap.alpha }}

beta:
  pkg.latest:
    - name: {{ pkgmap.beta }}
    - refresh: False
    - require:
      - pkg: alpha

both:
  pkg.installed:
    - refresh: False
    - pkgs:
      - {{ pkgmap.alpha }}
      - {{ pkgmap.beta }}

never-installed:
  pkg.removed:
    - name: {{ pkgmap.gamma }}

after-install:
  cmd.run:
    - name: dpkg-query -W -f '${Version}' {{ pkgmap.alpha }}
    - onchanges:
      - pkg: alpha
