-- wrk script: POST a 64-byte body (for /echo).
wrk.method = "POST"
wrk.body = string.rep("x", 64)
wrk.headers["Content-Type"] = "application/octet-stream"
