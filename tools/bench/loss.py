"""tern bench loss: bulk TCP over a lossy veth path, tern beside Linux.

Three network namespaces (tools/netns.sh up --wire): the kernel side "k",
tern's side "t" and a bridge "w" between them where nftables drops P% of
the frames at random, both ways (netns.sh loss P both). For each loss
rate, each direction and each stack, one 100 MiB (--bytes) transfer:

  send  tern-bulk --client on t (tern on AF_PACKET or AF_XDP) into
        kern-bulk --server on k; the Linux row is kern-bulk --client on t
        (the kernel then owns t's address) into the same server
  recv  kern-bulk --client on k into tern-bulk --server on t; the Linux
        row has kern-bulk --server on t

Both ends of a Linux row are Linux; a tern row has Linux at the far end.
Whichever the stack, the program on t runs on the last CPU (tern's) and
the one on k on CPU 0, so the two senders (and receivers) share a CPU
with the same other work.
tern senders run once per congestion control in --tern-cc (tern-bulk --cc;
default cubic,bbr); a tern receiver uses the first.
Linux rows run once per congestion control in --kern-cc (CUBIC, as tern,
then the host's default), set per route (ip route ... congctl); a Linux
sender into tern runs with each too. Figures per run: seconds, Gbit/s of payload, the
tern counters (retransmits, RTOs, recoveries, duplicate segments) and the
kernel's nstat deltas on k (TcpRetransSegs, TCPTimeouts, TCPLossProbes,
DSACKs received) and t for Linux rows. Runs alternate stacks so load
drifts hit both alike.

Writes build/bench-loss/<date>.json (or --out) and prints a table.
Needs root (namespaces) and nft."""
import argparse
import json
import os
import sys
import time

from . import addr
from .netns import (Hosts, interrupt_on_sigterm, last_json, result_doc, result_line,
                    run_in_hosts, stop, wait_ready, write_result)

TOOLS = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
REPO = os.path.dirname(TOOLS)

NSTAT_KEYS = ("TcpRetransSegs", "TcpExtTCPTimeouts", "TcpExtTCPLossProbes",
              "TcpExtTCPDSACKRecv", "TcpExtTCPDSACKOfoRecv", "TcpExtTCPSackRecovery",
              "TcpExtTCPLostRetransmit", "TcpExtTCPSpuriousRTOs",
              "TcpExtTCPDSACKOldSent", "TcpExtTCPDSACKOfoSent", "TcpOutSegs", "TcpInSegs")
TERN_KEYS = ("tcp_retransmits", "tcp_rto_expiries", "tcp_fast_retransmits",
             "tcp_sack_recoveries", "tcp_rack_recoveries", "tcp_rack_lost",
             "tcp_tail_loss_probes", "tcp_dup_data_in", "tcp_ooo_segments",
             "tcp_pure_acks_out", "tcp_data_segs_out", "tcp_data_segs_in",
             "tcp_dsacks_out", "tcp_dsacks_in", "tcp_spurious_rtos",
             "tcp_drop_paws", "tcp_drop_paws_old_ack")


def set_cc(hosts, side, cc):
    """Congestion control of the side's route to the other (the
    per-namespace sysctl may be read-only in a namespace)."""
    e = hosts.env
    ifname = e["IF_K"] if side == "k" else e["IF_T"]
    src = e["IP_K"] if side == "k" else e["IP_T"]
    net = "%s/%s" % (e["IP_K"].rsplit(".", 1)[0] + ".0", e["PREFIX_LEN"])
    p = hosts.run(side, ["ip", "route", "replace", net, "dev", ifname, "proto", "kernel",
                        "scope", "link", "src", src, "congctl", cc],
                 capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("cannot set congctl %s on %s: %s" % (cc, side, p.stderr.strip()))


def nstat(hosts, side):
    """Absolute kernel SNMP counters of one namespace."""
    p = hosts.run(side, ["nstat", "-asz", "--json"], capture_output=True, text=True)
    try:
        d = json.loads(p.stdout)
    except ValueError:
        return {}
    for v in d.values():
        if isinstance(v, dict):
            return {k: v.get(k, 0) for k in NSTAT_KEYS}
    return {}


def delta(a, b):
    return {k: b.get(k, 0) - a.get(k, 0) for k in NSTAT_KEYS}


def wait_listening(hosts, side, port, proc, timeout=15):
    """Until the server on side listens on port (a busy host may take
    seconds to start it; a client sent before then is refused)."""
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            return False
        r = hosts.run(side, ["ss", "-Hltn", "sport = :%d" % port],
                      capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip():
            return True
        time.sleep(0.05)
    return False


def one_run(a, hosts, stack, cc, direction, port, tern_cc="cubic"):
    """One transfer; cc: the congestion control of the Linux ends, tern_cc
    tern's. Returns the record."""
    e = hosts.env
    bindir = os.path.join(a.build_dir, "bin")
    nbytes = str(a.bytes)
    tern = stack.startswith("tern")
    # "afpacket:tso=0": the driver, then its options (--driver-opts)
    driver, _, dopts = (stack.split("-", 1)[1] if tern else "").partition(":")
    tern_flags = ["--driver", driver, "--iface", e["IF_T"], "--cores", str(a.tern_cpu),
                  "--poll", "busy", "--json", "--cc", tern_cc]
    if dopts:
        tern_flags += ["--driver-opts", dopts]
    if a.snd_buf and direction == "send":
        tern_flags += ["--snd-buf", a.snd_buf]
    rec = {"stack": stack, "cc": cc, "direction": direction, "bytes": a.bytes}
    if tern:
        rec["tern_cc"] = tern_cc
    if not tern:
        hosts.kernel_owns_t(True)
        set_cc(hosts, "t", cc)
    set_cc(hosts, "k", cc)
    k0, t0 = nstat(hosts, "k"), nstat(hosts, "t")
    server_side = "k" if direction == "send" else "t"
    client_side = "t" if direction == "send" else "k"
    server_ip = e["IP_K"] if direction == "send" else e["IP_T"]
    # like with like: whichever stack, the program on t (tern's side) runs
    # on tern's CPU and the one on k on the kernel's, so a Linux sender
    # shares its CPU with the same load a tern sender does
    cpu_of = {"t": a.tern_cpu, "k": a.kern_cpu}
    if tern and direction == "recv":
        server = [os.path.join(bindir, "tern-bulk"), "--server", "--once",
                  "--port", str(port), "--verify", "pattern"] + tern_flags
    else:
        # the clients send the pattern: the server checks every byte (its
        # default, hash, needs the client's digest, which it never sees)
        server = ["taskset", "-c", str(cpu_of[server_side]), os.path.join(bindir, "kern-bulk"),
                  "--server", "--once", "--port", str(port), "--verify", "pattern",
                  "--json"]
    if tern and direction == "send":
        client = [os.path.join(bindir, "tern-bulk"), "--client",
                  addr.hostport(server_ip, port), "--bytes", nbytes] + tern_flags
    else:
        client = ["taskset", "-c", str(cpu_of[client_side]),
                  os.path.join(bindir, "kern-bulk"), "--client",
                  addr.hostport(server_ip, port), "--bytes", nbytes, "--json"]
    sp = hosts.popen(server_side, server)
    try:
        if tern and direction == "recv":
            if not wait_ready(hosts, "k", e["IP_T"], sp):
                out, err, _ = stop(sp, 1)
                rec["error"] = "tern server did not come up: " + err[-300:]
                return rec
        elif not wait_listening(hosts, server_side, port, sp):
            out, err, _ = stop(sp, 1)
            rec["error"] = "kern-bulk server did not listen: " + err[-300:]
            return rec
        t = time.time()
        cp = hosts.popen(client_side, client)
        cout, cerr, crc = stop(cp, a.timeout)
        wall = time.time() - t
        sout, serr, src = stop(sp, 15)
    finally:
        if sp.poll() is None:
            os.killpg(sp.pid, 9)
        if not tern:
            hosts.kernel_owns_t(False)
    k1, t1 = nstat(hosts, "k"), nstat(hosts, "t")
    cj, sj = last_json(cout), last_json(sout)
    tj = cj if direction == "send" else sj
    rj = sj if direction == "send" else cj
    rec["client_rc"], rec["server_rc"] = crc, src
    if crc != 0 or src != 0 or not cj or not sj:
        rec["error"] = "client rc %s, server rc %s: %s %s" % (
            crc, src, cerr.strip()[-300:], serr.strip()[-300:])
    rec["wall_s"] = round(wall, 3)
    # the receiver's duration: first byte to last byte it verified
    rec["seconds"] = rj.get("duration_s") or tj.get("duration_s") or wall
    rec["gbps"] = round(a.bytes * 8 / rec["seconds"] / 1e9, 3) if rec["seconds"] else 0
    rec["verified"] = bool(rj.get("verified"))
    if tern:
        ternj = tj if direction == "send" else sj
        c = ternj.get("counters", {})
        rec["tern"] = {k: c.get(k, 0) for k in TERN_KEYS}
    rec["kern_k"] = delta(k0, k1)
    if not tern:
        rec["kern_t"] = delta(t0, t1)
    return rec


def row_name(r):
    """tern rows: tern's driver and the Linux peer's CC when the peer sends."""
    if r["stack"].startswith("tern"):
        return r["stack"] + (" <- linux %s" % r["cc"] if r["direction"] == "recv"
                             else " %s" % r.get("tern_cc", "cubic"))
    return "linux %s" % r["cc"]


def table(runs, losses):
    lines = ["| loss | tern | stack | seconds (median, min-max) | Gbit/s | "
             "sender retransmits | sender RTOs | receiver D-SACKs sent / dup segs |",
             "|---|---|---|---|---|---|---|---|"]
    names = []
    for r in runs:
        if (r["direction"], row_name(r)) not in names:
            names.append((r["direction"], row_name(r)))
    for pct in losses:
        for d, s in names:
                rs = [r for r in runs if r["loss"] == pct and r["direction"] == d
                      and row_name(r) == s and "error" not in r]
                bad = [r for r in runs if r["loss"] == pct and r["direction"] == d
                       and row_name(r) == s and "error" in r]
                if not rs:
                    if bad:
                        lines.append("| %d%% | %s | %s | failed: %s | | | | |" %
                                     (pct, d, s, bad[0]["error"][:80]))
                    continue
                secs = sorted(r["seconds"] for r in rs)
                med = secs[len(secs) // 2]
                def m(f):
                    v = sorted(f(r) for r in rs)
                    return v[len(v) // 2]
                tern = s.startswith("tern")
                if tern and d == "send":
                    rtx = m(lambda r: r["tern"]["tcp_retransmits"])
                    rto = m(lambda r: r["tern"]["tcp_rto_expiries"])
                    dup = "%d / -" % m(lambda r: r["kern_k"]["TcpExtTCPDSACKOldSent"]
                                       + r["kern_k"]["TcpExtTCPDSACKOfoSent"])
                elif tern:
                    rtx = m(lambda r: r["kern_k"]["TcpRetransSegs"])
                    rto = m(lambda r: r["kern_k"]["TcpExtTCPTimeouts"])
                    dup = "%d / %d" % (m(lambda r: r["tern"]["tcp_dsacks_out"]),
                                       m(lambda r: r["tern"]["tcp_dup_data_in"]))
                else:
                    snd = "t" if d == "send" else "k"
                    rcv = "k" if d == "send" else "t"
                    rtx = m(lambda r: r["kern_" + snd]["TcpRetransSegs"])
                    rto = m(lambda r: r["kern_" + snd]["TcpExtTCPTimeouts"])
                    dup = "%d / -" % m(lambda r: r["kern_" + rcv]["TcpExtTCPDSACKOldSent"]
                                       + r["kern_" + rcv]["TcpExtTCPDSACKOfoSent"])
                fail = " (%d failed)" % len(bad) if bad else ""
                lines.append("| %d%% | %s | %s | %.2f (%.2f-%.2f)%s | %.2f | %d | %d | %s |" % (
                    pct, d, s, med, secs[0], secs[-1], fail,
                    a_bytes_gbps(rs[0]["bytes"], med), rtx, rto, dup))
    return "\n".join(lines)


def a_bytes_gbps(nbytes, s):
    return nbytes * 8 / s / 1e9 if s else 0


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper()
    if t and t[-1] in mult:
        return int(float(t[:-1]) * mult[t[-1]])
    return int(t)


def parser():
    p = argparse.ArgumentParser(prog="tern bench loss", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--loss", default="0,1,2,5", metavar="LIST",
                   help="loss percentages, each applied both ways (default 0,1,2,5)")
    p.add_argument("--bytes", type=parse_size, default=100 << 20, metavar="N",
                   help="bytes per transfer, K/M/G suffixes (default 100M)")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="runs per point (default 1)")
    p.add_argument("--drivers", default="afpacket", metavar="LIST",
                   help="tern drivers: afpacket, afxdp, each with driver options "
                        "after a colon, e.g. afpacket:tso=0 (default afpacket)")
    p.add_argument("--kern-cc", default=None, metavar="LIST",
                   help="congestion controls for the Linux rows (default: cubic, then the "
                        "host's default if that differs); a Linux receiver of tern "
                        "uses the first")
    p.add_argument("--tern-cc", default="cubic,bbr", metavar="LIST",
                   help="congestion controls of the tern sender rows (tern-bulk --cc; "
                        "default cubic,bbr); a tern receiver uses the first")
    p.add_argument("--snd-buf", default=None, metavar="N",
                   help="tern senders: tern-bulk --snd-buf (send queue per "
                        "connection; default the stack's 256K)")
    p.add_argument("--directions", default="send,recv", metavar="LIST",
                   help="send (tern sends), recv (tern receives) (default both)")
    p.add_argument("--no-kern", action="store_true", help="tern rows only")
    p.add_argument("--timeout", type=float, default=120, metavar="S",
                   help="give up one transfer after S seconds (default 120)")
    p.add_argument("--build-dir", default=os.path.join(REPO, "build"), metavar="DIR",
                   help="CMake build tree with bin/tern-bulk, bin/kern-bulk (default build/)")
    p.add_argument("--out", metavar="FILE",
                   help="JSON file (default <build-dir>/bench-loss/<date>.json)")
    return p


def default_cc():
    try:
        with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
            return f.read().strip()
    except OSError:
        return "cubic"


def run_all(a, hosts, losses, terns, dirs, runs):
    """Every loss rate, repeat, direction and point, each on its own port;
    stacks alternate repeat by repeat."""
    port = 5100
    for pct in losses:
        hosts.loss(pct)
        for rep in range(a.repeat):
            for d in dirs:
                # (stack, Linux CC): a tern sender faces one Linux
                # receiver; a Linux sender runs with each CC
                points = []
                tccs = a.tern_cc if d == "send" else a.tern_cc[:1]
                for cc in a.kern_cc:
                    if d == "recv" or cc == a.kern_cc[0]:
                        points += [(t, cc, tc) for t in terns for tc in tccs]
                    if not a.no_kern:
                        points.append(("linux", cc, None))
                order = points if rep % 2 == 0 else list(reversed(points))
                for s, cc, tc in order:
                    port += 1
                    r = one_run(a, hosts, s, cc, d, port, tc or "cubic")
                    r["loss"] = pct
                    r["loadavg"] = os.getloadavg()[0]
                    runs.append(r)
                    sys.stderr.write("%d%% %s %s: %.2f s%s\n" % (
                        pct, d, row_name(r), r.get("seconds", 0),
                        "  ERROR " + r["error"][:200] if "error" in r else ""))


def main(argv):
    a = parser().parse_args(argv)
    interrupt_on_sigterm()
    if os.geteuid() != 0:
        sys.stderr.write("tern bench loss: needs root (network namespaces)\n")
        return 2
    for prog in ("tern-bulk", "kern-bulk"):
        if not os.access(os.path.join(a.build_dir, "bin", prog), os.X_OK):
            sys.stderr.write("tern bench loss: %s/bin/%s not built (cmake --build %s "
                             "--target tern-bulk kern-bulk)\n" % (a.build_dir, prog, a.build_dir))
            return 2
    losses = [int(x) for x in a.loss.split(",") if x != ""]
    a.tern_cc = [x for x in a.tern_cc.split(",") if x]
    if a.kern_cc:
        a.kern_cc = a.kern_cc.split(",")
    else:
        d = default_cc()
        a.kern_cc = ["cubic"] + ([d] if d != "cubic" else [])
    cpus = os.cpu_count() or 1
    a.tern_cpu, a.kern_cpu = cpus - 1, 0
    terns = ["tern-" + d for d in a.drivers.split(",")]
    dirs = a.directions.split(",")
    hosts = Hosts("tl%d" % (os.getpid() % 100000), wire=True)
    doc = result_doc("bulk over a lossy veth path (tools/bench/loss.py)", argv, bytes=a.bytes)
    runs = doc["runs"]
    run_in_hosts(hosts, doc, lambda: run_all(a, hosts, losses, terns, dirs, runs))
    out = write_result(doc, a.out, a.build_dir, "loss")
    print(table(runs, losses))
    print(result_line(doc, out))
    return 1 if any("error" in r for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
