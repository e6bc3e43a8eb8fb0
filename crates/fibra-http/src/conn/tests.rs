//! Unit tests of the connection loop over an in-memory transport.

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use fibra::fiber::Wait;
use fibra::sync::Notify;

use super::buffered::read_sizes;
use super::serve_connection;
use crate::request::Request;
use crate::response::{Response, FLUSH_BYTES};
use crate::settings::Settings;
use crate::transport::{NoCapabilities, ShutdownHandle, Transport};

/// A transport fed from a byte string, recording every write. A write takes at most
/// `max_write` bytes; the first `interrupts` writes fail with `Interrupted`.
struct Mock {
    input: Vec<u8>,
    pos: usize,
    writes: Rc<RefCell<Vec<Vec<u8>>>>,
    max_write: usize,
    interrupts: usize,
}

impl Read for Mock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.input.len() - self.pos);
        buf[..n].copy_from_slice(&self.input[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}
impl Write for Mock {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.interrupts > 0 {
            self.interrupts -= 1;
            return Err(io::ErrorKind::Interrupted.into());
        }
        // A transport that takes nothing is broken: it panics, as a buggy one might.
        assert!(self.max_write > 0, "transport broke");
        let n = data.len().min(self.max_write);
        self.writes.borrow_mut().push(data[..n].to_vec());
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
impl Transport for Mock {
    fn set_read_timeout(&self, _: Option<Duration>) -> io::Result<()> {
        Ok(())
    }
    fn set_write_timeout(&self, _: Option<Duration>) -> io::Result<()> {
        Ok(())
    }
    fn peer_addr(&self) -> Option<SocketAddr> {
        None
    }
    fn shutdown(&self, _: Shutdown) -> io::Result<()> {
        Ok(())
    }
    fn shutdown_handle(&self) -> Option<Arc<dyn ShutdownHandle>> {
        None
    }
    fn alpn(&self) -> Option<&[u8]> {
        None
    }
    fn server_name(&self) -> Option<&str> {
        None
    }
    // Input is always at hand: reads never wait, and there is nothing to wait for.
    fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read(buf)
    }
    fn wait_readable(&self) -> io::Result<()> {
        Ok(())
    }
    fn wait_readable_or(&self, _: &Notify) -> io::Result<bool> {
        Err(io::ErrorKind::Unsupported.into())
    }
    fn when_readable(&self) -> Option<Wait> {
        None
    }
    type Caps = NoCapabilities;
    fn capabilities(&mut self) -> Option<&mut NoCapabilities> {
        None
    }
}

fn run(input: &[u8], handler: impl Fn(Request) -> Response) -> Vec<Vec<u8>> {
    run_with(input, handler, &Settings::default(), usize::MAX, 0)
}

fn run_with(
    input: &[u8],
    handler: impl Fn(Request) -> Response,
    settings: &Settings,
    max_write: usize,
    interrupts: usize,
) -> Vec<Vec<u8>> {
    let writes = Rc::new(RefCell::new(Vec::new()));
    let mock = Mock {
        input: input.to_vec(),
        pos: 0,
        writes: writes.clone(),
        max_write,
        interrupts,
    };
    serve_connection(mock, settings, &handler);
    let w = writes.borrow().clone();
    w
}

#[test]
fn short_and_interrupted_writes_still_send_every_byte_in_order() {
    let req = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n".repeat(8);
    let handler = |r: Request| Response::new(r.uri().path().to_string().into());
    let whole = run(&req, handler).concat();
    // A transport that takes 7 bytes per write, with and without a first interrupted call.
    for interrupts in [0, 1] {
        let writes = run_with(&req, handler, &Settings::default(), 7, interrupts);
        assert!(writes.len() > 1 && writes.iter().all(|w| w.len() <= 7));
        let pieces = writes.concat();
        let text = String::from_utf8(pieces.clone()).unwrap();
        assert_eq!(text.matches("HTTP/1.1 200 OK").count(), 8);
        assert!(text.ends_with("\r\n\r\n/a"), "{text}");
        // The bytes of one whole write (only the date may differ, at the same length).
        assert_eq!(pieces.len(), whole.len());
    }
}

#[test]
fn a_panic_while_a_response_is_written_ends_the_connection_and_is_reported() {
    // The handler returned; the transport panics on the first write of the response (a
    // body too big to buffer is written while the response is). The panic is reported,
    // the partial response is not followed by a 500, and the next request is not answered.
    let reported = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = reported.clone();
    let settings = Settings {
        on_error: Some(crate::settings::ErrorHook::new(move |e| {
            sink.lock().unwrap().push(e.to_string())
        })),
        ..Settings::default()
    };
    let req = b"GET /big HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n";
    let handler = |_: Request| Response::new(vec![b'x'; 4 * FLUSH_BYTES].into());
    let writes = run_with(req, handler, &settings, 0, 0);
    assert!(writes.is_empty(), "{writes:?}");
    let reported = reported.lock().unwrap();
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert!(reported[0].contains("transport broke"), "{reported:?}");
}

#[test]
fn read_buffer_and_head_limits_under_512_bytes_still_serve() {
    // The read buffer is at least 512 bytes unless both limits are smaller: then it is
    // the larger limit (this used to panic in `clamp`, min above max).
    let settings = Settings {
        read_buffer_bytes: 128,
        max_head_bytes: 200,
        ..Settings::default()
    };
    assert_eq!(read_sizes(&settings), (200, 200));
    let req = b"GET /small HTTP/1.1\r\nHost: x\r\n\r\n";
    let handler = |r: Request| Response::new(r.uri().path().to_string().into());
    let writes = run_with(req, handler, &settings, usize::MAX, 0);
    let out = String::from_utf8(writes.concat()).unwrap();
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.ends_with("\r\n\r\n/small"), "{out}");
    // The defaults are what they were.
    assert_eq!(read_sizes(&Settings::default()), (4096, 16 * 1024));
}

#[test]
fn pipelined_responses_leave_in_one_write() {
    let req = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n".repeat(8);
    let writes = run(&req, |r| Response::new(r.uri().path().to_string().into()));
    assert_eq!(writes.len(), 1);
    let out = String::from_utf8(writes[0].clone()).unwrap();
    assert_eq!(out.matches("HTTP/1.1 200 OK").count(), 8);
}

#[test]
fn continue_is_sent_before_reading_and_after_earlier_responses() {
    let req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\nPUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n";
    let mut input = req.to_vec();
    input.extend_from_slice(b"ok");
    // The body is already buffered, so no 100 is needed: the client sent it anyway.
    let writes = run(&input, |mut r| {
        let mut s = String::new();
        r.body_mut().read_to_string(&mut s).unwrap();
        Response::new(s.into())
    });
    let all: Vec<u8> = writes.concat();
    let out = String::from_utf8(all).unwrap();
    assert!(!out.contains("100 Continue"), "{out}");
    assert!(out.ends_with("\r\n\r\nok"), "{out}");
}

#[test]
fn streaming_body_is_chunked() {
    let writes = run(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", |_| {
        Response::new(crate::ResponseBody::stream(|w| {
            w.write_all(b"hello ")?;
            w.write_all(b"world")
        }))
    });
    let out = String::from_utf8(writes.concat()).unwrap();
    assert!(out.contains("Transfer-Encoding: chunked\r\n"), "{out}");
    assert!(
        out.ends_with("\r\n\r\n6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n"),
        "{out}"
    );
}
