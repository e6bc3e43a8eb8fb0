-- wrk script: every request GETs a path drawn at random from a list (one URL path a line).
--   wrk -s bench/lua/paths.lua URL -- LIST [SEED]
--   WRK_PATHS=LIST wrk -s bench/lua/paths.lua URL    (for scripts that put the URL last)
-- The requests are formatted once; the draw is seeded (SEED, default 1) so runs repeat.
local requests = {}

function init(args)
    for line in io.lines(args[1] or os.getenv("WRK_PATHS")) do
        if line ~= "" then
            requests[#requests + 1] = wrk.format("GET", line)
        end
    end
    math.randomseed(tonumber(args[2] or "1"))
end

function request()
    return requests[math.random(#requests)]
end
