//! The floor under HTTP/3's CPU per byte against HTTP/2 over TLS, on this kernel: what it
//! costs a sender, at the least, to push a mebibyte through each transport.
//!
//! ```text
//! cargo run --release -p fibra-quic --example transport_floor -- [--rounds 8] [--mib 256]
//! ```
//!
//! Neither side has a protocol engine. The sender thread is pinned to CPU 0; the receivers,
//! which read and discard, to CPU 1. Rounds alternate between the two ways:
//!
//! - **TLS over TCP**, as an HTTP/2 server's rustls writes a body: each 16,384 bytes are
//!   copied into a record buffer with their content-type byte, sealed in place (AES-256-GCM,
//!   the record header as associated data, a nonce from the record number), and written to
//!   the socket, one record per `write`.
//! - **QUIC packets over UDP with GSO**, as fibra-quic sends under the issue's cap of 1,452
//!   bytes per datagram: each packet has a short header (flags, an 8-byte connection ID, a
//!   2-byte packet number) and a STREAM frame header (8 bytes), then as much of the body as
//!   fits with the 16-byte tag; the body is copied in, sealed in place (AES-256-GCM), and
//!   the header is protected with a mask from a sample of the ciphertext (AES-256, RFC 9001
//!   §5.4). 45 packets make a train, sent with one `sendmsg` and `UDP_SEGMENT` (the longest
//!   the kernel takes at this size); the receiver reads with `UDP_GRO`, as fibra-quic does.
//!
//! What a real QUIC sender does on top (ACK frames to receive and process, loss detection,
//! stream and flow-control bookkeeping, pacing) is left out, as is HTTP/2's framing: this is
//! the floor of each, crypto, copies and the kernel.
//!
//! CPU is the sender thread's own (`CLOCK_THREAD_CPUTIME_ID`): its user time and the system
//! time of its calls, which on loopback include the receive path's softirq work up to the
//! receiver's socket queue. Prints, per round, the nanoseconds of CPU per MiB of body for
//! each, then the medians and the median of the per-round ratios UDP ÷ TCP.

use aws_lc_rs::aead::quic::{HeaderProtectionKey, AES_256};
use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The issue's cap on a datagram's payload.
const DATAGRAM: usize = 1_452;
/// Packets per GSO train at that size (`65_507 / 1_452`, as fibra-quic's `Outbox`).
const TRAIN: usize = 45;
/// Short header: flags, destination connection ID (8 bytes), packet number (2 bytes).
const SHORT_HEADER: usize = 1 + 8 + 2;
/// A STREAM frame's header: type, stream id, an 8-byte-varint offset... taken as 8 bytes.
const STREAM_FRAME_HEADER: usize = 8;
const TAG: usize = 16;
/// Body bytes per packet.
const PACKET_BODY: usize = DATAGRAM - SHORT_HEADER - STREAM_FRAME_HEADER - TAG;
/// TLS's largest record plaintext.
const RECORD_BODY: usize = 16_384;
const MIB: usize = 1 << 20;

fn main() {
    let mut rounds = 8;
    let mut mib = 256;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let value = args.next().and_then(|v| v.parse().ok());
        match (a.as_str(), value) {
            ("--rounds", Some(v)) => rounds = v,
            ("--mib", Some(v)) => mib = v,
            _ => {
                eprintln!("usage: transport_floor [--rounds N] [--mib M]");
                std::process::exit(2);
            }
        }
    }
    let body = vec![0x5au8; MIB];
    let stop = Arc::new(AtomicBool::new(false));
    let (tcp_addr, tcp_sink) = tcp_sink(stop.clone());
    let (udp_addr, udp_sink) = udp_sink(stop.clone());
    pin_to(0);
    let mut tcp = TcpStream::connect(tcp_addr).expect("connect to the TCP sink");
    let udp = UdpSocket::bind("127.0.0.1:0").expect("bind a UDP socket");
    udp.connect(udp_addr).expect("connect the UDP socket");
    let mut sender = Sender::new();
    // Warm-up: one round of each.
    sender.tcp(&mut tcp, &body, mib.min(64));
    sender.udp(&udp, &body, mib.min(64));
    let (mut tcps, mut udps, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    println!("round  tcp_tls_ns_per_mib  udp_quic_ns_per_mib  ratio");
    for round in 0..rounds {
        let dropped_before = udp_receive_buffer_errors();
        let (t, u) = if round % 2 == 0 {
            let t = sender.tcp(&mut tcp, &body, mib);
            (t, sender.udp(&udp, &body, mib))
        } else {
            let u = sender.udp(&udp, &body, mib);
            (sender.tcp(&mut tcp, &body, mib), u)
        };
        println!("{round:5}  {t:18.0}  {u:19.0}  {:.3}", u / t);
        // Datagrams the receiver dropped would have cost the sender less: say so.
        let dropped = udp_receive_buffer_errors() - dropped_before;
        if dropped > 0 {
            println!("       (this machine's UDP receive buffers overflowed {dropped} times)");
        }
        tcps.push(t);
        udps.push(u);
        ratios.push(u / t);
    }
    println!(
        "median: tcp_tls {:.0} ns/MiB, udp_quic {:.0} ns/MiB, ratio {:.3} (range {:.3}-{:.3})",
        median(&mut tcps),
        median(&mut udps),
        median(&mut ratios),
        ratios.iter().cloned().fold(f64::INFINITY, f64::min),
        ratios.iter().cloned().fold(0.0, f64::max),
    );
    stop.store(true, Ordering::Relaxed);
    drop(tcp);
    // The UDP sink wakes on its read timeout.
    tcp_sink.join().unwrap();
    udp_sink.join().unwrap();
}

/// The sender's keys and buffers.
struct Sender {
    key: LessSafeKey,
    hp: HeaderProtectionKey,
    iv: [u8; 12],
    record: Vec<u8>,
    train: Vec<u8>,
    seq: u64,
}

impl Sender {
    fn new() -> Sender {
        let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &[7; 32]).unwrap());
        let hp = HeaderProtectionKey::new(&AES_256, &[9; 32]).unwrap();
        Sender {
            key,
            hp,
            iv: [3; 12],
            record: Vec::with_capacity(5 + RECORD_BODY + 1 + TAG),
            train: vec![0; DATAGRAM * TRAIN],
            seq: 0,
        }
    }

    fn nonce(&mut self) -> Nonce {
        let mut n = self.iv;
        for (b, s) in n[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *b ^= s;
        }
        self.seq += 1;
        Nonce::assume_unique_for_key(n)
    }

    /// CPU ns per MiB to send `mib` MiB as TLS records.
    fn tcp(&mut self, tcp: &mut TcpStream, body: &[u8], mib: usize) -> f64 {
        let start = thread_cpu_ns();
        for _ in 0..mib {
            for chunk in body.chunks(RECORD_BODY) {
                self.record.clear();
                let len = (chunk.len() + 1 + TAG) as u16;
                let header = [23, 3, 3, (len >> 8) as u8, len as u8];
                self.record.extend_from_slice(&header);
                self.record.extend_from_slice(chunk);
                self.record.push(23);
                let nonce = self.nonce();
                let tag = self
                    .key
                    .seal_in_place_separate_tag(nonce, Aad::from(header), &mut self.record[5..])
                    .unwrap();
                self.record.extend_from_slice(tag.as_ref());
                tcp.write_all(&self.record).expect("write to the TCP sink");
            }
        }
        (thread_cpu_ns() - start) as f64 / mib as f64
    }

    /// CPU ns per MiB to send `mib` MiB as QUIC packets in GSO trains.
    fn udp(&mut self, udp: &UdpSocket, body: &[u8], mib: usize) -> f64 {
        let start = thread_cpu_ns();
        let mut in_train = 0;
        for _ in 0..mib {
            for chunk in body.chunks(PACKET_BODY) {
                let seq = self.seq;
                let nonce = self.nonce();
                let packet = &mut self.train[in_train * DATAGRAM..][..DATAGRAM];
                let (header, rest) = packet.split_at_mut(SHORT_HEADER);
                header[0] = 0x41;
                header[1..9].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
                header[9..11].copy_from_slice(&(seq as u16).to_be_bytes());
                let payload_len = STREAM_FRAME_HEADER + chunk.len();
                rest[..STREAM_FRAME_HEADER].copy_from_slice(&[0x0e, 0x04, 0xc0, 0, 0, 0, 0, 0]);
                rest[STREAM_FRAME_HEADER..payload_len].copy_from_slice(chunk);
                let tag = self
                    .key
                    .seal_in_place_separate_tag(
                        nonce,
                        Aad::from(&*header),
                        &mut rest[..payload_len],
                    )
                    .unwrap();
                rest[payload_len..payload_len + TAG].copy_from_slice(tag.as_ref());
                // Header protection: the sample starts 4 bytes after the packet number's start.
                let sample_at = 4 - 2;
                let mask = self.hp.new_mask(&rest[sample_at..sample_at + 16]).unwrap();
                header[0] ^= mask[0] & 0x1f;
                header[9] ^= mask[1];
                header[10] ^= mask[2];
                in_train += 1;
                let datagram_len = SHORT_HEADER + payload_len + TAG;
                // Only the last packet of a train may be short.
                if in_train == TRAIN || datagram_len < DATAGRAM {
                    send_train(udp, &self.train[..(in_train - 1) * DATAGRAM + datagram_len]);
                    in_train = 0;
                }
            }
        }
        if in_train > 0 {
            send_train(udp, &self.train[..in_train * DATAGRAM]);
        }
        (thread_cpu_ns() - start) as f64 / mib as f64
    }
}

/// One `sendmsg` of `bytes`, cut by the kernel into datagrams of [`DATAGRAM`] bytes.
fn send_train(udp: &UdpSocket, bytes: &[u8]) {
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) } as usize;
    let mut control = vec![0u8; space];
    // SAFETY: an all-zero msghdr is valid; the fields set point at live buffers.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space;
    // SAFETY: msg_control points at `space` bytes, room for one cmsg with a u16; the first
    // header is inside it and its data is written within it.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_UDP;
        (*cmsg).cmsg_type = libc::UDP_SEGMENT;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as usize;
        (libc::CMSG_DATA(cmsg) as *mut u16).write_unaligned(DATAGRAM as u16);
    }
    loop {
        // SAFETY: `msg` and what it points at live across the call; the socket is open.
        let n = unsafe { libc::sendmsg(udp.as_raw_fd(), &msg, 0) };
        if n >= 0 {
            return;
        }
        let e = std::io::Error::last_os_error();
        // A full socket buffer: the receiver is behind; try again.
        if e.raw_os_error() != Some(libc::ENOBUFS) && e.raw_os_error() != Some(libc::EAGAIN) {
            panic!("sendmsg with UDP_SEGMENT: {e}");
        }
        std::thread::yield_now();
    }
}

fn tcp_sink(stop: Arc<AtomicBool>) -> (std::net::SocketAddr, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        pin_to(1);
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 256 * 1024];
        while !stop.load(Ordering::Relaxed) {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    });
    (addr, t)
}

fn udp_sink(stop: Arc<AtomicBool>) -> (std::net::SocketAddr, std::thread::JoinHandle<()>) {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap();
    let on: libc::c_int = 1;
    let rcvbuf: libc::c_int = 8 << 20;
    // SAFETY: setsockopt with pointers to live c_ints of the size given.
    unsafe {
        let fd = sock.as_raw_fd();
        let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        libc::setsockopt(
            fd,
            libc::SOL_UDP,
            libc::UDP_GRO,
            (&on as *const libc::c_int).cast(),
            len,
        );
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&rcvbuf as *const libc::c_int).cast(),
            len,
        );
    }
    sock.set_read_timeout(Some(std::time::Duration::from_millis(200)))
        .unwrap();
    let t = std::thread::spawn(move || {
        pin_to(1);
        let mut buf = vec![0u8; 65_536];
        while !stop.load(Ordering::Relaxed) {
            let _ = sock.recv(&mut buf);
        }
    });
    (addr, t)
}

/// `RcvbufErrors` of `/proc/net/snmp`'s `Udp:` lines: datagrams dropped for a full buffer.
fn udp_receive_buffer_errors() -> u64 {
    let text = std::fs::read_to_string("/proc/net/snmp").unwrap_or_default();
    let mut lines = text.lines().filter(|l| l.starts_with("Udp:"));
    let (Some(names), Some(values)) = (lines.next(), lines.next()) else {
        return 0;
    };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == "RcvbufErrors")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

/// Pins the calling thread to `cpu`.
fn pin_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes inside it; the call reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// This thread's CPU time in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
