# Opens a page in a running headless Chromium through its DevTools endpoint and prints the
# text of the element #r once the page has replaced "waiting" (bounded: 20 s). Needs the
# `websockets` package. Usage: cdp_page_result.py DEBUG_PORT PAGE_URL
import asyncio, json, sys, time, urllib.request, websockets
async def main(debug_port, page_url):
    for _ in range(100):
        try:
            targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{debug_port}/json/list"))
            pages = [t for t in targets if t.get("type") == "page"]
            if pages: break
        except OSError: pass
        await asyncio.sleep(0.1)
    async with websockets.connect(pages[0]["webSocketDebuggerUrl"], max_size=None) as cdp:
        n = 0
        async def call(method, **params):
            nonlocal n; n += 1; await cdp.send(json.dumps({"id": n, "method": method, "params": params}))
            while True:
                m = json.loads(await cdp.recv())
                if m.get("id") == n: return m
        await call("Page.navigate", url=page_url)
        for _ in range(100):
            r = await call("Runtime.evaluate", expression="document.getElementById('r') && document.getElementById('r').textContent")
            v = r.get("result", {}).get("result", {}).get("value")
            if v and v != "waiting":
                print(v); return v
            await asyncio.sleep(0.2)
        print("timed out"); sys.exit(1)
asyncio.run(main(sys.argv[1], sys.argv[2]))
