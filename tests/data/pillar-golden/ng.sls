roles_ng: true
