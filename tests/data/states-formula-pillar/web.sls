web:
  motd: welcome from pillar
  port: 8080
