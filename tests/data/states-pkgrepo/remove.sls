drop-old:
  pkgrepo.absent:
    - name: deb [arch=amd64] file:/srv/saltrs-none/old bookworm main

drop-two:
  pkgrepo.absent:
    - name: deb [trusted=yes] file:{{ pillar['repo'] }}/two ./

drop-one-comp:
  pkgrepo.absent:
    - name: deb file:/srv/saltrs-none bookworm non-free

wrong-arch:
  pkgrepo.absent:
    - name: deb [arch=i386] file:/srv/saltrs-none/third trixie main

never-there:
  pkgrepo.absent:
    - name: deb http://deb.example.invalid/debian/ stable main
