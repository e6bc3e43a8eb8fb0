-- wrk script for bench/manycore.sh: every response must be a 200 whose body is exactly BODY.
-- The first that is not stops wrk at once (exit status 3) with a line on stderr saying what
-- came. DEPTH requests go out in each write (1: plain keep-alive; 16: the pipelining of
-- bench/lua/pipeline.lua). At the end one line on stdout gives wrk's count of responses, the
-- count this script checked (summed over the threads: they must be equal) and wrk's errors.
-- Usage: wrk -t8 -c256 -d3s -s check.lua http://127.0.0.1:PORT/plaintext -- DEPTH BODY
local want = "Hello, World!"
local req
local threads = {}

-- Responses checked by this thread; read by done() through thread:get.
checked = 0

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  local depth = tonumber(args[1]) or 1
  want = args[2] or want
  local parts = {}
  for i = 1, depth do
    parts[i] = wrk.format(nil, wrk.path)
  end
  req = table.concat(parts)
end

function request()
  return req
end

function response(status, headers, body)
  if status ~= 200 or body ~= want then
    io.stderr:write(string.format("check.lua: status %d, %d body bytes (want 200, %d): %q\n",
      status, #(body or ""), #want, string.sub(body or "", 1, 80)))
    io.stderr:flush()
    os.exit(3)
  end
  checked = checked + 1
end

function done(summary, latency, requests)
  local n = 0
  for _, t in ipairs(threads) do
    n = n + t:get("checked")
  end
  local e = summary.errors
  io.write(string.format(
    "manycore-check responses=%d checked=%d duration_us=%d connect=%d read=%d write=%d status=%d timeout=%d\n",
    summary.requests, n, summary.duration, e.connect, e.read, e.write, e.status, e.timeout))
end
