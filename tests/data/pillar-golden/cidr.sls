roles_cidr: true
