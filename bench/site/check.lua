-- wrk script for bench/site_config.sh: every response must be a 200 whose body is exactly the
-- contents of BODY_FILE. The first that is not stops wrk at once (exit status 3) with a line
-- on stderr saying what came, so a run that prints wrk's summary had no other answer.
-- Usage: wrk -t1 -c64 -d5s -H 'Host: site25.test' -s bench/site/check.lua URL -- BODY_FILE
local want

function init(args)
  local f = assert(io.open(args[1], "rb"))
  want = f:read("*a")
  f:close()
end

function response(status, headers, body)
  if status ~= 200 or body ~= want then
    io.stderr:write(string.format("check.lua: status %d, %d body bytes (want 200, %d): %q\n",
      status, #(body or ""), #want, string.sub(body or "", 1, 80)))
    io.stderr:flush()
    os.exit(3)
  end
end
