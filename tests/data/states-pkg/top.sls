base:
  '*':
    - pkgs
