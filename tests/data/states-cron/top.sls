base:
  '*':
    - cronjobs
