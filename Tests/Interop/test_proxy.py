"""A small HTTP proxy for the proxy tests (Tests/SwitchboardTests/ProxyTests.swift).

Usage: python3 test_proxy.py [user:password]
Listens on 127.0.0.1 on a port the system chooses and prints it as the first line. Serves until its
standard input closes.

- An absolute-form request (`GET http://host:port/path HTTP/1.1`) is forwarded to its origin, one
  request per connection, and the answer relayed.
- `CONNECT host:port` opens a tunnel (TLS goes through it untouched).
- With user:password, a request without `Proxy-Authorization: Basic <user:password>` gets a 407.
- `GET /__seen` (origin-form, asked of the proxy itself) answers the JSON list of what it saw:
  [{"method", "target", "proxyAuthorization"}], oldest first.
"""
import base64
import json
import os
import socket
import sys
import threading

seen = []
lock = threading.Lock()
expected = None


def read_head(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None, b""
        data += chunk
        if len(data) > 1 << 20:
            return None, b""
    head, rest = data.split(b"\r\n\r\n", 1)
    return head.decode("latin-1"), rest


def pipe(source, target):
    try:
        while True:
            chunk = source.recv(65536)
            if not chunk:
                break
            target.sendall(chunk)
    except OSError:
        pass
    finally:
        for sock in (source, target):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def answer(conn, status, reason, body=b"", extra=""):
    conn.sendall(
        f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n{extra}\r\n".encode() + body
    )


def handle(conn):
    try:
        head, rest = read_head(conn)
        if head is None:
            return
        lines = head.split("\r\n")
        method, target, version = (lines[0].split(" ") + ["", "", ""])[:3]
        fields = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                fields[name.strip().lower()] = value.strip()
        if method == "GET" and target == "/__seen":
            with lock:
                body = json.dumps(seen).encode()
            answer(conn, 200, "OK", body, "Content-Type: application/json\r\n")
            return
        auth = fields.get("proxy-authorization")
        with lock:
            seen.append({"method": method, "target": target, "proxyAuthorization": auth})
        if expected is not None and auth != "Basic " + base64.b64encode(expected.encode()).decode():
            answer(conn, 407, "Proxy Authentication Required", b"", 'Proxy-Authenticate: Basic realm="test"\r\n')
            return
        if method == "CONNECT":
            host, port = target.rsplit(":", 1)
            upstream = socket.create_connection((host, int(port)), timeout=30)
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                upstream.sendall(rest)
            threading.Thread(target=pipe, args=(upstream, conn), daemon=True).start()
            pipe(conn, upstream)
            return
        if not target.startswith("http://"):
            answer(conn, 400, "Bad Request")
            return
        address, _, path = target[len("http://"):].partition("/")
        host, _, port = address.partition(":")
        upstream = socket.create_connection((host, int(port or 80)), timeout=30)
        kept = [f"{method} /{path} {version}"]
        for line in lines[1:]:
            name = line.split(":", 1)[0].strip().lower()
            if name in ("proxy-authorization", "proxy-connection", "connection"):
                continue
            kept.append(line)
        kept.append("Connection: close")
        upstream.sendall(("\r\n".join(kept) + "\r\n\r\n").encode("latin-1") + rest)
        length = int(fields.get("content-length", "0") or 0) - len(rest)
        while length > 0:
            chunk = conn.recv(min(length, 65536))
            if not chunk:
                break
            upstream.sendall(chunk)
            length -= len(chunk)
        pipe(upstream, conn)
    except OSError:
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass


def main():
    global expected
    if len(sys.argv) > 1:
        expected = sys.argv[1]
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    print(server.getsockname()[1], flush=True)

    def accept():
        while True:
            conn, _ = server.accept()
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    sys.stdin.read()
    os._exit(0)


if __name__ == "__main__":
    main()
