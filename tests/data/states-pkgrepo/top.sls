base:
  '*':
    - repos
