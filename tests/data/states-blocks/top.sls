base:
  '*':
    - blocks
