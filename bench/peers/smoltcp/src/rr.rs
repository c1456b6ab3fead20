//! Request/response over the pair of hosts: the echo workload (every
//! connection sends `size` bytes and waits for them back, `depth`
//! requests in flight) and the HTTP workload (a fixed GET, a
//! fixed response), both ends driven from this one thread.

use std::collections::VecDeque;
use std::time::Instant;

use smoltcp::iface::SocketHandle;
use smoltcp::socket::tcp;

use crate::hosts::{Host, Pair};

/// What the server does with the bytes it receives.
pub enum Server {
    /// Sends every byte back.
    Echo,
    /// Answers every request (ending in CRLF CRLF) with this response.
    Http(Vec<u8>),
}

pub struct Spec {
    pub conns: usize,
    pub depth: usize,
    pub duration: f64,
    pub requests: u64,
    pub request: Vec<u8>,
    pub response_len: usize,
    pub server: Server,
}

pub struct Outcome {
    pub latencies_ns: Vec<u64>,
    pub duration_s: f64,
    pub retransmits: u64,
}

#[derive(Default)]
struct ClientConn {
    inflight: VecDeque<Instant>,
    got: usize,
    out: Vec<u8>,
}

#[derive(Default)]
struct ServerConn {
    inbuf: Vec<u8>,
    out: Vec<u8>,
}

/// Sends as much of `out` as the socket takes; keeps the rest.
fn flush(s: &mut tcp::Socket, out: &mut Vec<u8>) -> Result<(), String> {
    if out.is_empty() || !s.can_send() {
        return Ok(());
    }
    let n = s.send_slice(out).map_err(|e| format!("send: {e}"))?;
    out.drain(..n);
    Ok(())
}

/// Everything the socket has received, appended to `into`.
fn drain(s: &mut tcp::Socket, into: &mut Vec<u8>, scratch: &mut [u8]) -> Result<usize, String> {
    let mut total = 0;
    while s.can_recv() {
        let n = s.recv_slice(scratch).map_err(|e| format!("recv: {e}"))?;
        if n == 0 {
            break;
        }
        into.extend_from_slice(&scratch[..n]);
        total += n;
    }
    Ok(total)
}

fn serve(host: &mut Host, socks: &[SocketHandle], conns: &mut [ServerConn], kind: &Server,
         scratch: &mut [u8]) -> Result<(), String> {
    for (i, &h) in socks.iter().enumerate() {
        let s = host.sock(h);
        let c = &mut conns[i];
        match kind {
            Server::Echo => {
                drain(s, &mut c.out, scratch)?;
            }
            Server::Http(resp) => {
                if drain(s, &mut c.inbuf, scratch)? > 0 {
                    let mut start = 0;
                    while let Some(p) = c.inbuf[start..].windows(4).position(|w| w == b"\r\n\r\n") {
                        c.out.extend_from_slice(resp);
                        start += p + 4;
                    }
                    c.inbuf.drain(..start);
                }
            }
        }
        flush(s, &mut c.out)?;
    }
    Ok(())
}

/// Runs the workload on connected hosts until --requests round trips
/// completed or --duration seconds passed.
pub fn run(pair: &mut Pair, spec: &Spec) -> Result<Outcome, String> {
    let mut cc: Vec<ClientConn> = (0..spec.conns).map(|_| ClientConn::default()).collect();
    let mut sc: Vec<ServerConn> = (0..spec.conns).map(|_| ServerConn::default()).collect();
    let mut scratch = vec![0u8; 65536];
    let mut sink = Vec::with_capacity(65536);
    let mut lat = Vec::with_capacity(1 << 20);
    let (mut issued, mut done) = (0u64, 0u64);
    let limit = if spec.requests > 0 { spec.requests } else { u64::MAX };
    let csocks = pair.csocks.clone();
    let ssocks = pair.ssocks.clone();
    let start = Instant::now();
    let r0 = pair.retransmits();
    loop {
        // Client: collect responses, keep `depth` requests in flight.
        for (i, &h) in csocks.iter().enumerate() {
            let s = pair.client.sock(h);
            let c = &mut cc[i];
            sink.clear();
            c.got += drain(s, &mut sink, &mut scratch)?;
            if c.got >= spec.response_len {
                let now = Instant::now();
                while c.got >= spec.response_len {
                    c.got -= spec.response_len;
                    let t = c.inflight.pop_front().ok_or("response without a request")?;
                    lat.push(now.duration_since(t).as_nanos() as u64);
                    done += 1;
                }
            }
            while c.inflight.len() < spec.depth && issued < limit {
                c.out.extend_from_slice(&spec.request);
                c.inflight.push_back(Instant::now());
                issued += 1;
            }
            flush(s, &mut c.out)?;
        }
        if done >= limit
            || (spec.duration > 0.0 && start.elapsed().as_secs_f64() >= spec.duration)
        {
            break;
        }
        pair.client.poll();
        pair.server.poll();
        serve(&mut pair.server, &ssocks, &mut sc, &spec.server, &mut scratch)?;
        pair.server.poll();
        pair.client.poll();
    }
    Ok(Outcome {
        latencies_ns: lat,
        duration_s: start.elapsed().as_secs_f64(),
        retransmits: pair.retransmits() - r0,
    })
}
