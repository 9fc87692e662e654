base:
  '*':
    - ssh
