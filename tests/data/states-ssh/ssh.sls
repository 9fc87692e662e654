{% set out = pillar['outdir'] %}
{% set user = 'saltrs-e2e-ssh' %}
plain-key:
  ssh_auth.present:
    - name: AAAAC3NzaC1lZDI1NTE5AAAAIE4WDa43zj89/eewIZLgZaqDayt8V+6qxSB2TuAc2fu3
    - user: {{ user }}
    - enc: ed25519
    - comment: {{ pillar.get('comment', 'first@host') }}

full-line:
  ssh_auth.present:
    - name: 'no-pty,from="127.0.0.1" ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQCasatwNrXPX0sDHuD1NvO2hKEw7U/d8KAt7gKkbdkqaeDriexzvkftWiq3t9vJNtjSDTLCmFxMMUYo3PEmdJ8mR3L0p0V1DLZoEy1H+Ozt6NYN4JDoN8rECGTa6eFIulJh73IhjQNs5TGfCnPy+O4av0EzgUAcNp/Wx7fkyijP0Q== second key@host'
    - user: {{ user }}

with-options:
  ssh_auth.present:
    - name: AAAAC3NzaC1lZDI1NTE5AAAAIFfTs9eMPy7zyyQaibwYAqz0RBz1z7eoRSLFlqUMnnDC third@host
    - user: {{ user }}
    - enc: ssh-ed25519
    - options: {{ pillar.get('options', ['command="/bin/true"', 'no-port-forwarding']) | json }}
    - config: '%h/.ssh/other_keys'

existing-key:
  ssh_auth.present:
    - name: ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBL7b0SfGYUePdJiszQpj5Fknr4A70b6bzijlZk9UHTZgYFP2uqyR6OSak94Pso5EGYsh/STGAKBCfID/kgkoqzE= renamed@host
    - user: {{ user }}

no-comment:
  ssh_auth.present:
    - user: {{ user }}
    - enc: ssh-ed25519
    - config: {{ out }}/absolute_keys
    - names:
      - AAAAC3NzaC1lZDI1NTE5AAAAIFfTs9eMPy7zyyQaibwYAqz0RBz1z7eoRSLFlqUMnnDC
      - AAAAC3NzaC1lZDI1NTE5AAAAIE4WDa43zj89/eewIZLgZaqDayt8V+6qxSB2TuAc2fu3

from-file:
  ssh_auth.present:
    - user: {{ user }}
    - source: salt://keys.pub

from-missing-file:
  ssh_auth.present:
    - user: {{ user }}
    - source: salt://nope.pub

from-empty-file:
  ssh_auth.present:
    - user: {{ user }}
    - source: salt://empty.pub

bad-key:
  ssh_auth.present:
    - name: 'not base64!'
    - user: {{ user }}

no-such-user:
  ssh_auth.present:
    - name: AAAAC3NzaC1lZDI1NTE5AAAAIE4WDa43zj89/eewIZLgZaqDayt8V+6qxSB2TuAc2fu3
    - user: saltrs-e2e-nouser

kh-plain:
  ssh_known_hosts.present:
    - name: example.test
    - user: {{ user }}
    - key: {{ pillar.get('hostkey', 'AAAAC3NzaC1lZDI1NTE5AAAAIE4WDa43zj89/eewIZLgZaqDayt8V+6qxSB2TuAc2fu3') }}
    - enc: ssh-ed25519
    - hash_known_hosts: False

kh-hashed:
  ssh_known_hosts.present:
    - name: hashed.test
    - user: {{ user }}
    - config: .ssh/known_hosts_hashed
    - key: AAAAB3NzaC1yc2EAAAADAQABAAAAgQCasatwNrXPX0sDHuD1NvO2hKEw7U/d8KAt7gKkbdkqaeDriexzvkftWiq3t9vJNtjSDTLCmFxMMUYo3PEmdJ8mR3L0p0V1DLZoEy1H+Ozt6NYN4JDoN8rECGTa6eFIulJh73IhjQNs5TGfCnPy+O4av0EzgUAcNp/Wx7fkyijP0Q==
    - enc: ssh-rsa

kh-global:
  ssh_known_hosts.present:
    - name: global.test
    - config: {{ out }}/ssh_known_hosts
    - key: AAAAC3NzaC1lZDI1NTE5AAAAIFfTs9eMPy7zyyQaibwYAqz0RBz1z7eoRSLFlqUMnnDC
    - enc: ssh-ed25519
    - hash_known_hosts: False

kh-port:
  ssh_known_hosts.present:
    - name: port.test
    - port: 2222
    - user: {{ user }}
    - key: AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBL7b0SfGYUePdJiszQpj5Fknr4A70b6bzijlZk9UHTZgYFP2uqyR6OSak94Pso5EGYsh/STGAKBCfID/kgkoqzE=
    - enc: ecdsa-sha2-nistp256
    - hash_known_hosts: False

kh-port-hashed:
  ssh_known_hosts.present:
    - name: port.test
    - port: 2222
    - user: {{ user }}
    - key: AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBL7b0SfGYUePdJiszQpj5Fknr4A70b6bzijlZk9UHTZgYFP2uqyR6OSak94Pso5EGYsh/STGAKBCfID/kgkoqzE=
    - enc: ecdsa-sha2-nistp256

kh-relative-no-user:
  ssh_known_hosts.present:
    - name: example.test
    - config: relative/known_hosts
    - key: AAAAC3NzaC1lZDI1NTE5AAAAIE4WDa43zj89/eewIZLgZaqDayt8V+6qxSB2TuAc2fu3
    - enc: ssh-ed25519
