"""An HTTP/3 client on aioquic: sends each request given, checks each answer, prints a line
per request. Exit status 1 if any answer is not the expected one.

    python3 client.py HOST PORT SPEC...

SPEC is METHOD:PATH:STATUS[:BODY], e.g. GET:/plaintext:200:Hello, World!  A POST sends
BODY and expects it back (the /echo route). The server's certificate is not verified (the
scripts use a self-signed one); ALPN is h3; datagrams are capped at 1,452 bytes.
"""

import asyncio
import ssl
import sys

from aioquic.asyncio import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.http = H3Connection(self._quic)
        self.waiting = {}

    def quic_event_received(self, event):
        for e in self.http.handle_event(event):
            if isinstance(e, (HeadersReceived, DataReceived)):
                answer = self.waiting[e.stream_id]
                if isinstance(e, HeadersReceived):
                    answer["headers"] = dict(e.headers)
                else:
                    answer["body"] += e.data
                if e.stream_ended:
                    answer["done"].set_result(True)

    async def request(self, host, port, method, path, body):
        stream = self._quic.get_next_available_stream_id()
        headers = [
            (b":method", method.encode()),
            (b":scheme", b"https"),
            (b":authority", f"{host}:{port}".encode()),
            (b":path", path.encode()),
            (b"user-agent", b"aioquic"),
        ]
        if body:
            headers.append((b"content-length", str(len(body)).encode()))
        self.http.send_headers(stream, headers, end_stream=not body)
        if body:
            self.http.send_data(stream, body, end_stream=True)
        done = asyncio.get_running_loop().create_future()
        self.waiting[stream] = {"headers": {}, "body": b"", "done": done}
        self.transmit()
        await asyncio.wait_for(done, 30)
        return self.waiting.pop(stream)


async def main(host, port, specs):
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
    config.verify_mode = ssl.CERT_NONE
    config.max_datagram_size = 1452
    failed = 0
    async with connect(host, port, configuration=config, create_protocol=Client) as client:
        for spec in specs:
            method, path, status, *rest = spec.split(":", 3)
            body = rest[0].encode() if rest else b""
            sent = body if method == "POST" else b""
            answer = await client.request(host, port, method, path, sent)
            got = answer["headers"].get(b":status", b"?").decode()
            ok = got == status and (not body or answer["body"] == body)
            failed += not ok
            alt = answer["headers"].get(b"alt-svc", b"").decode()
            print(f"{'ok' if ok else 'FAILED'}  {method} {path} -> {got}, "
                  f"{len(answer['body'])} bytes{', alt-svc ' + alt if alt else ''}")
    return failed


if __name__ == "__main__":
    host, port, *specs = sys.argv[1:]
    sys.exit(1 if asyncio.run(main(host, int(port), specs)) else 0)
