-- wrk script for the fibra benchmark harness: exit after a fixed number of responses.
-- Used by the strace mode, where a fixed request count (not a duration) is what matters.
-- wrk's own summary is never printed (its main thread only stops after -d), so the script
-- prints "count.lua: N responses" and exits the process. Use with -t1.
-- Usage: wrk -t1 -c256 -d600s -s count.lua http://127.0.0.1:PORT/plaintext -- 100000
local limit = 100000
local seen = 0

function init(args)
  limit = tonumber(args[1]) or limit
end

function response(status, headers, body)
  seen = seen + 1
  if seen >= limit then
    io.write(string.format("count.lua: %d responses\n", seen))
    io.stdout:flush()
    os.exit(0)
  end
end
