//! Bulk transfer: `bytes` split over `conns` connections, client
//! to server, every received byte checked against the sender's pattern.

use std::time::Instant;

use crate::hosts::Pair;

/// Pattern byte at stream offset `off` of connection `c`: a period of 251
/// (prime, so it never lines up with segment or buffer sizes).
const PERIOD: usize = 251;

fn pattern(c: usize, len: usize) -> Vec<u8> {
    (0..len + PERIOD).map(|o| ((o + 7 * c) % PERIOD) as u8).collect()
}

pub struct Outcome {
    pub duration_s: f64,
    pub bytes: u64,
    pub verified: bool,
    pub retransmits: u64,
}

const CHUNK: usize = 65536;

pub fn run(pair: &mut Pair, bytes: u64) -> Result<Outcome, String> {
    let conns = pair.csocks.len();
    let per: Vec<u64> = (0..conns)
        .map(|i| bytes / conns as u64 + u64::from((i as u64) < bytes % conns as u64))
        .collect();
    let pats: Vec<Vec<u8>> = (0..conns).map(|c| pattern(c, CHUNK)).collect();
    let mut sent = vec![0u64; conns];
    let mut recvd = vec![0u64; conns];
    let mut verified = true;
    let mut buf = vec![0u8; CHUNK];
    let csocks = pair.csocks.clone();
    let ssocks = pair.ssocks.clone();
    let r0 = pair.retransmits();
    let start = Instant::now();
    let mut last_progress = Instant::now();
    while recvd.iter().sum::<u64>() < bytes {
        let mut moved = false;
        for c in 0..conns {
            let s = pair.client.sock(csocks[c]);
            while sent[c] < per[c] && s.can_send() {
                let off = (sent[c] % PERIOD as u64) as usize;
                let n = ((per[c] - sent[c]) as usize).min(CHUNK);
                let k = s.send_slice(&pats[c][off..off + n]).map_err(|e| format!("send: {e}"))?;
                if k == 0 {
                    break;
                }
                sent[c] += k as u64;
                moved = true;
            }
        }
        pair.client.poll();
        pair.server.poll();
        for c in 0..conns {
            let s = pair.server.sock(ssocks[c]);
            while s.can_recv() {
                let n = s.recv_slice(&mut buf).map_err(|e| format!("recv: {e}"))?;
                if n == 0 {
                    break;
                }
                let off = (recvd[c] % PERIOD as u64) as usize;
                verified &= buf[..n] == pats[c][off..off + n];
                recvd[c] += n as u64;
                moved = true;
            }
        }
        pair.server.poll();
        pair.client.poll();
        if moved {
            last_progress = Instant::now();
        } else if last_progress.elapsed().as_secs() > 10 {
            return Err(format!("stalled at {} of {} bytes", recvd.iter().sum::<u64>(), bytes));
        }
    }
    Ok(Outcome {
        duration_s: start.elapsed().as_secs_f64(),
        bytes,
        verified,
        retransmits: pair.retransmits() - r0,
    })
}
