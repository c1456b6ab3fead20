//! An in-memory Ethernet link between two smoltcp interfaces in one thread.
//!
//! Each direction is a FIFO of owned frames: a transmit copies the frame the
//! stack built into a buffer taken from a free list, a receive hands that
//! buffer to the other stack and recycles it afterwards. So every frame is
//! written once and read once, as over tern's mem driver; checksums are left
//! to the stacks (computed and verified in software: the default
//! capabilities). The link also counts TCP retransmissions on the wire: a
//! segment with payload whose end does not move its flow past the highest
//! sequence number already seen.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use smoltcp::phy::{self, DeviceCapabilities, Medium};
use smoltcp::time::Instant;

pub const MTU: usize = 1500;
const ETH_HDR: usize = 14;

/// Shared state of the link: both directions and the wire statistics.
pub struct Wire {
    queues: [VecDeque<Vec<u8>>; 2],
    free: Vec<Vec<u8>>,
    /// Highest sequence end seen per (flow, direction); flows are indexed by
    /// the client port minus `port_base`.
    seq_end: Vec<Option<u32>>,
    port_base: u16,
    pub frames: u64,
    pub retransmits: u64,
}

impl Wire {
    pub fn new(port_base: u16, flows: usize) -> Rc<RefCell<Wire>> {
        Rc::new(RefCell::new(Wire {
            queues: [VecDeque::new(), VecDeque::new()],
            free: Vec::new(),
            seq_end: vec![None; 2 * flows],
            port_base,
            frames: 0,
            retransmits: 0,
        }))
    }

    fn note_tcp(&mut self, f: &[u8]) {
        // Ethernet + IPv4 (no options assumed absent: read IHL) + TCP.
        if f.len() < ETH_HDR + 20 || f[12] != 0x08 || f[13] != 0x00 || f[ETH_HDR + 9] != 6 {
            return;
        }
        let ihl = ((f[ETH_HDR] & 0x0f) as usize) * 4;
        let tot = u16::from_be_bytes([f[ETH_HDR + 2], f[ETH_HDR + 3]]) as usize;
        let t = ETH_HDR + ihl;
        if f.len() < t + 20 || tot < ihl + 20 {
            return;
        }
        let sport = u16::from_be_bytes([f[t], f[t + 1]]);
        let dport = u16::from_be_bytes([f[t + 2], f[t + 3]]);
        let seq = u32::from_be_bytes([f[t + 4], f[t + 5], f[t + 6], f[t + 7]]);
        let doff = ((f[t + 12] >> 4) as usize) * 4;
        let payload = tot.saturating_sub(ihl + doff) as u32;
        if payload == 0 {
            return;
        }
        let (client, dir) = if sport >= self.port_base { (sport, 0) } else { (dport, 1) };
        let flow = client.wrapping_sub(self.port_base) as usize;
        let slot = match self.seq_end.get_mut(2 * flow + dir) {
            Some(s) => s,
            None => return,
        };
        let end = seq.wrapping_add(payload);
        match *slot {
            Some(hi) if (end.wrapping_sub(hi) as i32) <= 0 => self.retransmits += 1,
            _ => *slot = Some(end),
        }
    }
}

/// One end of the link: transmits into queue `tx`, receives from `1 - tx`.
pub struct Port {
    wire: Rc<RefCell<Wire>>,
    tx: usize,
}

impl Port {
    /// The two ends of one wire. Every frame is looked at once, when it is
    /// transmitted, so retransmissions are counted once in each direction.
    pub fn pair(wire: &Rc<RefCell<Wire>>) -> (Port, Port) {
        (Port { wire: wire.clone(), tx: 0 }, Port { wire: wire.clone(), tx: 1 })
    }
}

pub struct Rx {
    wire: Rc<RefCell<Wire>>,
    buf: Vec<u8>,
}

pub struct Tx {
    wire: Rc<RefCell<Wire>>,
    q: usize,
}

impl phy::RxToken for Rx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        let r = f(&self.buf);
        self.wire.borrow_mut().free.push(self.buf);
        r
    }
}

impl phy::TxToken for Tx {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut buf = self.wire.borrow_mut().free.pop().unwrap_or_default();
        buf.resize(len, 0);
        let r = f(&mut buf);
        let mut w = self.wire.borrow_mut();
        w.note_tcp(&buf);
        w.frames += 1;
        w.queues[self.q].push_back(buf);
        r
    }
}

impl phy::Device for Port {
    type RxToken<'a> = Rx;
    type TxToken<'a> = Tx;

    fn receive(&mut self, _t: Instant) -> Option<(Rx, Tx)> {
        let buf = self.wire.borrow_mut().queues[1 - self.tx].pop_front()?;
        Some((
            Rx { wire: self.wire.clone(), buf },
            Tx { wire: self.wire.clone(), q: self.tx },
        ))
    }

    fn transmit(&mut self, _t: Instant) -> Option<Tx> {
        Some(Tx { wire: self.wire.clone(), q: self.tx })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = MTU + ETH_HDR;
        caps
    }
}
