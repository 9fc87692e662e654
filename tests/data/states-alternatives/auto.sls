back-to-auto:
  alternatives.auto:
    - name: saltrs-e2e-alt
