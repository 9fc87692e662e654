base:
  '*':
    - web
  'G@os_family:Debian':
    - match: compound
    - extra
  'nomatch*':
    - missing
