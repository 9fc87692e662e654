base:
  '*':
    - params
