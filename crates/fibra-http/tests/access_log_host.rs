//! The host each access-log entry names (`LogEntry::host`), made by the one entry builder
//! for HTTP/1.1, HTTP/2 and the requests the server refuses: the target's authority (an
//! absolute-form target, HTTP/2's `:authority`), else the `Host` field, else none.

mod h2_util;
mod util;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fibra_http::access_log::{AccessLogSink, LogEntry};
use fibra_http::{Request, Response, Server};

/// (status, target, host) of each entry.
type Rows = Arc<Mutex<Vec<(u16, String, Option<String>)>>>;

#[derive(Clone, Default)]
struct Hosts(Rows);

impl AccessLogSink for Hosts {
    fn log(&self, e: &LogEntry<'_>) {
        let host = e.host.map(|h| String::from_utf8_lossy(h).into_owned());
        self.0
            .lock()
            .unwrap()
            .push((e.status, e.target.to_string(), host));
    }
}

#[test]
fn entries_name_the_host_on_every_path() {
    let sink = Hosts::default();
    let server = Server::bind("127.0.0.1:0")
        .workers(1)
        .max_body_bytes(4)
        .access_log_sink(sink.clone())
        .serve(|_req: Request| Response::new("ok".into()))
        .unwrap();
    let addr = server.local_addr();
    let mut s = util::connect(addr);
    s.write_all(
        b"GET /h HTTP/1.1\r\nHost: a.test:8080\r\n\r\n\
GET http://b.test/abs HTTP/1.1\r\nHost: ignored.test\r\n\r\n\
GET /none HTTP/1.0\r\nConnection: keep-alive\r\n\r\n\
POST /big HTTP/1.1\r\nHost: c.test\r\nContent-Length: 100\r\n\r\n",
    )
    .unwrap();
    let _ = util::read_to_close(&mut s);
    // A request line the server cannot parse: refused before any field is read.
    let _ = util::send_and_read_to_close(addr, b"GET /bad\x01 HTTP/1.1\r\nHost: d.test\r\n\r\n");
    // HTTP/2 with prior knowledge: `:authority`.
    let rt = h2_util::runtime();
    rt.block_on(async {
        let mut client = h2_util::client(addr).await;
        let (status, _, body) =
            h2_util::exchange(&mut client, http::Method::GET, "/two", None).await;
        assert_eq!((status.as_u16(), &body[..]), (200, &b"ok"[..]));
    });
    drop(rt);
    server.shutdown(Duration::from_secs(5));
    let mut rows = sink.0.lock().unwrap().clone();
    rows.sort();
    let row = |status, target: &str, host: Option<&str>| {
        (status, target.to_string(), host.map(str::to_string))
    };
    let mut want = vec![
        row(200, "/h", Some("a.test:8080")),
        row(200, "http://b.test/abs", Some("b.test")),
        row(200, "/none", None),
        row(413, "/big", Some("c.test")),
        row(400, "-", None),
        row(200, "/two", Some("localhost")),
    ];
    want.sort();
    assert_eq!(rows, want);
}
