"""The soak's steady side loads (see clients.py): idle keep-alive connections, WebSocket echo
through the proxy, and uploads echoed through it."""
import asyncio
import asyncio.sslproto
import collections
import json
import random
import time


from wire import (CONNECT_TIMEOUT, IO_TIMEOUT, ECHO_TIMEOUT, CONNECT_GATE, SetupError,
                  error_kind, client_tls, connect, request, read_response, spread)

# ---------------------------------------------------------------------------------- idle

async def cmd_idle(args):
    res = dict.fromkeys(("opened", "responses_ok", "reopened", "closed_by_server",
                         "still_open_at_end", "failed_connects"), 0)
    statuses, errors, idle_closed = collections.Counter(), collections.Counter(), []
    deadline = time.monotonic() + args.seconds
    gate = asyncio.Semaphore(CONNECT_GATE)

    async def one(i):
        ever_opened = False
        for _ in range(10_000):
            if time.monotonic() >= deadline:
                return
            try:
                async with gate:
                    reader, writer = await connect(args, i)
            except Exception as e:  # noqa: BLE001 - a failure is data
                res["failed_connects"] += 1
                errors[error_kind(e)] += 1
                await asyncio.sleep(1.0)
                continue
            res["reopened" if ever_opened else "opened"] += 1
            ever_opened = True
            try:
                writer.write(request("GET", "/small.txt"))
                status, _, _ = await asyncio.wait_for(read_response(reader), IO_TIMEOUT)
                statuses[status] += 1
                res["responses_ok"] += status == 200
                since = time.monotonic()
                if not await held_until_closed(reader, deadline, errors):
                    res["still_open_at_end"] += 1
                    return
                res["closed_by_server"] += 1
                idle_closed.append(time.monotonic() - since)
            except Exception as e:  # noqa: BLE001
                errors[error_kind(e)] += 1
            finally:
                writer.transport.abort()
            await asyncio.sleep(0.05)

    await asyncio.gather(*(one(i) for i in range(args.count)))
    return {**res, "idle_closed_after_s": spread(idle_closed), "statuses": dict(statuses),
            "errors": dict(errors)}


async def held_until_closed(reader, deadline, errors):
    """Waits idle: True once the server closes the connection, False at the deadline."""
    for _ in range(1000):
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            data = await asyncio.wait_for(reader.read(4096), left)
        except (asyncio.TimeoutError, TimeoutError):
            return False
        except Exception as e:  # noqa: BLE001
            errors[error_kind(e)] += 1
            return True
        if not data:
            return True
        errors["unexpected_data"] += 1
    return True


# ------------------------------------------------------------------------------------ ws

class Window:
    """WebSocket echo counts and a latency histogram (0.1 ms buckets) over some span."""
    FIELDS = ("sent", "echoed", "mismatched", "lost", "failed", "reconnects")

    def __init__(self):
        self.counts = dict.fromkeys(self.FIELDS, 0)
        self.hist = collections.Counter()

    def percentile(self, q):
        total, seen = sum(self.hist.values()), 0
        for bucket in sorted(self.hist):
            seen += self.hist[bucket]
            if seen >= q * total:
                return bucket / 10
        return None

    def summary(self):
        return {**self.counts, "p50_ms": self.percentile(0.5), "p99_ms": self.percentile(0.99),
                "max_ms": max(self.hist) / 10 if self.hist else None}


class WsLoad:
    def __init__(self, args, ws_connect):
        host, port = args.addr
        self.uri = f"{'wss' if args.tls else 'ws'}://{host}:{port}{args.path}"
        self.ssl = client_tls(("http/1.1",)) if args.tls else None
        self.ws_connect = ws_connect
        self.connections = args.connections
        self.interval = args.connections / args.rate
        self.deadline = time.monotonic() + args.seconds
        self.total, self.second = Window(), Window()
        self.errors = collections.Counter()

    def count(self, field, n=1):
        self.total.counts[field] += n
        self.second.counts[field] += n

    def latency(self, seconds):
        bucket = round(seconds * 10_000)
        self.total.hist[bucket] += 1
        self.second.hist[bucket] += 1

    async def report(self):
        while time.monotonic() < self.deadline:
            await asyncio.sleep(min(1.0, max(0.0, self.deadline - time.monotonic())))
            print(json.dumps({"t": round(time.time(), 3), **self.second.summary()}), flush=True)
            self.second = Window()

    async def connection(self, i):
        clock = {"next": time.monotonic() + self.interval * i / self.connections}
        for attempt in range(100_000):
            if time.monotonic() >= self.deadline:
                return
            if attempt:
                self.count("reconnects")
                await asyncio.sleep(0.1)
            pending = collections.deque()
            try:
                async with self.ws_connect(self.uri, ssl=self.ssl, compression=None,
                                           open_timeout=CONNECT_TIMEOUT, ping_interval=None,
                                           close_timeout=1) as ws:
                    async with asyncio.TaskGroup() as tasks:
                        tasks.create_task(self.send(ws, pending, clock))
                        tasks.create_task(self.receive(ws, pending))
                return
            except Exception as e:  # noqa: BLE001
                for exc in getattr(e, "exceptions", [e]):
                    self.errors[error_kind(exc)] += 1
                self.count("failed")
                self.count("lost", len(pending))

    async def send(self, ws, pending, clock):
        for _ in range(10_000_000):
            now = time.monotonic()
            if now >= self.deadline:
                return
            if clock["next"] > now:
                await asyncio.sleep(min(clock["next"], self.deadline) - now)
                continue
            clock["next"] = max(clock["next"] + self.interval, now - 1.0)  # no catch-up > 1 s
            payload = random.randbytes(64)
            pending.append((payload, time.monotonic()))
            self.count("sent")
            await ws.send(payload)

    async def receive(self, ws, pending):
        for _ in range(10_000_000):
            if not pending and time.monotonic() >= self.deadline:
                return
            try:
                message = await asyncio.wait_for(ws.recv(), 0.5)
            except (asyncio.TimeoutError, TimeoutError):
                if pending and time.monotonic() - pending[0][1] > ECHO_TIMEOUT:
                    raise TimeoutError("echo missing") from None
                continue
            payload, sent_at = pending.popleft() if pending else (None, 0)
            if message != payload:  # later echoes would all be off by one: reconnect
                self.count("mismatched")
                raise ValueError("echo mismatch")
            self.count("echoed")
            self.latency(time.monotonic() - sent_at)


async def cmd_ws(args):
    try:
        from websockets.asyncio.client import connect as ws_connect
    except ImportError as e:
        raise SetupError(f"websockets >= 13 needed: {e}") from e
    if args.rate <= 0 or args.connections <= 0:
        raise SetupError("--rate and --connections must be positive")
    load = WsLoad(args, ws_connect)
    reporter = asyncio.create_task(load.report())
    await asyncio.gather(*(load.connection(i) for i in range(args.connections)))
    await reporter
    return {**load.total.summary(), "final": True, "errors": dict(load.errors)}


# -------------------------------------------------------------------------------- upload

async def cmd_upload(args):
    res = {"ok": 0, "mismatched": 0, "reconnects": 0}
    statuses, errors = collections.Counter(), collections.Counter()
    conn = None
    for n in range(args.count):
        try:
            if conn is None:
                res["reconnects"] += n > 0
                conn = await connect(args, n)
            reader, writer = conn
            body = random.randbytes(args.bytes)
            writer.write(request("POST", args.path, body))
            status, headers, echoed = await asyncio.wait_for(read_response(reader), IO_TIMEOUT)
            statuses[status] += 1
            res["ok"] += status == 200 and echoed == body
            res["mismatched"] += status == 200 and echoed != body
            if headers.get(b"connection") == b"close":
                writer.transport.abort()
                conn = None
        except Exception as e:  # noqa: BLE001
            errors[error_kind(e)] += 1
            if conn:
                conn[1].transport.abort()
            conn = None
    if conn:
        conn[1].transport.abort()
    return {**res, "statuses": dict(statuses), "errors": dict(errors)}
