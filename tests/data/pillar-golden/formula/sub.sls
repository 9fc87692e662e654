app:
  pkg: from-sub
  sub_only: true
