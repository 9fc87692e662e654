color: {{ color }}
