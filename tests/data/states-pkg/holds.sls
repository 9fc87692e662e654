{% from "map.jinja" import pkgmap with context %}
hold-alpha:
  pkg.held:
    - name: {{ pkgmap.alpha }}

# Installed at an exact version, then held (the install's changes and the hold's merged).
beta-pinned:
  pkg.installed:
    - name: {{ pkgmap.beta }}
    - version: 2.1-1
    - hold: True
    - update_holds: True

# Version conditions met by what is installed: nothing to do.
alpha-at-least:
  pkg.installed:
    - name: {{ pkgmap.alpha }}
    - version: '>=1.0'
    - refresh: False

beta-range:
  pkg.installed:
    - refresh: False
    - pkgs:
      - {{ pkgmap.beta }}: '>=2.0,<3.0'
    - require:
      - pkg: beta-pinned

# Not met, and no candidate meets it: pkg.install's "No version matching" error.
alpha-too-new:
  pkg.installed:
    - name: {{ pkgmap.alpha }}
    - version: '>=5.0'
    - refresh: False

hold-both:
  pkg.held:
    - pkgs:
      - {{ pkgmap.alpha }}
      - {{ pkgmap.beta }}: 2.1-1
    - require:
      - pkg: hold-alpha
      - pkg: beta-pinned

nothing-to-hold:
  pkg.held:
    - pkgs: []
