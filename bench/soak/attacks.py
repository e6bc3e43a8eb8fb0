"""The soak's fault clients (see clients.py): a slowloris burst, clients that reset
mid-request and mid-response, HTTP/2 rapid reset, and the server driven into EMFILE."""
import asyncio
import asyncio.sslproto
import collections
import os
import random
import subprocess
import time


from wire import (IO_TIMEOUT, CONNECT_GATE, SetupError, error_kind, connect, rst_close,
                  request, read_head, get_on, get_status, spread)

# ----------------------------------------------------------------------------- slowloris

async def cmd_slowloris(args):
    res = dict.fromkeys(("opened", "refused", "closed_by_server", "still_open_at_end"), 0)
    lasted, responses, errors = [], collections.Counter(), collections.Counter()
    deadline = time.monotonic() + args.seconds
    gate = asyncio.Semaphore(CONNECT_GATE)
    trickle = b"X-Slow-Loris: keep-waiting\r\n"

    async def one(i):
        try:
            async with gate:
                reader, writer = await connect(args, i)
        except Exception as e:  # noqa: BLE001
            res["refused"] += 1
            errors[error_kind(e)] += 1
            return
        res["opened"] += 1
        since = time.monotonic()
        try:
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n")
            for n in range(int(args.seconds) * 4 + 8):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    data = await asyncio.wait_for(reader.read(4096), min(1.0, left))
                except (asyncio.TimeoutError, TimeoutError):
                    writer.write(trickle[n % len(trickle):][:1])
                    continue
                if not data:
                    raise EOFError
                if data.startswith(b"HTTP/"):
                    responses[data.split(b" ", 2)[1].decode(errors="replace")] += 1
            res["still_open_at_end"] += 1
        except Exception as e:  # noqa: BLE001
            res["closed_by_server"] += 1
            lasted.append(time.monotonic() - since)
            if not isinstance(e, EOFError):
                errors[error_kind(e)] += 1
        finally:
            writer.transport.abort()

    await asyncio.gather(*(one(i) for i in range(args.count)))
    return {**res, "lasted_s": spread(lasted), "responses": dict(responses),
            "errors": dict(errors)}


# --------------------------------------------------------------------------------- reset

async def cmd_reset(args):
    res = {"done": 0, "connect_errors": 0}
    statuses, errors = collections.Counter(), collections.Counter()
    for n in range(args.count):
        try:
            reader, writer = await connect(args, n)
        except Exception as e:  # noqa: BLE001
            res["connect_errors"] += 1
            errors[error_kind(e)] += 1
            await asyncio.sleep(0.05)
            continue
        try:
            if args.mode == "request":
                await send_partial_post(writer, args.path, half_head=n % 2 == 1)
            else:
                statuses[await read_partial_get(reader, writer, args.path)] += 1
            res["done"] += 1
        except Exception as e:  # noqa: BLE001
            errors[error_kind(e)] += 1
        finally:
            rst_close(writer)
    return {**res, "statuses": dict(statuses), "errors": dict(errors)}


async def send_partial_post(writer, path, half_head):
    head = request("POST", path, length=1 << 20)
    writer.write(head[:len(head) // 2] if half_head else head + random.randbytes(32 << 10))
    await asyncio.wait_for(writer.drain(), IO_TIMEOUT)
    await asyncio.sleep(random.uniform(0, 0.02))  # let the server get into the request


async def read_partial_get(reader, writer, path):
    writer.write(request("GET", path))
    status, headers = await asyncio.wait_for(read_head(reader), IO_TIMEOUT)
    want = min(64 << 10, int(headers.get(b"content-length", 64 << 10)))
    await asyncio.wait_for(reader.readexactly(want), IO_TIMEOUT)
    return status


# ------------------------------------------------------------------------------- h2reset

async def cmd_h2reset(args):
    try:
        import h2.config
        import h2.connection
        import h2.errors
        import h2.events
        import h2.exceptions
    except ImportError as e:
        raise SetupError(f"h2 needed: {e}") from e
    conns = await asyncio.gather(*(rapid_reset(args, i, h2) for i in range(args.connections)))
    totals = {"streams_sent": sum(c["streams_sent"] for c in conns),
              "goaways": sum(c["goaway"] for c in conns),
              "closed": sum(c["closed"] for c in conns),
              "responses": sum(c["responses"] for c in conns)}
    return {"connections": conns, "totals": totals}


async def rapid_reset(args, i, h2):
    res = {"alpn": None, "streams_sent": 0, "goaway": False, "goaway_code": None,
           "last_stream_id": None, "closed": False, "responses": 0, "bytes_sent": 0,
           "bytes_received": 0}
    errors, started = collections.Counter(), time.monotonic()
    try:
        reader, writer = await connect(args, i, alpn=("h2",))
    except Exception as e:  # noqa: BLE001
        errors[error_kind(e)] += 1
        return {**res, "seconds": 0.0, "errors": dict(errors)}
    if args.tls:
        res["alpn"] = writer.get_extra_info("ssl_object").selected_alpn_protocol()
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()

    def flush():
        data = conn.data_to_send()
        res["bytes_sent"] += len(data)
        writer.write(data)

    async def receive():
        for _ in range(10_000_000):
            try:
                data = await reader.read(65536)
            except Exception as e:  # noqa: BLE001
                errors[error_kind(e)] += 1
                data = b""
            if not data:
                res["closed"] = True
                return
            res["bytes_received"] += len(data)
            if res["goaway"]:
                continue  # only waiting for the close now
            try:
                events = conn.receive_data(data)
            except h2.exceptions.H2Error as e:
                errors[error_kind(e)] += 1
                return
            for ev in events:
                if isinstance(ev, h2.events.ResponseReceived):
                    res["responses"] += 1
                elif isinstance(ev, h2.events.ConnectionTerminated):
                    res.update(goaway=True, last_stream_id=ev.last_stream_id,
                               goaway_code=getattr(ev.error_code, "name", ev.error_code))
            flush()

    receiver = asyncio.create_task(receive())
    headers = [(":method", "GET"), (":scheme", "https" if args.tls else "http"),
               (":authority", "localhost"), (":path", "/small.txt")]
    deadline = started + args.seconds
    try:
        flush()
        while (res["streams_sent"] < args.streams and not res["goaway"]
               and not receiver.done() and time.monotonic() < deadline):
            for _ in range(min(100, args.streams - res["streams_sent"])):
                sid = conn.get_next_available_stream_id()
                conn.send_headers(sid, headers, end_stream=True)
                conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
                res["streams_sent"] += 1
            flush()
            await asyncio.wait_for(writer.drain(), IO_TIMEOUT)
        await asyncio.wait({receiver}, timeout=2.0)  # the server's answer: GOAWAY, close
    except Exception as e:  # noqa: BLE001
        errors[error_kind(e)] += 1
    finally:
        receiver.cancel()
        writer.transport.abort()
    return {**res, "seconds": round(time.monotonic() - started, 3), "errors": dict(errors)}


# -------------------------------------------------------------------------------- emfile

def count_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def nofile_limits(pid):
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
                return soft, hard
    raise SetupError(f"no 'Max open files' in /proc/{pid}/limits")


def set_nofile(pid, soft, hard):
    done = subprocess.run(["prlimit", f"--pid={pid}", f"--nofile={soft}:{hard}"],
                          capture_output=True, text=True, timeout=5, check=False)
    if done.returncode != 0:
        raise SetupError(f"prlimit: {done.stderr.strip()}")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def try_status(coro):
    """Status of a request, or the kind of its failure, with a 3 s bound."""
    try:
        return await asyncio.wait_for(coro, 3.0)
    except Exception as e:  # noqa: BLE001
        return error_kind(e)


async def cmd_emfile(args):
    try:
        fds_before, (soft, hard) = count_fds(args.pid), nofile_limits(args.pid)
    except OSError as e:
        raise SetupError(f"/proc/{args.pid}: {e}") from e
    limit = fds_before + 20 if hard == "unlimited" else min(fds_before + 20, int(hard))
    res = {"fds_before": fds_before, "soft_limit_before": soft, "soft_limit_set": limit,
           "hard_limit": hard, "held": 0, "restored_limit": None, "recovery_ms": None}
    errors = collections.Counter()
    keep = None
    try:
        keep = await connect(args)
    except Exception as e:  # noqa: BLE001
        errors["keepalive:" + error_kind(e)] += 1
    held = []
    set_nofile(args.pid, limit, hard)
    _restore_on_exit.append((args.pid, soft, hard))
    try:
        held = await open_plain(args, args.hold, errors)
        res["held"] = len(held)
        res.update(await observe_hold(args, keep))
    finally:
        for _, writer in held + ([keep] if keep else []):
            writer.transport.abort()
        restore_limits()
    res["restored_limit"] = nofile_limits(args.pid)[0]
    restored_at = time.monotonic()
    for _ in range(500):
        if time.monotonic() - restored_at > 10.0:
            break
        if await try_status(get_status(args, "/small.txt")) == 200:
            res["recovery_ms"] = round((time.monotonic() - restored_at) * 1000, 1)
            break
        await asyncio.sleep(0.02)
    return {**res, "errors": dict(errors)}


async def open_plain(args, count, errors):
    """count plain TCP connections (no TLS handshake: the kernel completes them)."""
    async def one(i):
        try:
            return await connect(args, i, tls=False)
        except Exception as e:  # noqa: BLE001
            errors["hold:" + error_kind(e)] += 1
            return None
    return [c for c in await asyncio.gather(*(one(i) for i in range(count))) if c]


async def observe_hold(args, keep):
    """Holds args.seconds: the server's fd peak and CPU, and how it serves meanwhile."""
    cpu0, fds_max, ends = cpu_seconds(args.pid), 0, time.monotonic() + args.seconds
    seen = {"existing_conn_during_hold": None if keep else "not_opened",
            "new_conn_during_hold": None}
    for n in range(int(args.seconds * 4) + 4):
        fds_max = max(fds_max, count_fds(args.pid))
        if n == 2:
            if keep:
                seen["existing_conn_during_hold"] = await try_status(get_on(*keep, "/small.txt"))
            seen["new_conn_during_hold"] = await try_status(get_status(args, "/small.txt"))
        if time.monotonic() >= ends:
            break
        await asyncio.sleep(min(0.25, ends - time.monotonic()))
    seen.update(fds_max_during_hold=fds_max,
                server_cpu_s_during_hold=round(cpu_seconds(args.pid) - cpu0, 3))
    return seen


_restore_on_exit = []  # (pid, soft, hard) while a lowered limit awaits its restore


def restore_limits():
    while _restore_on_exit:
        set_nofile(*_restore_on_exit.pop())
