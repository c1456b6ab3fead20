//! Two smoltcp hosts on one in-memory link, as tern-echo --driver mem sets
//! up its two stacks: client 198.18.0.1, server 198.18.0.2, /24.

use std::cell::RefCell;
use std::rc::Rc;

use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::socket::tcp;
use smoltcp::time::{Duration, Instant};
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr, Ipv4Address};

use crate::link::{Port, Wire};

pub const CLIENT_IP: Ipv4Address = Ipv4Address::new(198, 18, 0, 1);
pub const SERVER_IP: Ipv4Address = Ipv4Address::new(198, 18, 0, 2);
pub const SERVER_PORT: u16 = 7007;
pub const CLIENT_PORT_BASE: u16 = 49152;

pub struct Host {
    pub iface: Interface,
    pub dev: Port,
    pub sockets: SocketSet<'static>,
}

impl Host {
    fn new(mut dev: Port, mac: [u8; 6], ip: Ipv4Address, seed: u64) -> Host {
        let mut cfg = Config::new(HardwareAddress::Ethernet(EthernetAddress(mac)));
        cfg.random_seed = seed;
        let mut iface = Interface::new(cfg, &mut dev, Instant::now());
        iface.update_ip_addrs(|a| {
            a.push(IpCidr::new(IpAddress::Ipv4(ip), 24)).expect("address table full");
        });
        Host { iface, dev, sockets: SocketSet::new(vec![]) }
    }

    /// Runs the stack once: everything received, every timer, everything
    /// the sockets have to send. True when a socket may have changed.
    pub fn poll(&mut self) -> bool {
        self.iface.poll(Instant::now(), &mut self.dev, &mut self.sockets)
            != smoltcp::iface::PollResult::None
    }

    pub fn sock(&mut self, h: SocketHandle) -> &mut tcp::Socket<'static> {
        self.sockets.get_mut::<tcp::Socket>(h)
    }
}

/// A TCP socket with `buf` bytes of receive and send buffer, no Nagle (as
/// the kern-* twins set TCP_NODELAY), CUBIC congestion control.
fn socket(buf: usize) -> tcp::Socket<'static> {
    let mut s = tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0; buf]),
        tcp::SocketBuffer::new(vec![0; buf]),
    );
    s.set_nagle_enabled(false);
    s.set_congestion_control(tcp::CongestionControl::Cubic);
    s.set_ack_delay(Some(Duration::from_millis(10)));
    s
}

/// The two hosts, `conns` connected client/server socket pairs (client i at
/// port CLIENT_PORT_BASE + i), and the wire between them.
pub struct Pair {
    pub client: Host,
    pub server: Host,
    pub csocks: Vec<SocketHandle>,
    pub ssocks: Vec<SocketHandle>,
    pub wire: Rc<RefCell<Wire>>,
}

impl Pair {
    pub fn connect(conns: usize, buf: usize) -> Result<Pair, String> {
        let wire = Wire::new(CLIENT_PORT_BASE, conns);
        let (pc, ps) = Port::pair(&wire);
        let mut client = Host::new(pc, [0x02, 0, 0, 0, 0, 1], CLIENT_IP, 1);
        let mut server = Host::new(ps, [0x02, 0, 0, 0, 0, 2], SERVER_IP, 2);
        let mut ssocks = Vec::with_capacity(conns);
        let mut csocks = Vec::with_capacity(conns);
        for _ in 0..conns {
            let mut s = socket(buf);
            s.listen(SERVER_PORT).map_err(|e| format!("listen: {e}"))?;
            ssocks.push(server.sockets.add(s));
        }
        for i in 0..conns {
            let mut s = socket(buf);
            let remote = (IpAddress::Ipv4(SERVER_IP), SERVER_PORT);
            s.connect(client.iface.context(), remote, CLIENT_PORT_BASE + i as u16)
                .map_err(|e| format!("connect: {e}"))?;
            csocks.push(client.sockets.add(s));
        }
        let mut p = Pair { client, server, csocks, ssocks, wire };
        let start = std::time::Instant::now();
        loop {
            p.poll();
            let up = |h: &mut Host, v: &[SocketHandle]| {
                v.iter().all(|&s| h.sock(s).state() == tcp::State::Established)
            };
            if up(&mut p.client, &p.csocks.clone()) && up(&mut p.server, &p.ssocks.clone()) {
                return Ok(p);
            }
            if start.elapsed().as_secs() > 10 {
                return Err("connections not established within 10 s".into());
            }
        }
    }

    /// One round of both stacks.
    pub fn poll(&mut self) {
        self.client.poll();
        self.server.poll();
    }

    pub fn retransmits(&self) -> u64 {
        self.wire.borrow().retransmits
    }
}
