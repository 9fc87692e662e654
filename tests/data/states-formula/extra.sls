extra_state:
  test.show_notification:
    - text: "grain matched on {{ grains['id'] }}"
