"""Unit tests of tern bench's pure parts: statistics, wrk's report, the HTTP
body size, the matrix, the result schema, the Markdown report (ratios only
between like stacks, instruction counts named by their workload), flags,
refusing to run a stack that cannot, results outside the source tree."""
import contextlib
import io
import os
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools"))

from bench import addr, cli, markdown, matrix, measure, schema, stacks, stats, wrk  # noqa: E402

WRK_OUT = """Running 2s test @ http://127.0.0.1:18080/
  1 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.66ms    2.29ms  17.87ms   83.71%
    Req/Sec    21.19k     3.65k   30.12k    75.00%
  Latency Distribution
     50%  187.00us
     75%    2.67ms
     90%    5.18ms
     99%    1.02s
  42689 requests in 2.03s, 7.33MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
Requests/sec:  21013.53
Transfer/sec:      3.61MB
"""


def summary(vals):
    return stats.summarize(vals)


def good_doc():
    def pt(stack, rps):
        p = matrix.point("rr", stacks.BY_NAME[stack], 1, "busy", size=64)
        runs = [{"rps": rps + i, "requests": 1000, "p50_us": 10.0, "p99_us": 20.0,
                 "p999_us": 30.0} for i in range(3)]
        p.update(status="ok", runs=runs, warmup=dict(runs[0]), command=["x"],
                 client="in-process",
                 summary={m: summary([r.get(m) for r in runs]) for m in measure.METRICS["rr"]})
        return p
    pend = matrix.point("bulk", stacks.BY_NAME["tern-afxdp"], 1, "busy", flows=1,
                        bulk_bytes=1 << 20)
    pend.update(status="unavailable", reason="not root", runs=[], summary={})
    return {
        "schema": schema.SCHEMA, "generated_at": "2026-01-01T00:00:00Z", "mode": "quick",
        "command_line": ["tools/tern", "bench", "--quick"],
        "git": {"commit": "abc", "dirty": False},
        "machine": {"cpu_model": "cpu", "ncpus": 2, "kernel": "6.1", "hostname": "h"},
        "doctor": {"profile": "reproducible", "findings": []},
        "conditions": {"repeat": 3, "warmup_runs": 1, "duration_s": 0.5, "bulk_bytes": 1 << 20},
        "stacks": {"tern-mem": {"available": True}, "kern-lo": {"available": True},
                   "smoltcp-mem": {"available": True},
                   "tern-afxdp": {"available": False, "reason": "not root"}},
        "points": [pt("tern-mem", 900.0), pt("kern-lo", 300.0), pt("smoltcp-mem", 450.0), pend],
        "callgrind": [{"stack": "tern-mem", "status": "ok", "instructions_per_request": 6000.0,
                       "workload": "rr", "conns": 16, "size": 64, "cores": 1,
                       "n_small": 1, "n_large": 2, "command": ["valgrind", "--tool=callgrind",
                                                               "--out", "/b/tern-echo"],
                       "top_functions": [{"function": "a.c:f", "pct": 10.0, "ir": 100}]}],
        "outputs": {},
    }


class Stats(unittest.TestCase):
    def test_summary(self):
        s = stats.summarize([5, 1, 3, None, 2, 4])
        self.assertEqual((s["n"], s["median"], s["min"], s["max"]), (5, 3, 1, 5))
        self.assertEqual((s["q1"], s["q3"]), (2, 4))
        self.assertAlmostEqual(s["spread_pct"], 400 / 3.0)
        self.assertIsNone(stats.summarize([None]))

    def test_ratio(self):
        self.assertEqual(stats.ratio(6, 3), 2)
        self.assertIsNone(stats.ratio(6, 0))
        self.assertIsNone(stats.ratio(None, 3))


class Wrk(unittest.TestCase):
    def test_parse(self):
        r = wrk.parse(WRK_OUT)
        self.assertEqual(r["requests"], 42689)
        self.assertAlmostEqual(r["duration_s"], 2.03)
        self.assertAlmostEqual(r["rps"], 21013.53)
        self.assertAlmostEqual(r["p50_us"], 187.0)
        self.assertAlmostEqual(r["p75_us"], 2670.0)
        self.assertAlmostEqual(r["p99_us"], 1.02e6)
        self.assertIsNone(r["p999_us"])
        self.assertEqual(r["errors"], 3)

    def test_parse_garbage(self):
        with self.assertRaises(ValueError):
            wrk.parse("unable to connect to 127.0.0.1:1 Connection refused")

    def test_body_gives_151_bytes(self):
        b = wrk.body_for()
        self.assertEqual(len(wrk.HEADER % b) + b, 151)

    def test_command(self):
        self.assertIn("-d1s", wrk.command("http://x/", 16, 0.3))
        self.assertIn("-c32", wrk.command("http://x/", 32, 2))


class Addr(unittest.TestCase):
    def test_endpoints_of_both_families(self):
        self.assertEqual(addr.hostport("198.18.0.2", 7007), "198.18.0.2:7007")
        self.assertEqual(addr.hostport("2001:db8::2", 7007),
                         "[2001:db8::2]:7007")
        self.assertEqual(addr.url("2001:db8::2", 8080),
                         "http://[2001:db8::2]:8080/")
        # wrk's Host header carries the brackets too.
        self.assertEqual(wrk.request_bytes("2001:db8::2", 80),
                         len("GET / HTTP/1.1\r\nHost: [2001:db8::2]:80\r\n\r\n"))


class Matrix(unittest.TestCase):
    def build(self, quick):
        return matrix.build(stacks.ALL, ["rr", "http", "bulk"], quick, [1, 2], [1, 64], [1, 4],
                            1 << 20)

    def test_quick_one_point_per_stack_and_workload(self):
        pts = self.build(True)
        self.assertEqual(len(pts), sum(len(s.workloads) for s in stacks.ALL))
        self.assertTrue(all(p["cores"] == 1 for p in pts))
        self.assertFalse(any(p.get("variant") for p in pts))
        self.assertFalse(any(p["stack"] == "lwip-mem" and p["workload"] == "http"
                             for p in pts))

    def test_full(self):
        pts = self.build(False)
        ids = {p["id"] for p in pts}
        self.assertEqual(len(ids), len(pts))
        self.assertIn("rr/tern-mem/c2/n32/s64/busy", ids)
        self.assertIn("rr/kern-lo/c1/n16/s1/busy", ids)
        self.assertIn("rr/kern-lo/c1/n16/s64/block", ids)
        self.assertIn("bulk/kern-veth/c1/n4/busy", ids)
        # tern's bulk shortcuts: extra points beside the application's path
        for v in stacks.BULK_VARIANTS:
            self.assertIn("bulk/tern-mem/c1/n1/busy/" + v, ids)
        self.assertFalse(any(p.get("variant") and p["stack"] != "tern-mem" for p in pts))
        # smoltcp is single-threaded: no 2-core points, no blocking mode.
        self.assertFalse(any(p["stack"] == "smoltcp-mem" and (p["cores"] > 1 or p["poll"] != "busy")
                             for p in pts))

    def test_int_list(self):
        self.assertEqual(matrix.parse_int_list("4,1,1", "x"), [1, 4])
        with self.assertRaises(ValueError):
            matrix.parse_int_list("a", "x")
        with self.assertRaises(ValueError):
            matrix.parse_int_list("0", "x")


class Schema(unittest.TestCase):
    def test_good(self):
        self.assertEqual(schema.problems(good_doc()), [])

    def test_bad(self):
        d = good_doc()
        del d["machine"]["kernel"]
        d["points"][0]["runs"].pop()
        d["points"][2]["reason"] = ""
        d["stacks"]["tern-afxdp"]["reason"] = ""
        bad = " ".join(schema.problems(d))
        self.assertIn("kernel", bad)
        self.assertIn("expected 3 runs", bad)
        self.assertIn("unavailable without a reason", bad)
        self.assertIn("without a reason", bad)
        self.assertTrue(schema.problems({"schema": 1}))


class Markdown(unittest.TestCase):
    def test_render(self):
        md = markdown.render(good_doc(), [("t", "/r/x/a.png")], "/r")
        self.assertIn("## request/response (echo)", md)
        self.assertIn("tern 2.00x", md)             # 901 / 451, the medians
        self.assertIn("not run", md)
        self.assertIn("![t](x/a.png)", md)
        self.assertIn("6000", md)
        self.assertIn("`tern-echo`", md)

    def test_no_ratio_between_unlike_stacks(self):
        md = markdown.render(good_doc(), [], "/r")
        self.assertNotIn("x kern-lo", md)
        self.assertNotIn("2.99x", md)                # 901 / 301: mem against loopback
        loop = md.split("### Linux loopback")[1].split("##")[0]
        self.assertNotIn("vs", loop.splitlines()[2])  # the loopback table has no ratio

    def test_comparable(self):
        def pt(stack, **kw):
            p = matrix.point("rr", stacks.BY_NAME[stack], 1, "busy", size=64)
            p.update(kw)
            return p
        self.assertTrue(markdown.comparable(pt("tern-mem"), pt("smoltcp-mem")))
        self.assertTrue(markdown.comparable(pt("tern-afxdp"), pt("kern-veth")))
        self.assertFalse(markdown.comparable(pt("tern-mem"), pt("kern-lo")))
        self.assertFalse(markdown.comparable(pt("tern-mem"), pt("kern-veth")))
        self.assertFalse(markdown.comparable(pt("kern-lo"), pt("kern-lo", poll="busy")))
        self.assertFalse(markdown.comparable(pt("tern-mem"), pt("smoltcp-mem", size=1)))
        b = lambda st, v=None: matrix.point("bulk", stacks.BY_NAME[st], 1, "busy", flows=1,
                                            bulk_bytes=1 << 20, variant=v)
        self.assertTrue(markdown.comparable(b("tern-mem"), b("lwip-mem")))
        self.assertFalse(markdown.comparable(b("tern-mem", "app-sum"), b("lwip-mem")))

    def test_instruction_counts_name_their_workload(self):
        md = markdown.render(good_doc(), [], "/r")
        head = next(l for l in md.splitlines() if l.startswith("## Instructions"))
        self.assertIn("64 B", head)
        self.assertIn("16 connections", head)
        self.assertIn("| tern-mem | 64 B, 16 conns | 6000 |", md)

    def test_bulk_data_path_column(self):
        d = good_doc()
        p = matrix.point("bulk", stacks.BY_NAME["tern-mem"], 1, "busy", flows=1,
                         bulk_bytes=1 << 20, variant="app-sum")
        runs = [{"gbps": 10.0, "data_path": "app-sum", "verified": True}]
        p.update(status="ok", runs=runs, warmup=runs[0], command=["x"], client="in-process",
                 summary={"gbps": summary([10.0])})
        d["points"].append(p)
        md = markdown.render(d, [], "/r")
        self.assertIn("| tern-mem | 1 | 1 | app-sum | 10.00 [10.00-10.00] |", md)


class Plots(unittest.TestCase):
    """Each plot is written from a document (files, not looks: those are
    checked by eye before results are committed)."""

    def setUp(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("no matplotlib")

    def test_plots_from_a_document(self):
        from bench import plots
        d = good_doc()
        with tempfile.TemporaryDirectory() as out:
            written = plots.plot_all(d, out)
            names = sorted(os.path.basename(p) for _, p in written)
            self.assertEqual(names, ["echo.png", "latency.png"])
            for _, p in written:
                with open(p, "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_loss_plot(self):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from bench import plots
        s = lambda v: {"median": v, "min": v * 0.9, "max": v * 1.1}
        doc = {"points": [{"stack": st, "loss": l, "gbps": s(g)}
                          for st, k in (("tern-mem", 10.0), ("kern-veth", 4.0))
                          for l, g in ((0.0, k), (0.01, k / 2), (0.05, k / 8))]}
        fig = plots.plot_loss(plt, doc)
        self.assertIsNotNone(fig)
        self.assertEqual(len(fig.axes[0].get_legend().get_texts()), 2)
        plt.close(fig)
        self.assertIsNone(plots.plot_loss(plt, {"points": []}))

    def test_loss_runs_become_series(self):
        from bench import plots
        runs = [{"stack": "tern-afxdp", "cc": "cubic", "direction": "send", "loss": 1,
                 "gbps": g} for g in (1.0, 3.0, 2.0)]
        runs += [{"stack": "linux", "cc": "cubic", "direction": "recv", "loss": 1, "gbps": 5.0},
                 {"stack": "linux", "cc": "cubic", "direction": "recv", "loss": 2,
                  "gbps": 0.0, "error": "client rc 1"}]
        pts = plots.loss_points({"runs": runs})["points"]
        self.assertEqual([(p["stack"], p["loss"]) for p in pts],
                         [("linux cubic recv", 0.01), ("tern-afxdp send", 0.01)])
        self.assertEqual(pts[1]["gbps"], {"median": 2.0, "min": 1.0, "max": 3.0})


class Flags(unittest.TestCase):
    def run_cli(self, *argv):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                rc = cli.main(list(argv))
            except SystemExit as e:
                rc = e.code
        return rc, err.getvalue()

    def test_bad_flags_exit_2(self):
        for argv, word in ((["--bogus"], "unrecognized"), (["--repeat", "0"], "--repeat"),
                           (["--stacks", "nope"], "unknown nope"),
                           (["--workloads", "rr,x"], "--workloads"),
                           (["--sizes", "0"], "--sizes"), (["--bulk-bytes", "lots"], "--bulk-bytes"),
                           (["--cores", "999"], "--cores"),
                           (["--callgrind-requests", "5,1"], "SMALL < LARGE")):
            rc, err = self.run_cli(*argv)
            self.assertEqual(rc, 2, argv)
            self.assertIn(word, err, argv)

    def test_help(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            with self.assertRaises(SystemExit) as e:
                cli.main(["--help"])
        self.assertEqual(e.exception.code, 0)
        for flag in ("--quick", "--repeat", "--stacks", "--no-callgrind", "--out"):
            self.assertIn(flag, out.getvalue())

    def test_results_go_to_the_build_tree(self):
        a = cli.parser().parse_args(["--quick", "--build-dir", "/tmp/b"])
        a.argv = []
        cli.settle_options(a)
        self.assertEqual(a.out, "/tmp/b/bench")

    def test_unbuilt_tree_is_one_clear_error(self):
        rc, err = self.run_cli("--quick", "--quiet", "--build-dir", "/nonexistent/build",
                               "--no-callgrind")
        self.assertEqual(rc, 1)
        self.assertEqual(err.splitlines(), [
            "tern bench: /nonexistent/build is not built (run: make, or cmake -S . -B "
            "/nonexistent/build -G Ninja && cmake --build /nonexistent/build; or give "
            "--build-dir)", "tern bench: nothing measured"])

    def test_unbuilt_stack_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "bin"))
            rc, err = self.run_cli("--quick", "--quiet", "--stacks", "tern-mem,lwip-mem",
                                   "--build-dir", d, "--no-callgrind")
        self.assertEqual(rc, 1)
        self.assertIn("cannot run tern-mem: not built", err)
        self.assertIn("run: make", err)               # what to run
        self.assertIn("cannot run lwip-mem", err)
        self.assertIn("liblwip-dev", err)
        self.assertIn("nothing measured", err)

    def test_validate_usage(self):
        self.assertEqual(self.run_cli("validate")[0], 2)

    def test_scaling_report_missing_file(self):
        rc, err = self.run_cli("scaling", "--report", "/nonexistent/scaling.json")
        self.assertEqual(rc, 2)
        self.assertIn("--report /nonexistent/scaling.json", err)


class ScalingSummary(unittest.TestCase):
    def test_full_speed_columns(self):
        from bench import scaling
        runs = {n: [{"value": v, "full": f, "full_share": sh, "load1": 1.0,
                     "others_cpus": 0.0, "our_cpus": 1.0 * n, "cycles": 640.0 + v / 1e5}
                    for v, f, sh in vals]
                for n, vals in ((1, [(3.0e6, 4.0e6, 0.5), (3.5e6, 4.2e6, 0.7),
                                     (3.2e6, None, 0.01)]),
                                (2, [(6.0e6, 7.0e6, 0.6)]))}
        row = scaling.summary("mem", "echo", runs)
        self.assertEqual(row["one"]["median"], 3.2e6)
        self.assertEqual(row["full"][1]["n"], 2)          # the None left out
        self.assertEqual(row["full"][1]["median"], 4.1e6)
        self.assertEqual(row["full_share"][1]["median"], 0.5)
        line = scaling.table([row]).splitlines()[-1]
        self.assertIn("4.10M (4.00-4.20) req/s / 7.00M", line)
        self.assertIn("| 50% / 60% |", line)
        self.assertEqual(row["cycles"]["median"], 672.0)
        self.assertTrue(line.endswith("| 672 (670-675) |"), line)

    def test_old_results_without_full(self):
        from bench import scaling
        runs = {n: [{"value": 40.0, "load1": 1.0, "others_cpus": 0.0, "our_cpus": 1.0}]
                for n in (1, 2)}
        line = scaling.table([scaling.summary("mem", "bulk", runs)]).splitlines()[-1]
        self.assertTrue(line.endswith("| - / - | - / - | - |"), line)


class FakeHosts:
    """The two namespaces' names and addresses, without making them."""
    env = {"IF_T": "t0", "IP_T": "198.18.0.2", "PREFIX_LEN": "24"}

    def in_ns(self, side, argv):
        return ["ns-" + side] + argv


class VethPlans(unittest.TestCase):
    def server(self, stack, cores):
        env = stacks.Env("/b", None, [0, 1], make_hosts=lambda kind, q: FakeHosts())
        pt = matrix.point("rr", stacks.BY_NAME[stack], cores, "busy", size=64)
        return stacks.BY_NAME[stack].plan(pt, env).server

    def test_afpacket_two_cores_steer_off_the_client_cpu(self):
        argv = self.server("tern-afpacket", 2)
        self.assertIn("--steer", argv)
        self.assertEqual(argv[argv.index("--cores") + 1], "1,0")

    def test_afpacket_one_core_direct(self):
        argv = self.server("tern-afpacket", 1)
        self.assertNotIn("--steer", argv)
        self.assertEqual(argv[argv.index("--cores") + 1], "1")

    def test_afxdp_two_cores_direct_queues(self):
        argv = self.server("tern-afxdp", 2)
        self.assertNotIn("--steer", argv)
        self.assertEqual(argv[argv.index("--cores") + 1], "0,1")


class ArgvProg(unittest.TestCase):
    def test_strips_wrappers(self):
        self.assertEqual(measure.argv_prog(["ip", "netns", "exec", "ns", "taskset", "-c", "0",
                                            "/b/kern-echo", "--x"]), "/b/kern-echo")


if __name__ == "__main__":
    unittest.main()
