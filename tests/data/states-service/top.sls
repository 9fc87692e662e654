base:
  '*':
    - svc
