//! A client that reads 1,000 bytes of a 32 MiB file (or in-memory body) and closes: the access-log entry counts
//! the body bytes `sendfile` had handed to the kernel by the time the connection failed — at
//! least the 1,000 the client read, never the whole file — on every try. (Before, an error in
//! the middle of a 1 MiB `sendfile` piece lost that piece's count: `-`, 0 bytes, in three of
//! five tries.)

mod util;

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fibra_http::access_log::{AccessLogSink, LogEntry};
use fibra_http::{FileRange, Request, Response, ResponseBody, Server};

const SIZE: u64 = 32 << 20;

#[derive(Clone, Default)]
struct Bytes(Arc<Mutex<Vec<(u16, u64)>>>);

impl AccessLogSink for Bytes {
    fn log(&self, e: &LogEntry<'_>) {
        self.0.lock().unwrap().push((e.status, e.bytes));
    }
}

#[test]
fn a_file_cut_short_by_the_client_logs_the_bytes_that_left() {
    let path = std::env::temp_dir().join(format!("fibra-partial-{}", std::process::id()));
    std::fs::File::create(&path).unwrap().set_len(SIZE).unwrap();
    let file = Arc::new(std::fs::File::open(&path).unwrap());
    let sink = Bytes::default();
    let server = Server::bind("127.0.0.1:0")
        .workers(1)
        .access_log_sink(sink.clone())
        .serve(move |req: Request| match req.uri().path() {
            // The same from memory: a body too large for the write buffer, written directly.
            "/memory" => Response::new(vec![0u8; SIZE as usize].into()),
            _ => Response::new(ResponseBody::file(FileRange::new(file.clone(), 0, SIZE))),
        })
        .unwrap();
    const TRIES: usize = 5;
    for target in ["/file", "/memory"].into_iter().cycle().take(2 * TRIES) {
        let mut s = util::connect(server.local_addr());
        write!(s, "GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        // The head, then at least 1,000 body bytes.
        let mut got = Vec::new();
        let mut buf = [0; 4096];
        let body_at = loop {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "the server closed early");
            got.extend_from_slice(&buf[..n]);
            if let Some(at) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                if got.len() >= at + 4 + 1000 {
                    break at + 4;
                }
            }
        };
        assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n"));
        let read = (got.len() - body_at) as u64;
        // Closed with unread data: a reset, and the server's next send fails.
        drop(s);
        assert!(util::wait_until(|| sink.0.lock().unwrap().len() == 1));
        let (status, bytes) = sink.0.lock().unwrap().pop().unwrap();
        assert_eq!(status, 200);
        assert!(
            bytes >= read && bytes < SIZE,
            "{target}: logged {bytes}, read {read}"
        );
    }
    server.shutdown(Duration::from_secs(1));
    std::fs::remove_file(&path).unwrap();
}
