# Summary of bench/manycore.sh's runs.tsv as a markdown table: per workers, scenario and
# server, the median over rounds of req/s, server CPU µs per request (and its user-space
# part) and server cores busy, each with its range (min–max), and req/s and CPU per request as ratios to pong's in the
# same round (median and range of the per-round ratios). Failed runs are left out of the
# figures and listed under the table.
# Usage: awk -F '\t' -v scenarios=A,B -v servers=X,Y,pong -f summary.awk runs.tsv
# (mawk and POSIX awk: no asort, no gensub.)

# Sorts a[1..n] numerically in place (n is small: one value per round).
function isort(a, n,    i, j, v) {
    for (i = 2; i <= n; i++) {
        v = a[i]
        for (j = i - 1; j >= 1 && a[j] > v; j--)
            a[j + 1] = a[j]
        a[j + 1] = v
    }
}

# The median of the space-separated numbers in s.
function median(s,    a, n) {
    n = split(s, a, " ")
    isort(a, n)
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}

function lo(s,    a, n, i, m) {
    n = split(s, a, " ")
    m = a[1]
    for (i = 2; i <= n; i++) if (a[i] < m) m = a[i]
    return m
}

function hi(s,    a, n, i, m) {
    n = split(s, a, " ")
    m = a[1]
    for (i = 2; i <= n; i++) if (a[i] > m) m = a[i]
    return m
}

# 1234567.8 -> "1,234,568"
function thousands(x,    s, out) {
    s = sprintf("%.0f", x)
    out = ""
    while (length(s) > 3) {
        out = "," substr(s, length(s) - 2) out
        s = substr(s, 1, length(s) - 3)
    }
    return s out
}

# "median (min–max)" of the numbers in s, each through the printf format f ("," for
# thousands); just the median when there is one value.
function cell(s, f,    m, a, b, n, parts) {
    if (s == "") return "–"
    n = split(s, parts, " ")
    m = median(s); a = lo(s); b = hi(s)
    if (f == ",") {
        m = thousands(m); a = thousands(a); b = thousands(b)
    } else {
        m = sprintf(f, m); a = sprintf(f, a); b = sprintf(f, b)
    }
    return n > 1 ? m " (" a "–" b ")" : m
}

NR == 1 {
    for (i = 1; i <= NF; i++) col[$i] = i
    next
}

{
    w = $col["workers"]; sc = $col["scenario"]; sv = $col["server"]; r = $col["round"]
    if (!(w in seen_w)) { seen_w[w] = 1; nw++; ws[nw] = w }
    total[w, sc, sv]++
    if ($col["status"] != "ok") {
        failed = failed sprintf("\n- W=%s %s %s round %s: %s", w, sc, sv, r, $col["note"])
        next
    }
    rps[w, sc, sv] = rps[w, sc, sv] " " $col["req_per_s"]
    cpu[w, sc, sv] = cpu[w, sc, sv] " " $col["cpu_us_per_req"]
    user[w, sc, sv] = user[w, sc, sv] " " $col["user_us_per_req"]
    busy[w, sc, sv] = busy[w, sc, sv] " " $col["server_cores_busy"]
    round_rps[r, w, sc, sv] = $col["req_per_s"]
    round_cpu[r, w, sc, sv] = $col["cpu_us_per_req"]
    if (!(r in seen_r)) { seen_r[r] = 1; nr++; rs[nr] = r }
}

END {
    nsc = split(scenarios, scs, ",")
    nsv = split(servers, svs, ",")
    isort(ws, nw)
    print "| W | scenario | server | req/s | req/s ÷ pong | CPU µs/req | CPU ÷ pong | user µs/req | server cores busy |"
    print "|---|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= nw; i++) {
        w = ws[i]
        for (j = 1; j <= nsc; j++) {
            sc = scs[j]
            for (k = 1; k <= nsv; k++) {
                sv = svs[k]
                if (!((w, sc, sv) in total)) continue
                rr = ""; rc = ""
                for (q = 1; q <= nr; q++) {
                    r = rs[q]
                    if (((r, w, sc, sv) in round_rps) && ((r, w, sc, "pong") in round_rps) &&
                        round_rps[r, w, sc, "pong"] > 0 && round_cpu[r, w, sc, "pong"] > 0) {
                        rr = rr " " round_rps[r, w, sc, sv] / round_rps[r, w, sc, "pong"]
                        rc = rc " " round_cpu[r, w, sc, sv] / round_cpu[r, w, sc, "pong"]
                    }
                }
                printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", w, sc, sv,
                    cell(rps[w, sc, sv], ","), cell(rr, "%.2f"),
                    cell(cpu[w, sc, sv], "%.3f"), cell(rc, "%.2f"),
                    cell(user[w, sc, sv], "%.3f"), cell(busy[w, sc, sv], "%.2f")
            }
        }
    }
    if (failed != "") printf "\nFailed runs (left out above):%s\n", failed
}
