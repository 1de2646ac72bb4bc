"""HTTPS servers for the trust-policy tests (Tests/SwitchboardTests/TrustPolicyTests.swift).

Usage: python3 tls_trust_server.py '<json>' where the JSON is a list of servers, each
{"cert": path, "key": path, "clientCA": path or null, "tls12": true or absent}
("tls12": TLS 1.2 at most, so a refused client certificate is refused inside the handshake; TLS 1.3
refuses it after, and the alert can be lost when the close resets the connection). Every server listens on 127.0.0.1 on a port of
its own, chosen by the system; the first line printed is the JSON list of those ports. Then it serves
until its standard input closes (the test process ended or let it go).

Routes, on every server (HTTP/1.1, keep-alive):
  GET /hello            200 {"ok": true, "client": <the client certificate's CN, or null>, "headers": {...}}
  GET /redirect?to=URL  302 to URL
"""
import json
import os
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, status, value, extra=()):
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, text in extra:
            self.send_header(name, text)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/redirect":
            target = parse_qs(url.query).get("to", [""])[0]
            self.send_json(302, {"to": target}, [("Location", target)])
            return
        client = None
        peer = self.connection.getpeercert() if hasattr(self.connection, "getpeercert") else None
        if peer:
            for part in peer.get("subject", ()):
                for key, value in part:
                    if key == "commonName":
                        client = value
        self.send_json(200, {"ok": True, "client": client, "path": url.path, "headers": {k: v for k, v in self.headers.items()}})


class TLSServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, context):
        self.context = context
        super().__init__(("127.0.0.1", 0), Handler)

    def get_request(self):
        sock, address = self.socket.accept()
        # The handshake runs in the request's thread (when it first reads), so a client that fails it
        # holds up no other connection.
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address

    def handle_error(self, request, client_address):
        pass  # a refused handshake is what many tests expect


def main():
    servers = []
    for spec in json.loads(sys.argv[1]):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(spec["cert"], spec["key"])
        if spec.get("tls12"):
            context.maximum_version = ssl.TLSVersion.TLSv1_2
        if spec.get("clientCA"):
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(spec["clientCA"])
        server = TLSServer(context)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    print(json.dumps([server.server_address[1] for server in servers]), flush=True)
    sys.stdin.read()
    os._exit(0)


if __name__ == "__main__":
    main()
