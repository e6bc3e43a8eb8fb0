//! `UdpSocket::send_many`/`recv_many` over loopback: several datagrams and their addresses per
//! call, GSO trains arriving as separate datagrams, GRO reporting the segment size, and the
//! fallback without GSO giving the receiver the same datagrams. GSO and GRO are checked where
//! the kernel has them (the tests say so on stdout where it does not).

mod util;

use fibra::net::{InDatagram, OutDatagram, UdpSocket};
use std::io::ErrorKind;
use std::net::SocketAddr;
use util::{within, PATIENCE};

fn rt() -> fibra::Runtime {
    fibra::Runtime::builder().workers(1).build().unwrap()
}

fn loopback() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s
}

/// `len` bytes that differ from datagram to datagram.
fn payload(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
        .collect()
}

/// Sends all of `msgs`, calling `send_many` again for what a call left.
fn send_all(s: &UdpSocket, mut msgs: &[OutDatagram<'_>]) {
    for _ in 0..10_000 {
        if msgs.is_empty() {
            return;
        }
        let n = s.send_many(msgs).unwrap();
        assert!(n >= 1 && n <= msgs.len(), "send_many said {n}");
        msgs = &msgs[n..];
    }
    panic!("send_many made no progress");
}

/// One received entry: sender, bytes, GRO segment size.
type Entry = (SocketAddr, Vec<u8>, Option<usize>);

/// Receives entries with `recv_many` until they hold `datagrams` datagrams in all.
fn recv_entries(s: &UdpSocket, datagrams: usize) -> Vec<Entry> {
    let mut storage = vec![vec![0u8; 65536]; 8];
    let mut entries = Vec::new();
    let mut seen = 0;
    while seen < datagrams {
        let mut batch: Vec<InDatagram<'_>> = storage
            .iter_mut()
            .map(|b| InDatagram::new(b.as_mut_slice()))
            .collect();
        let n = s.recv_many(&mut batch).unwrap();
        assert!(n >= 1 && n <= batch.len());
        for d in &batch[..n] {
            assert!(!d.truncated());
            seen += d.segments().count();
            entries.push((d.addr().unwrap(), d.data().to_vec(), d.segment_size()));
        }
    }
    assert_eq!(seen, datagrams, "more datagrams than sent");
    entries
}

/// The datagrams in `entries`, GRO entries cut at their segment size.
fn datagrams(entries: &[Entry]) -> Vec<(SocketAddr, Vec<u8>)> {
    let mut out = Vec::new();
    for (addr, data, seg) in entries {
        let size = seg.unwrap_or(data.len()).max(1);
        if data.is_empty() {
            out.push((*addr, Vec::new()));
        }
        out.extend(data.chunks(size).map(|c| (*addr, c.to_vec())));
    }
    out
}

#[test]
fn several_datagrams_and_their_addresses_per_call() {
    within("udp send_many/recv_many", || {
        rt().block_on(|| {
            let rx1 = loopback();
            let rx2 = loopback();
            let (a1, a2) = (rx1.local_addr().unwrap(), rx2.local_addr().unwrap());
            let tx = loopback();
            let from = tx.local_addr().unwrap();
            let bodies: Vec<Vec<u8>> = (0..40).map(|i| payload(10 + i, i as u8)).collect();
            // Alternating destinations; 40 entries take two calls at least (32 per call).
            let msgs: Vec<OutDatagram<'_>> = bodies
                .iter()
                .enumerate()
                .map(|(i, b)| OutDatagram::to(if i % 2 == 0 { a1 } else { a2 }, b))
                .collect();
            send_all(&tx, &msgs);
            let got1 = datagrams(&recv_entries(&rx1, 20));
            let got2 = datagrams(&recv_entries(&rx2, 20));
            let want = |parity: usize| -> Vec<(SocketAddr, Vec<u8>)> {
                bodies
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| i % 2 == parity)
                    .map(|(_, b)| (from, b.clone()))
                    .collect()
            };
            assert_eq!(got1, want(0));
            assert_eq!(got2, want(1));

            // A connected socket's entries need no address; several senders to one receiver.
            let other = loopback();
            tx.connect(a1).unwrap();
            send_all(
                &tx,
                &[OutDatagram::connected(b"c1"), OutDatagram::connected(b"")],
            );
            send_all(&other, &[OutDatagram::to(a1, b"o1")]);
            let mut got = datagrams(&recv_entries(&rx1, 3));
            got.sort();
            let mut want = vec![
                (from, b"c1".to_vec()),
                (from, Vec::new()),
                (other.local_addr().unwrap(), b"o1".to_vec()),
            ];
            want.sort();
            assert_eq!(got, want);
        })
    });
}

#[test]
fn recv_many_parks_its_fiber_and_works_on_a_plain_thread() {
    within("udp recv_many parks", || {
        rt().block_on(|| {
            let rx = std::sync::Arc::new(loopback());
            let addr = rx.local_addr().unwrap();
            let (ready_tx, ready_rx) = fibra::sync::oneshot::channel();
            let receiver = {
                let rx = rx.clone();
                fibra::spawn(move || {
                    ready_tx.send(()).unwrap();
                    datagrams(&recv_entries(&rx, 2))
                })
            };
            ready_rx.recv().unwrap();
            let tx = loopback();
            send_all(
                &tx,
                &[OutDatagram::to(addr, b"a"), OutDatagram::to(addr, b"b")],
            );
            let got: Vec<Vec<u8>> = receiver.join().unwrap().into_iter().map(|d| d.1).collect();
            assert_eq!(got, [b"a".to_vec(), b"b".to_vec()]);
        });
        // No runtime at all.
        let rx = loopback();
        let addr = rx.local_addr().unwrap();
        let t = std::thread::spawn(move || datagrams(&recv_entries(&rx, 1)));
        send_all(&loopback(), &[OutDatagram::to(addr, b"thread")]);
        assert_eq!(t.join().unwrap()[0].1, b"thread");
    });
}

/// Sends a 3,500-byte train in segments of 1,000 to `to` from `tx`, and what a receiver
/// without GRO must see: four datagrams, the last of 500 bytes.
fn send_train(tx: &UdpSocket, to: SocketAddr) -> Vec<(SocketAddr, Vec<u8>)> {
    let body = payload(3500, 3);
    send_all(tx, &[OutDatagram::to(to, &body).with_segment_size(1000)]);
    let from = tx.local_addr().unwrap();
    body.chunks(1000).map(|c| (from, c.to_vec())).collect()
}

#[test]
fn a_gso_train_arrives_as_separate_datagrams() {
    within("udp GSO", || {
        rt().block_on(|| {
            let tx = loopback();
            if tx.max_gso_segments() == 1 {
                println!("no UDP GSO in this kernel: only the fallback is tested");
            } else {
                assert_eq!(tx.max_gso_segments(), 64);
            }
            let rx = loopback();
            let want = send_train(&tx, rx.local_addr().unwrap());
            let entries = recv_entries(&rx, 4);
            assert!(entries.iter().all(|e| e.2.is_none()), "no GRO asked for");
            assert_eq!(datagrams(&entries), want);
            let sizes: Vec<usize> = want.iter().map(|d| d.1.len()).collect();
            assert_eq!(sizes, [1000, 1000, 1000, 500]);
        })
    });
}

#[test]
fn the_fallback_without_gso_sends_the_same_datagrams() {
    within("udp GSO fallback", || {
        rt().block_on(|| {
            let tx = loopback();
            tx.set_gso(false);
            assert_eq!(tx.max_gso_segments(), 1);
            let rx = loopback();
            let want = send_train(&tx, rx.local_addr().unwrap());
            assert_eq!(datagrams(&recv_entries(&rx, 4)), want);

            // More segments than one system call takes (32) and than GSO allows (64), behind
            // a plain entry and before a second train: all go, in order, each entry whole.
            let to = rx.local_addr().unwrap();
            let long = payload(70 * 10 + 3, 9);
            let short = payload(25, 4);
            let msgs = [
                OutDatagram::to(to, b"first"),
                OutDatagram::to(to, &long).with_segment_size(10),
                OutDatagram::to(to, &short).with_segment_size(10),
            ];
            let mut rest = &msgs[..];
            while !rest.is_empty() {
                let n = tx.send_many(rest).unwrap();
                assert!(n >= 1 && n <= rest.len());
                rest = &rest[n..];
            }
            let from = tx.local_addr().unwrap();
            let mut want = vec![(from, b"first".to_vec())];
            want.extend(long.chunks(10).map(|c| (from, c.to_vec())));
            want.extend(short.chunks(10).map(|c| (from, c.to_vec())));
            assert_eq!(datagrams(&recv_entries(&rx, want.len())), want);

            // With GSO, a train over its limit is refused up front, naming the limit.
            tx.set_gso(true);
            if tx.max_gso_segments() > 1 {
                let e = tx.send_many(&msgs[1..]).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::InvalidInput);
                assert!(e.to_string().contains("64"), "{e}");
                // Behind a good entry, the bad one ends the batch: the good one goes.
                assert_eq!(tx.send_many(&msgs[..2]).unwrap(), 1);
                let got = datagrams(&recv_entries(&rx, 1));
                assert_eq!(got, [(from, b"first".to_vec())]);
            }
            let e = tx
                .send_many(&[OutDatagram::to(to, b"x").with_segment_size(0)])
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput);
        })
    });
}

#[test]
fn gro_reports_the_segment_size_and_without_it_the_datagrams_are_the_same() {
    within("udp GRO", || {
        rt().block_on(|| {
            let tx = loopback();
            let gro = loopback();
            let plain = loopback();
            if !gro.set_gro(true).unwrap() {
                println!("no UDP GRO in this kernel: not tested");
                return;
            }
            let want = send_train(&tx, gro.local_addr().unwrap());
            assert_eq!(send_train(&tx, plain.local_addr().unwrap()), want);
            let coalesced = recv_entries(&gro, 4);
            let separate = recv_entries(&plain, 4);
            assert_eq!(datagrams(&coalesced), want);
            assert_eq!(datagrams(&separate), want);
            if tx.max_gso_segments() > 1 {
                // Loopback hands a GSO train to a GRO socket whole.
                assert_eq!(coalesced.len(), 1, "one coalesced entry");
                assert_eq!(coalesced[0].1.len(), 3500);
                assert_eq!(coalesced[0].2, Some(1000));
            }
            assert_eq!(separate.len(), 4);
            assert!(!gro.set_gro(false).unwrap());
        })
    });
}

/// An entry made with `InDatagram::appending` receives onto the end of its `Vec`, in the
/// spare capacity, and the `Vec` grows by what came: by no more than its room when the
/// datagram is longer (then the entry says it was truncated).
#[test]
fn appending_entries_receive_into_a_vecs_spare_capacity() {
    within("udp appending", || {
        rt().block_on(|| {
            let tx = loopback();
            let rx = loopback();
            let to = rx.local_addr().unwrap();
            let long = payload(1500, 3);
            let mut roomy = b"ab".to_vec();
            roomy.reserve_exact(2000);
            let mut cramped: Vec<u8> = Vec::with_capacity(100);
            let room = cramped.capacity();
            assert!(room < long.len());
            send_all(
                &tx,
                &[OutDatagram::to(to, b"hello"), OutDatagram::to(to, &long)],
            );
            let mut got = 0;
            for _ in 0..100 {
                let mut batch = match got {
                    0 => vec![
                        InDatagram::appending(&mut roomy),
                        InDatagram::appending(&mut cramped),
                    ],
                    _ => vec![InDatagram::appending(&mut cramped)],
                };
                let n = rx.recv_many(&mut batch).unwrap();
                for d in &batch[..n] {
                    match got {
                        0 => {
                            assert_eq!(d.data(), b"hello");
                            assert!(!d.truncated());
                        }
                        _ => {
                            assert_eq!(d.data(), &long[..room]);
                            assert!(d.truncated());
                        }
                    }
                    got += 1;
                }
                if got == 2 {
                    break;
                }
            }
            assert_eq!(got, 2);
            assert_eq!(roomy, b"abhello");
            assert_eq!(cramped, &long[..room]);
        })
    });
}
