roles_listed: true
