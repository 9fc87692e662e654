{% set out = pillar['outdir'] %}
{% set user = 'saltrs-e2e-ssh' %}
plain-key-gone:
  ssh_auth.absent:
    - name: AAAAC3NzaC1lZDI1NTE5AAAAIE4WDa43zj89/eewIZLgZaqDayt8V+6qxSB2TuAc2fu3
    - user: {{ user }}

full-line-gone:
  ssh_auth.absent:
    - name: 'no-pty,from="127.0.0.1" ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQCasatwNrXPX0sDHuD1NvO2hKEw7U/d8KAt7gKkbdkqaeDriexzvkftWiq3t9vJNtjSDTLCmFxMMUYo3PEmdJ8mR3L0p0V1DLZoEy1H+Ozt6NYN4JDoN8rECGTa6eFIulJh73IhjQNs5TGfCnPy+O4av0EzgUAcNp/Wx7fkyijP0Q== second key@host'
    - user: {{ user }}

with-options-gone:
  ssh_auth.absent:
    - name: AAAAC3NzaC1lZDI1NTE5AAAAIFfTs9eMPy7zyyQaibwYAqz0RBz1z7eoRSLFlqUMnnDC third@host
    - user: {{ user }}
    - config: '%h/.ssh/other_keys'

from-file-gone:
  ssh_auth.absent:
    - user: {{ user }}
    - source: salt://keys.pub

never-there:
  ssh_auth.absent:
    - name: AAAAB3NzaC1yc2EAAAADAQABAAAAgQCasatwNrXPX0sDHuD1NvO2hKEw7U/d8KAt7gKkbdkqaeDriexzvkftWiq3t9vJNtjSDTLCmFxMMUYo3PEmdJ8mR3L0p0V1DLZoEy1H+Ozt6NYN4JDoN8rECGTa6eFIulJh73IhjQNs5TGfCnPy+O4av0EzgUAcNp/Wx7fkyijP0Q==
    - user: {{ user }}
    - config: .ssh/none_here

kh-gone:
  ssh_known_hosts.absent:
    - name: example.test
    - user: {{ user }}

kh-hashed-gone:
  ssh_known_hosts.absent:
    - name: hashed.test
    - user: {{ user }}
    - config: .ssh/known_hosts_hashed

kh-global-gone:
  ssh_known_hosts.absent:
    - name: global.test
    - config: {{ out }}/ssh_known_hosts

kh-never:
  ssh_known_hosts.absent:
    - name: never.test
    - user: {{ user }}
