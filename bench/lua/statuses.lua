-- wrk script for the site acceptance scripts (bench/site_failover.sh, bench/site_reload.sh):
-- counts responses by status over all threads and, at the end, prints one line per status,
-- the non-2xx total, wrk's socket errors, for each non-2xx status the wall-clock times of
-- its first and last answer (Unix seconds with milliseconds, to set beside the script's own
-- event times), and the first 50 non-2xx responses, each with its time and the first bytes
-- of its body.
--
--   wrk -t1 -c50 -d20s -s bench/lua/statuses.lua URL [-- bodies]
--
-- With "bodies", 2xx responses are counted by body too (its first 40 bytes, at most 64
-- different ones), printed as "statuses: body N TEXT" (to see which configuration answered).
--
-- Output lines (grep-able): "statuses: 200 N", "statuses: non-2xx N",
-- "statuses: socket errors connect A read B write C timeout D",
-- "statuses: span STATUS N FIRST LAST", "statuses: bad T STATUS BODY".
-- Defining response() makes wrk parse every body: a little slower, fine for these checks.
local ffi = require "ffi"
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } statuses_timespec;
  int clock_gettime(int clock, statuses_timespec *ts);
]]
local ts = ffi.new("statuses_timespec")

local function now()
  ffi.C.clock_gettime(0, ts) -- CLOCK_REALTIME
  return tonumber(ts.tv_sec) + math.floor(tonumber(ts.tv_nsec) / 1e6) / 1000
end

local KEEP = 50
local threads = {}

-- Per thread (each has its own Lua state); read back in done() with thread:get().
counts = {}
bodies = {}
distinct = 0
by_body = false
first = {}
last = {}
bad = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  by_body = args[1] == "bodies"
end

function response(status, headers, body)
  counts[status] = (counts[status] or 0) + 1
  if by_body and status >= 200 and status <= 299 then
    local text = (body or ""):sub(1, 40):gsub("[\r\n]+", " ")
    if bodies[text] then
      bodies[text] = bodies[text] + 1
    elseif distinct < 64 then
      bodies[text] = 1
      distinct = distinct + 1
    end
  end
  if status < 200 or status > 299 then
    local t = now()
    first[status] = first[status] or t
    last[status] = t
    if #bad < KEEP then
      local text = (body or ""):sub(1, 80):gsub("[\r\n]+", " ")
      bad[#bad + 1] = string.format("%.3f %d %s", t, status, text)
    end
  end
end

function done(summary, latency, requests)
  local total, all, list, from, to, seen = {}, 0, {}, {}, {}, {}
  for _, t in ipairs(threads) do
    for text, n in pairs(t:get("bodies")) do
      seen[text] = (seen[text] or 0) + n
    end
    for status, n in pairs(t:get("counts")) do
      total[status] = (total[status] or 0) + n
    end
    for status, t1 in pairs(t:get("first")) do
      from[status] = math.min(from[status] or t1, t1)
    end
    for status, t2 in pairs(t:get("last")) do
      to[status] = math.max(to[status] or t2, t2)
    end
    for _, line in ipairs(t:get("bad")) do
      list[#list + 1] = line
    end
  end
  local statuses = {}
  for status in pairs(total) do statuses[#statuses + 1] = status end
  table.sort(statuses)
  local non2xx = 0
  for _, status in ipairs(statuses) do
    io.write(string.format("statuses: %d %d\n", status, total[status]))
    all = all + total[status]
    if status < 200 or status > 299 then non2xx = non2xx + total[status] end
  end
  local e = summary.errors
  io.write(string.format("statuses: responses %d\n", all))
  io.write(string.format("statuses: non-2xx %d\n", non2xx))
  io.write(string.format("statuses: socket errors connect %d read %d write %d timeout %d\n",
    e.connect, e.read, e.write, e.timeout))
  for _, status in ipairs(statuses) do
    if from[status] then
      io.write(string.format("statuses: span %d %d %.3f %.3f\n", status, total[status],
        from[status], to[status]))
    end
  end
  local texts = {}
  for text in pairs(seen) do texts[#texts + 1] = text end
  table.sort(texts)
  for _, text in ipairs(texts) do
    io.write(string.format("statuses: body %d %s\n", seen[text], text))
  end
  table.sort(list)
  for _, line in ipairs(list) do
    io.write("statuses: bad " .. line .. "\n")
  end
end
