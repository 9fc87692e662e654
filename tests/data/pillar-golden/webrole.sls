roles_webrole: true
