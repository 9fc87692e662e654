base:
  '*':
    - ini
