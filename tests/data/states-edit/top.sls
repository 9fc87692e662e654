base:
  '*':
    - edit
