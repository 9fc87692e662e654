owner: owner-of-{{ grains["id"] }}
mode: 0644
flag: on
when: 2024-01-02
list: [1, 2]
quoted: '0644'
