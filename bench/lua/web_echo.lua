-- wrk script for bench/web.sh: POST /echo with a 1 KiB JSON body (compact, keys sorted, so a
-- serde_json::Value echo answers the same bytes).
--   wrk -s bench/lua/web_echo.lua http://127.0.0.1:PORT/ [-- BODY_FILE]
-- BODY_FILE defaults to bench/lua/web_echo.json (relative to the working directory).
wrk.method = "POST"
wrk.path = "/echo"
wrk.headers["Content-Type"] = "application/json"

function init(args)
    local f = assert(io.open(args[1] or "bench/lua/web_echo.json", "rb"))
    wrk.body = f:read("*a")
    f:close()
end
