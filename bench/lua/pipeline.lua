-- wrk script for the fibra benchmark harness: HTTP/1.1 pipelining.
-- Each write sends DEPTH requests for the URL's path at once (default 16); wrk counts every
-- response, so its "Requests/sec" is responses per second.
-- Usage: wrk -t1 -c256 -d10s -s pipeline.lua http://127.0.0.1:PORT/plaintext -- 16
local req

function init(args)
  local depth = tonumber(args[1]) or 16
  local parts = {}
  for i = 1, depth do
    parts[i] = wrk.format(nil, wrk.path)
  end
  req = table.concat(parts)
end

function request()
  return req
end
