roles_gpcre: true
