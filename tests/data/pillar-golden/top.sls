base:
  '*':
    - common
    - filters
  'G@kernel:* and not G@os:Nope':
    - formula
  'pym*':
    - match: glob
    - webrole
  'kernel:Linux':
    - match: grain
    - kernelrole
  'pym1,pym2':
    - match: list
    - listed
  'grouped':
    - match: nodegroup
    - ng
  '127.0.0.0/8':
    - match: ipcidr
    - cidr
  '^pym\d$':
    - match: pcre
    - pcre
  'kernel:^Lin':
    - match: grain_pcre
    - gpcre
  'nobody*':
    - nothere
  'pym1':
    - missing_sls
