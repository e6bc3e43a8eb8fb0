//! The calls a fiber that owns a UDP socket and also serves other fibers and timers needs (a
//! QUIC endpoint's driver): `try_recv_many` and `try_send_many`, which never park;
//! `readable_or_notified_until` and `writable_or_notified_until`, which wake for the socket, a
//! notification or a deadline; and `set_dont_fragment` for path MTU discovery.

mod util;

use fibra::net::{InDatagram, OutDatagram, UdpSocket};
use fibra::sync::Notify;
use std::io::ErrorKind;
use std::sync::Arc;
use std::time::{Duration, Instant};
use util::{within, PATIENCE};

fn loopback() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s
}

/// `try_recv_many` into one 64 KiB buffer: the bytes of the first entry, or the error.
fn try_recv_one(s: &UdpSocket) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 65536];
    let mut batch = [InDatagram::new(&mut buf)];
    let n = s.try_recv_many(&mut batch)?;
    assert_eq!(n, 1);
    Ok(batch[0].data().to_vec())
}

#[test]
fn readable_or_notified_until_wakes_for_a_notification_a_datagram_and_the_deadline() {
    let results = within("readable_or_notified_until", || {
        let rt = fibra::Runtime::builder().workers(2).build().unwrap();
        rt.block_on(|| {
            let rx = loopback();
            let tx = loopback();
            let to = rx.local_addr().unwrap();
            let notify = Arc::new(Notify::new());
            let mut out = Vec::new();
            // A new socket counts as readable until a receive finds it empty.
            assert_eq!(try_recv_one(&rx).unwrap_err().kind(), ErrorKind::WouldBlock);
            // Found empty once, it says so again without a system call.
            assert_eq!(try_recv_one(&rx).unwrap_err().kind(), ErrorKind::WouldBlock);

            // 1. Notified by a fiber on another worker while parked (no deadline).
            let n = notify.clone();
            let waker = fibra::fiber::Builder::new()
                .worker(1)
                .spawn(move || {
                    fibra::time::sleep(Duration::from_millis(20));
                    n.notify_one();
                })
                .unwrap();
            out.push(rx.readable_or_notified_until(&notify, None).unwrap());
            waker.join().unwrap();

            // 2. A datagram: not notified, and `try_recv_many` gets it.
            tx.send_to(b"ping", to).unwrap();
            let far = Instant::now() + PATIENCE;
            out.push(rx.readable_or_notified_until(&notify, Some(far)).unwrap());
            assert_eq!(try_recv_one(&rx).unwrap(), b"ping");
            assert_eq!(try_recv_one(&rx).unwrap_err().kind(), ErrorKind::WouldBlock);

            // 3. A permit stored while nobody waited is taken at once, even with a deadline
            // that has passed.
            notify.notify_one();
            let past = Instant::now() - Duration::from_millis(5);
            out.push(rx.readable_or_notified_until(&notify, Some(past)).unwrap());

            // 4. Nothing: the deadline ends the wait, never before it.
            let start = Instant::now();
            let until = start + Duration::from_millis(30);
            let e = rx
                .readable_or_notified_until(&notify, Some(until))
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut);
            assert!(
                Instant::now() >= until,
                "woke {:?} early",
                until - Instant::now()
            );

            // 5. The earlier of the deadline and the read timeout ends it.
            rx.set_read_timeout(Some(Duration::from_millis(20)))
                .unwrap();
            let start = Instant::now();
            let e = rx
                .readable_or_notified_until(&notify, Some(start + PATIENCE))
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut);
            assert!(start.elapsed() >= Duration::from_millis(20));
            out
        })
    });
    assert_eq!(results, vec![true, false, true]);
}

#[test]
fn the_waits_work_on_a_plain_thread() {
    within("readable_or_notified_until on a thread", || {
        let rx = loopback();
        let tx = loopback();
        let notify = Notify::new();
        notify.notify_one();
        assert!(rx.readable_or_notified_until(&notify, None).unwrap());
        tx.send_to(b"x", rx.local_addr().unwrap()).unwrap();
        assert!(!rx.readable_or_notified_until(&notify, None).unwrap());
        assert_eq!(try_recv_one(&rx).unwrap(), b"x");
        let until = Instant::now() + Duration::from_millis(30);
        let e = rx
            .readable_or_notified_until(&notify, Some(until))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
        assert!(Instant::now() >= until);
        assert!(!tx.writable_or_notified_until(&notify, None).unwrap());
    });
}

#[test]
fn try_send_many_sends_trains_with_and_without_gso() {
    let got = within("try_send_many", || {
        let rt = fibra::Runtime::builder().workers(1).build().unwrap();
        rt.block_on(|| {
            let rx = loopback();
            let tx = loopback();
            let to = rx.local_addr().unwrap();
            let notify = Notify::new();
            let payload: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
            let mut got = Vec::new();
            for gso in [true, false] {
                tx.set_gso(gso);
                // A fresh socket counts as writable.
                assert!(!tx.writable_or_notified_until(&notify, None).unwrap());
                let msgs = [
                    OutDatagram::to(to, b"one"),
                    OutDatagram::to(to, &payload).with_segment_size(1200),
                ];
                let mut left = &msgs[..];
                for _ in 0..1000 {
                    if left.is_empty() {
                        break;
                    }
                    match tx.try_send_many(left) {
                        Ok(n) => left = &left[n..],
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {
                            tx.writable_or_notified_until(&notify, None).unwrap();
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                assert!(left.is_empty());
                // Four datagrams: "one", then 1200 + 1200 + 600 bytes.
                let mut sizes = Vec::new();
                while sizes.len() < 4 {
                    let mut buf = [0u8; 2048];
                    let (n, _) = rx.recv_from(&mut buf).unwrap();
                    sizes.push(n);
                }
                got.push(sizes);
            }
            got
        })
    });
    assert_eq!(got, vec![vec![3, 1200, 1200, 600]; 2]);
}

/// `getsockopt(level, name)` of an `int`.
fn get_int(s: &UdpSocket, level: libc::c_int, name: libc::c_int) -> i32 {
    use std::os::fd::AsRawFd;
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are valid for writes and `len` says `v` holds an int.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            level,
            name,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
    v
}

#[test]
fn dont_fragment_sets_pmtu_probe_and_back() {
    let s = loopback();
    s.set_dont_fragment(true).unwrap();
    assert_eq!(
        get_int(&s, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER),
        libc::IP_PMTUDISC_PROBE
    );
    // Datagrams still leave (the loopback MTU is 64 KiB).
    let rx = loopback();
    s.send_to(&[7u8; 1452], rx.local_addr().unwrap()).unwrap();
    let mut buf = [0u8; 2048];
    assert_eq!(rx.recv_from(&mut buf).unwrap().0, 1452);
    s.set_dont_fragment(false).unwrap();
    assert_eq!(
        get_int(&s, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER),
        libc::IP_PMTUDISC_WANT
    );
    // IPv6, where the machine has it.
    if let Ok(v6) = UdpSocket::bind("[::1]:0") {
        v6.set_dont_fragment(true).unwrap();
        assert_eq!(
            get_int(&v6, libc::IPPROTO_IPV6, libc::IPV6_MTU_DISCOVER),
            libc::IPV6_PMTUDISC_PROBE
        );
    } else {
        println!("no IPv6 loopback here: the IPv6 option is not checked");
    }
}
