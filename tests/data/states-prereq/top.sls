base:
  '*':
    - prereq
    - prereq.more
    - prereq.slsdeps
