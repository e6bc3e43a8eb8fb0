//! `net::Pollable`: a descriptor fibra did not make (a pipe here) registered with the worker's
//! poller. A fiber parks in `read_with` until another fiber or a plain thread writes;
//! `try_read_with` never waits and, once it has seen `WouldBlock`, does not run its operation
//! again until the poller reports a new edge; the read timeout is honoured; a plain thread
//! waits in `poll(2)`.

mod util;

use fibra::net::Pollable;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A pipe: (read end, write end), both close-on-exec.
fn pipe() -> (File, File) {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(r, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
    unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
}

#[test]
fn a_fiber_waits_for_a_pipe_and_try_read_is_free_until_an_edge() {
    util::within("pollable", || {
        let rt = fibra::Runtime::builder().workers(2).build().unwrap();
        rt.block_on(|| {
            let (r, mut w) = pipe();
            let r = Pollable::new(r).unwrap();
            r.set_read_timeout(Some(util::PATIENCE)).unwrap();
            let calls = AtomicUsize::new(0);
            let read = |mut f: &File, buf: &mut [u8]| {
                calls.fetch_add(1, Ordering::Relaxed);
                f.read(buf)
            };
            let mut buf = [0u8; 16];

            // Nothing written: the first try runs the read and sees WouldBlock ...
            let e = r.try_read_with(|f| read(f, &mut buf)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::WouldBlock);
            assert_eq!(calls.load(Ordering::Relaxed), 1);
            // ... and the next ones answer from the readiness word, without the read.
            for _ in 0..10 {
                let e = r.try_read_with(|f| read(f, &mut buf)).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::WouldBlock);
            }
            assert_eq!(calls.load(Ordering::Relaxed), 1);

            // A writer on another fiber: this one parks until the data is there.
            let writer = fibra::spawn(move || {
                w.write_all(b"hello").unwrap();
                w
            });
            let n = r.read_with(|f| read(f, &mut buf)).unwrap();
            assert_eq!(&buf[..n], b"hello");
            let mut w = writer.join().unwrap();

            // Data written while nobody waits: a bounded loop of try_read_with sees it once
            // the poller has reported the edge.
            w.write_all(b"again").unwrap();
            let mut got = Vec::new();
            for _ in 0..100_000 {
                match r.try_read_with(|f| read(f, &mut buf)) {
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        if got == b"again" {
                            break;
                        }
                        fibra::yield_now();
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            assert_eq!(got, b"again");

            // The timeout: nothing more is written.
            r.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
            let e = r.read_with(|f| read(f, &mut buf)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut);

            // End of file once the writer is gone.
            drop(w);
            r.set_read_timeout(Some(util::PATIENCE)).unwrap();
            assert_eq!(r.read_with(|f| read(f, &mut buf)).unwrap(), 0);
        });
    });
}

#[test]
fn a_plain_thread_waits_in_poll() {
    util::within("pollable_thread", || {
        let (r, mut w) = pipe();
        let r = Pollable::new(r).unwrap();
        r.set_read_timeout(Some(util::PATIENCE)).unwrap();
        let writer = std::thread::spawn(move || w.write_all(b"x").unwrap());
        let mut buf = [0u8; 4];
        let n = r.read_with(|mut f| f.read(&mut buf)).unwrap();
        assert_eq!(&buf[..n], b"x");
        writer.join().unwrap();
    });
}
