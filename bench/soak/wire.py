"""What the soak clients share: connecting (TLS without verification, source addresses
spread over 127.0.0.1-8), a minimal HTTP/1.1 request writer and response reader, and how a
failure is named in the JSON summaries (see clients.py)."""
import asyncio
import asyncio.sslproto
import errno
import functools
import socket
import ssl
import statistics
import struct


CONNECT_TIMEOUT = 5.0
IO_TIMEOUT = 10.0
ECHO_TIMEOUT = 5.0
CONNECT_GATE = 100  # connects (and TLS handshakes) in flight at once
# asyncio zero-fills a 256 KiB read buffer per TLS connection: 1000 held connections would
# take 256 MiB; 32 KiB still holds two TLS records.
asyncio.sslproto.SSLProtocol.max_size = 32 * 1024


class SetupError(Exception):
    """The client itself cannot run (missing package, no permission, unreadable /proc)."""


def error_kind(exc):
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "timeout"
    if isinstance(exc, asyncio.IncompleteReadError):
        return "eof"
    if isinstance(exc, ssl.SSLError):
        return "ssl:" + (exc.reason or type(exc).__name__)
    if isinstance(exc, OSError) and exc.errno:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    detail = getattr(getattr(exc, "response", None), "status_code", None)  # websockets
    if detail is None and getattr(exc, "rcvd", None) is not None:
        detail = exc.rcvd.code  # websockets: the close code the server sent
    return type(exc).__name__ + ("" if detail is None else f":{detail}")


@functools.lru_cache(maxsize=None)
def client_tls(alpn):
    """A client TLS context offering alpn (a tuple) that verifies nothing."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(list(alpn))
    return ctx


async def connect(args, i=0, tls=None, alpn=("http/1.1",)):
    """(reader, writer) to args.addr, TLS if args.tls (or tls), from 127.0.0.(1 + i % 8)."""
    host, port = args.addr
    tls = args.tls if tls is None else tls
    local = (f"127.0.0.{1 + i % 8}", 0) if host.startswith("127.") else None
    return await asyncio.wait_for(asyncio.open_connection(
        host, port, local_addr=local, ssl=client_tls(alpn) if tls else None,
        server_hostname="localhost" if tls else None), CONNECT_TIMEOUT)


def rst_close(writer):
    """Closes with SO_LINGER {1,0}: the kernel sends a RST instead of a FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def request(method, path, body=b"", length=None):
    head = f"{method} {path} HTTP/1.1\r\nHost: localhost\r\n"
    if method == "POST":
        head += ("Content-Type: application/octet-stream\r\n"
                 f"Content-Length: {len(body) if length is None else length}\r\n")
    return head.encode() + b"\r\n" + body


async def read_head(reader):
    """(status, headers) of a response head; headers' names lowercased."""
    line = await reader.readline()
    if not line:
        raise asyncio.IncompleteReadError(b"", None)
    status, headers = int(line.split()[1]), {}
    for _ in range(200):
        h = await reader.readline()
        if h in (b"\r\n", b"\n"):
            return status, headers
        if not h:
            raise asyncio.IncompleteReadError(b"", None)
        name, _, value = h.partition(b":")
        headers[name.strip().lower()] = value.strip().lower()
    raise ValueError("response head over 200 lines")


async def read_response(reader):
    """(status, headers, body): Content-Length, chunked, or up to the close."""
    status, headers = await read_head(reader)
    if b"chunked" in headers.get(b"transfer-encoding", b""):
        return status, headers, await read_chunked(reader)
    if b"content-length" in headers:
        return status, headers, await reader.readexactly(int(headers[b"content-length"]))
    if status in (204, 304) or status < 200:
        return status, headers, b""
    return status, headers, await reader.read()


async def read_chunked(reader):
    body = bytearray()
    while size := int((await reader.readline()).split(b";")[0], 16):
        body += await reader.readexactly(size)
        await reader.readexactly(2)
    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
        pass  # trailers
    return bytes(body)


async def get_on(reader, writer, path):
    """Status of GET path on an open connection."""
    writer.write(request("GET", path))
    return (await asyncio.wait_for(read_response(reader), IO_TIMEOUT))[0]


async def get_status(args, path):
    """Status of GET path on a new connection, closed afterwards."""
    reader, writer = await connect(args)
    try:
        return await get_on(reader, writer, path)
    finally:
        writer.transport.abort()


def spread(values):
    if not values:
        return {"median": None, "max": None}
    return {"median": round(statistics.median(values), 3), "max": round(max(values), 3)}
