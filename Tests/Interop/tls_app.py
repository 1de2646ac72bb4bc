"""The HTTPS interop server's app (ASGI, served by hypercorn over TLS with HTTP/2 offered by ALPN).

.ci/run starts it with a certificate signed by a throwaway CA (never added to the system's store: the
tests trust it through a trust policy) and exports HTTPS_URL and HTTPS_CA_FILE. Routes:
  /version         {"http_version": "1.1" or "2", "path": ..., "client_port": the client's port}
                   (requests on one connection share the client's port)
  /gzip, /deflate, /brotli   the same JSON, compressed with that content coding
"""
import gzip
import json
import zlib

try:
    import brotli
except ImportError:  # /brotli then answers 501
    brotli = None


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    path = scope["path"]
    client = scope.get("client") or (None, None)
    payload = json.dumps({"http_version": scope["http_version"], "path": path, "ok": True, "client_port": client[1]}).encode()
    headers = [(b"content-type", b"application/json")]
    status = 200
    if path == "/gzip":
        payload = gzip.compress(payload)
        headers.append((b"content-encoding", b"gzip"))
    elif path == "/deflate":
        payload = zlib.compress(payload)
        headers.append((b"content-encoding", b"deflate"))
    elif path == "/brotli":
        if brotli is None:
            status, payload = 501, b'{"error": "no brotli module"}'
        else:
            payload = brotli.compress(payload)
            headers.append((b"content-encoding", b"br"))
    elif path != "/version":
        status, payload = 404, b'{"error": "not found"}'
    headers.append((b"content-length", str(len(payload)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
