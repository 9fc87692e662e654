base:
  '*':
    - alt
