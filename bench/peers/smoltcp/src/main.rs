//! smoltcp-peer: smoltcp (crates.io) as an in-memory benchmark peer for
//! `tern bench`. Both ends run in one thread over an in-memory Ethernet link
//! (every frame copied, checksums in software), the same harness shape as
//! `tern-echo --driver mem`, and results print in the same JSON.
//!
//!   smoltcp-peer echo  [--conns N] [--size B] [--depth D] [--duration S] [--requests N] [--json]
//!   smoltcp-peer httpd [--body-size N] [--conns N] [--depth D] [--duration S] [--requests N] [--json]
//!   smoltcp-peer bulk  [--bytes N] [--conns N] [--json]

mod bulk;
mod hosts;
mod link;
mod report;
mod rr;

use std::process::exit;

const USAGE: &str = "\
usage: smoltcp-peer echo|httpd|bulk [flags]

smoltcp as an in-memory peer: client and server stacks in this one thread,
joined by an in-memory Ethernet link (every frame copied, software
checksums), as tern-echo --driver mem. Output as tern-echo / tern-bulk.

workloads:
  echo     request/response: every connection sends --size bytes and waits
           for them back, --depth requests in flight
  httpd    keep-alive HTTP: a 44-byte GET, a fixed response of
           --body-size body bytes
  bulk     --bytes over --conns connections, payload verified

flags:
  --conns N        connections (default 16; bulk: 1)
  --size B         echo: request = response bytes (default 64)
  --depth D        requests in flight per connection (default 1)
  --duration S     seconds of load (default 10; with --requests: unlimited)
  --requests N     stop after exactly N completed round trips
  --body-size N    httpd: response body bytes (default 64)
  --bytes N        bulk: total bytes, K/M/G suffixes are powers of 1024 (default 1G)
  --json           print one JSON object on stdout
  --help           this text
";

fn bad(msg: &str) -> ! {
    eprintln!("smoltcp-peer: {msg} (see --help)");
    exit(2)
}

fn num(flag: &str, v: Option<String>) -> u64 {
    let v = v.unwrap_or_else(|| bad(&format!("{flag} needs a value")));
    let (digits, mult) = match v.chars().last() {
        Some('K') | Some('k') => (&v[..v.len() - 1], 1u64 << 10),
        Some('M') | Some('m') => (&v[..v.len() - 1], 1 << 20),
        Some('G') | Some('g') => (&v[..v.len() - 1], 1 << 30),
        _ => (&v[..], 1),
    };
    match digits.parse::<u64>() {
        Ok(n) => n.checked_mul(mult).unwrap_or_else(|| bad(&format!("{flag}: too large"))),
        Err(_) => bad(&format!("{flag}: '{v}' is not a number")),
    }
}

struct Opts {
    conns: Option<u64>,
    size: u64,
    depth: u64,
    duration: Option<f64>,
    requests: u64,
    body_size: u64,
    bytes: u64,
    json: bool,
}

fn parse(args: impl Iterator<Item = String>) -> Opts {
    let mut o = Opts {
        conns: None, size: 64, depth: 1, duration: None, requests: 0,
        body_size: 64, bytes: 1 << 30, json: false,
    };
    let mut it = args;
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut val = || inline.clone().or_else(|| it.next());
        match flag.as_str() {
            "--conns" => o.conns = Some(num(&flag, val())),
            "--size" => o.size = num(&flag, val()),
            "--depth" => o.depth = num(&flag, val()),
            "--requests" => o.requests = num(&flag, val()),
            "--body-size" => o.body_size = num(&flag, val()),
            "--bytes" => o.bytes = num(&flag, val()),
            "--duration" => {
                let v = val().unwrap_or_else(|| bad("--duration needs a value"));
                match v.parse::<f64>() {
                    Ok(d) if d >= 0.0 && d.is_finite() => o.duration = Some(d),
                    _ => bad(&format!("--duration: '{v}' is not a number of seconds")),
                }
            }
            "--json" => o.json = true,
            "--help" | "-h" => {
                print!("{USAGE}");
                exit(0)
            }
            _ => bad(&format!("unknown flag '{a}'")),
        }
    }
    if o.conns == Some(0) || o.depth == 0 {
        bad("--conns and --depth must be at least 1");
    }
    if o.conns.unwrap_or(1) > 4096 {
        bad("--conns: at most 4096");
    }
    if o.size == 0 || o.size > 65536 {
        bad("--size: 1..65536 bytes");
    }
    o
}

/// The HTTP response, whole: the same header bytes as tern-httpd and
/// kern-httpd (apps/common/http.c), so --body-size gives the same total.
fn http_response(body: usize) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 200 OK\r\nServer: tern\r\nContent-Type: text/plain\r\nContent-Length: {body}\r\n\r\n"
    )
    .into_bytes();
    r.extend((0..body).map(|i| b'a' + (i % 26) as u8));
    if body > 0 {
        *r.last_mut().unwrap() = b'\n';
    }
    r
}

/// A 44-byte keep-alive GET, the request size of the HTTP workload.
const HTTP_REQUEST: &[u8] = b"GET /abc HTTP/1.1\r\nHost: 198.18.0.2:8080\r\n\r\n";

fn main() {
    let mut args = std::env::args().skip(1);
    let workload = match args.next() {
        Some(w) if w == "--help" || w == "-h" => {
            print!("{USAGE}");
            exit(0)
        }
        Some(w) => w,
        None => bad("which workload? echo, httpd or bulk"),
    };
    let o = parse(args);
    let res = match workload.as_str() {
        "echo" | "httpd" => run_rr(&workload, &o),
        "bulk" => run_bulk(&o),
        _ => bad(&format!("unknown workload '{workload}' (echo, httpd, bulk)")),
    };
    if let Err(e) = res {
        eprintln!("smoltcp-peer: {e}");
        exit(1);
    }
}

fn run_rr(workload: &str, o: &Opts) -> Result<(), String> {
    let conns = o.conns.unwrap_or(16) as usize;
    let duration = match (o.duration, o.requests) {
        (Some(d), _) => d,
        (None, 0) => 10.0,
        (None, _) => 0.0,
    };
    let (request, response_len, server) = if workload == "echo" {
        let req: Vec<u8> = (0..o.size).map(|i| (i % 251) as u8).collect();
        (req, o.size as usize, rr::Server::Echo)
    } else {
        let resp = http_response(o.body_size as usize);
        (HTTP_REQUEST.to_vec(), resp.len(), rr::Server::Http(resp))
    };
    let spec = rr::Spec {
        conns, depth: o.depth as usize, duration, requests: o.requests,
        request, response_len, server,
    };
    let mut pair = hosts::Pair::connect(conns, 65536)?;
    let out = rr::run(&mut pair, &spec)?;
    let mut r = report::Report::new(o.json, &format!("smoltcp-{workload}"));
    r.str("driver", "mem");
    r.str("mode", "both");
    r.u64("cores", 1);
    r.u64("conns", conns as u64);
    if workload == "echo" {
        r.u64("size", o.size);
    } else {
        r.u64("body_size", o.body_size);
        r.u64("request_bytes", HTTP_REQUEST.len() as u64);
        r.u64("response_bytes", response_len as u64);
    }
    r.u64("depth", o.depth);
    report::latencies(&mut r, out.latencies_ns, out.duration_s);
    r.u64("retransmits", out.retransmits);
    r.end();
    Ok(())
}

fn run_bulk(o: &Opts) -> Result<(), String> {
    let conns = o.conns.unwrap_or(1) as usize;
    let mut pair = hosts::Pair::connect(conns, 1 << 20)?;
    let out = bulk::run(&mut pair, o.bytes)?;
    let mut r = report::Report::new(o.json, "smoltcp-bulk");
    r.str("driver", "mem");
    r.str("mode", "both");
    r.u64("cores", 1);
    r.u64("conns", conns as u64);
    r.u64("bytes", out.bytes);
    r.f("duration_s", out.duration_s, 3);
    r.f("gbps", out.bytes as f64 * 8.0 / out.duration_s / 1e9, 3);
    r.bool("verified", out.verified);
    r.u64("retransmits", out.retransmits);
    r.end();
    if !out.verified {
        return Err("payload verification failed".into());
    }
    Ok(())
}
