roles_pcre: true
