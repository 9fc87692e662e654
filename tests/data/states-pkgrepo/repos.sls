{% set one = pillar['repo'] ~ '/one' %}
{% set two = pillar['repo'] ~ '/two' %}
# In sources.list already: nothing to do.
one-again:
  pkgrepo.managed:
    - name: deb [trusted=yes] file:{{ one }} ./

# A new file, with comments; refreshes the package lists (both repositories exist).
two:
  pkgrepo.managed:
    - name: deb [trusted=yes] file:{{ two }} ./
    - file: /etc/apt/sources.list.d/saltrs-two.list
    - humanname: salt-rs second repository
    - comments:
      - managed
      - by salt

# The disabled line of sources.list, its comps changed in place.
none-comps:
  pkgrepo.managed:
    - name: deb file:/srv/saltrs-none bookworm main
    - comps: main,non-free
    - disabled: True
    - refresh: False

# signed-by in the line, architectures as an argument, disabled through `enabled`.
third:
  pkgrepo.managed:
    - name: deb [signed-by=/usr/share/keyrings/saltrs.gpg] file:/srv/saltrs-none/third trixie main
    - architectures: amd64,arm64
    - file: /etc/apt/sources.list.d/saltrs-third.list
    - enabled: False
    - refresh_db: False

both-given:
  pkgrepo.managed:
    - name: deb file:/srv/saltrs-none/fourth trixie main
    - enabled: True
    - disabled: True

bad-line:
  pkgrepo.managed:
    - name: file:/srv/saltrs-none trixie main
    - refresh: False
