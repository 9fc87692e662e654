roles_kernelrole: true
