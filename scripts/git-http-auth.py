#!/usr/bin/env python3
"""A smart-HTTP git server with Basic authentication, for the gitfs auth test.

Usage: git-http-auth.py <project root> <user> <password> [<cert.pem> <key.pem>]

Listens on 127.0.0.1 (a free port, printed as the first line of stdout; HTTPS with the
certificate and key when given) and serves the bare
repositories under <project root> through `git http-backend` (CGI), to clients that send
`Authorization: Basic <user:password>`; any other request gets 401. Runs until killed.
"""
import base64
import http.server
import os
import ssl
import subprocess
import sys

ROOT, USER, PASSWORD = sys.argv[1], sys.argv[2], sys.argv[3]
WANT = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        sys.stderr.write("%s\n" % (args,))

    def handle_one(self):
        if self.headers.get("Authorization") != WANT:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        env = dict(
            os.environ,
            GIT_PROJECT_ROOT=ROOT,
            GIT_HTTP_EXPORT_ALL="1",
            REQUEST_METHOD=self.command,
            PATH_INFO=path,
            QUERY_STRING=query,
            CONTENT_TYPE=self.headers.get("Content-Type", ""),
            CONTENT_LENGTH=str(length),
            REMOTE_USER=USER,
            HTTP_GIT_PROTOCOL=self.headers.get("Git-Protocol", ""),
        )
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        out = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
        ).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.split(b"\r\n"):
            name, _, value = line.decode().partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = handle_one
    do_POST = handle_one


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if len(sys.argv) > 5:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[4], sys.argv[5])
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
