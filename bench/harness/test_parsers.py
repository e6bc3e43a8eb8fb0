"""Unit tests of the harness's output parsers and summary maths (no servers, no network).

Run from bench/: python3 -m unittest harness.test_parsers
"""

import unittest

from . import clients, report, syscalls

WRK = """Running 5s test @ http://127.0.0.1:40000/plaintext
  1 threads and 256 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.55ms    1.04ms   7.19ms   89.59%
    Req/Sec    98.85k     3.86k  105.77k    73.33%
  297483 requests in 3.05s, 26.10MB read
  Socket errors: connect 0, read 12, write 0, timeout 3
  Non-2xx or 3xx responses: 7
Requests/sec:  97684.24
Transfer/sec:      8.57MB
"""

HTTPERF = """Total: connections 1000 requests 100000 replies 100000 test-duration 33.922 s
Request rate: 2947.9 req/s (0.3 ms/req)
Reply status: 1xx=0 2xx=99990 3xx=0 4xx=10 5xx=0
Errors: total 0 client-timo 0 socket-timo 0 connrefused 0 connreset 0
"""

FIBRA = """fibra bench: GET 127.0.0.1:56817/plaintext, 400 connections, 1 workers, keep-alive, batch
finished in 2.013 sec, 27023 req/s, 2428 kbyte/s
requests: 54400 total, 54400 started, 54400 done, 54398 succeeded, 2 failed, 0 errored
"""

STRACE = """% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 68.80    0.271626          13     20255           write
 27.17    0.107274           5     20315        49 read
  2.85    0.011236          79       142           epoll_wait
------ ----------- ----------- --------- --------- ----------------
100.00    0.394819           9     40712        49 total
"""


class ParserTests(unittest.TestCase):
    def test_wrk(self):
        requests, rps, notes = clients.parse_wrk(WRK)
        self.assertEqual(requests, 297483)
        self.assertAlmostEqual(rps, 97684.24)
        self.assertIn("read 12", notes)
        self.assertIn("timeout 3", notes)
        self.assertIn("non-2xx: 7", notes)

    def test_wrk_garbage(self):
        with self.assertRaises(RuntimeError):
            clients.parse_wrk("unable to connect to 127.0.0.1:1 Connection refused")

    def test_httperf_counts_only_2xx(self):
        ok, rps, notes = clients.parse_httperf(HTTPERF)
        self.assertEqual(ok, 99990)
        self.assertAlmostEqual(rps, 99990 / 33.922)
        self.assertEqual(notes, "non-2xx: 10")

    def test_fibra_bench(self):
        ok, rps, notes = clients.parse_fibra_bench(FIBRA)
        self.assertEqual(ok, 54398)
        self.assertEqual(rps, 27023.0)
        self.assertEqual(notes, "failed: 2")

    def test_strace(self):
        calls, total = syscalls.parse_strace_summary(STRACE)
        self.assertEqual(calls["write"], 20255)
        self.assertEqual(calls["read"], 20315)
        self.assertEqual(total, 40712)


class SummaryTests(unittest.TestCase):
    def test_medians_and_ratios_to_pong(self):
        sc = clients.scenarios()[0]
        ms = []
        for rnd, (p_rps, p_cpu, f_rps, f_cpu) in enumerate([(100, 7.0, 95, 8.0),
                                                             (110, 7.2, 99, 7.5),
                                                             (90, 6.8, 80, 9.0)]):
            for name, rps, cpu in (("pong", p_rps, p_cpu), ("fibra-hello", f_rps, f_cpu)):
                ms.append({"scenario": sc.name, "server": name, "round": rnd, "rps": rps,
                           "cpu_us": cpu, "cpu_pct": 90.0, "client_pct": 100.0, "notes": "",
                           "error": None})
        ms.append({"scenario": sc.name, "server": "fibra-hello", "round": 4, "rps": None,
                   "cpu_us": None, "cpu_pct": None, "client_pct": None, "notes": "",
                   "error": "start failed"})
        (got_sc, rows), = report.summarize(ms, [sc], ["pong", "fibra-hello"])
        self.assertIs(got_sc, sc)
        pong, fibra = rows
        self.assertEqual(pong["rps"], 100)
        self.assertEqual(fibra["rps"], 95)
        self.assertEqual(fibra["cpu_us"], 8.0)
        self.assertAlmostEqual(fibra["rps_ratio"], 0.95)
        self.assertAlmostEqual(fibra["cpu_ratio"], 8.0 / 7.0)
        self.assertEqual(fibra["rounds"], 3)
        self.assertIn("start failed", fibra["notes"])

    def test_paired_ratios_are_medians_of_per_pair_ratios(self):
        sc = clients.scenarios()[0]
        ms = []
        # The machine slows down over the run; each pair sees the same speed.
        for rnd, (p_cpu, f_cpu) in enumerate([(5.0, 6.0), (10.0, 11.0), (20.0, 24.0)]):
            ms.append({"scenario": sc.name, "server": "pong", "round": rnd, "rps": 100.0,
                       "cpu_us": p_cpu, "cpu_pct": 90.0, "client_pct": 100.0, "notes": "",
                       "error": None})
            ms.append({"scenario": sc.name, "server": "fibra-hello", "round": rnd,
                       "rps": 90.0, "cpu_us": f_cpu, "cpu_pct": 90.0, "client_pct": 100.0,
                       "notes": "", "error": None, "pair_rps_ratio": 0.9,
                       "pair_cpu_ratio": f_cpu / p_cpu})
        (_, rows), = report.summarize(ms, [sc], ["pong", "fibra-hello"])
        pong, fibra = rows
        self.assertAlmostEqual(pong["cpu_ratio"], 1.0)
        # medians of 1.2, 1.1, 1.2 (not 11.0 / 10.0 from the medians of each server)
        self.assertAlmostEqual(fibra["cpu_ratio"], 1.2)
        self.assertAlmostEqual(fibra["rps_ratio"], 0.9)

    def test_h2load_counts_2xx_and_scales_the_rate(self):
        out = ("finished in 2.53s, 1000.00 req/s, 8.66MB/s\n"
               "requests: 2000 total, 2000 started, 2000 done, 1500 succeeded, 500 failed, "
               "0 errored, 0 timeout\n"
               "status codes: 1500 2xx, 0 3xx, 500 4xx, 0 5xx\n")
        ok, rps, notes = clients.parse_h2load(out)
        self.assertEqual(ok, 1500)
        self.assertAlmostEqual(rps, 750.0)
        self.assertIn("non-2xx: 500", notes)
        self.assertIn("failed 500", notes)

    def test_s_time_takes_the_last_summary(self):
        out = ("Collecting connection statistics for 5 seconds\n"
               "5500 connections in 3.09s; 1779.94 connections/user sec, bytes read 737000\n"
               "5500 connections in 7 real seconds, 134 bytes read per connection\n")
        n, rate, per = clients.parse_s_time(out)
        self.assertEqual((n, per), (5500, 134))
        self.assertAlmostEqual(rate, 5500 / 7)


if __name__ == "__main__":
    unittest.main()
