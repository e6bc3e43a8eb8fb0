"""Python `websockets` against a WebSocket echo endpoint: a text message, a 1 MiB binary
message, a ping answered by a pong, a subprotocol offer the server need not take, then a clean
close with 1000. Prints one line per check; exits non-zero at the first that fails.

    python3 bench/ws/python_echo.py ws://127.0.0.1:8080/ws
"""
import asyncio
import sys

from websockets.asyncio.client import connect


async def main(url: str) -> None:
    async with connect(url, max_size=2 << 20) as ws:
        await ws.send("héllo from websockets")
        got = await ws.recv()
        assert got == "héllo from websockets", got
        print("text: echoed")
        big = bytes(i % 251 for i in range(1 << 20))
        await ws.send(big)
        got = await ws.recv()
        assert got == big, f"binary: {len(got)} bytes came back"
        print("binary: 1 MiB echoed")
        latency = await asyncio.wait_for(await ws.ping(b"p"), 10)
        print(f"ping: pong in {latency * 1e3:.2f} ms")
        await ws.close(1000)
        assert ws.close_code == 1000, ws.close_code
        print(f"close: {ws.close_code} (server sent {ws.protocol.close_rcvd.code})")
        assert ws.protocol.close_rcvd.code == 1000


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
