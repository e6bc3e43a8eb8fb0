-- wrk script for bench/web.sh: GET /users/{id} with a query (Path<u32> + Query extractors).
--   wrk -s bench/lua/web_users.lua http://127.0.0.1:PORT/
wrk.method = "GET"
wrk.path = "/users/42?fields=a,b"
