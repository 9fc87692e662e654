base:
  '*':
    - cronenv
