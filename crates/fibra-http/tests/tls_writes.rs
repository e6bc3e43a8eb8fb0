//! How many writes a TLS connection costs the server: the `Tls` transport over an in-memory
//! transport that counts its `write` calls, driven step by step against a rustls client.
//!
//! A full TLS 1.3 handshake with one request and the server's close takes two writes: the
//! server's handshake flight, then the session tickets, the response and `close_notify`
//! together (the tickets wait for the reply to the request that came with the client's
//! `Finished`; the last response and `close_notify` leave in one write, `write_last`).
//! Over TLS 1.2 the server's `Finished` is not held back: the client waits for it.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use fibra::fiber::Wait;
use fibra::sync::Notify;
use fibra_http::tls::Tls;
use fibra_http::transport::{Capabilities, NoCapabilities, ShutdownHandle};
use fibra_http::Transport;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConfig, ServerConnection};

/// Bytes in flight towards one side, and the writes that carried them.
#[derive(Default)]
struct Pipe {
    bytes: VecDeque<u8>,
    writes: usize,
    shut: bool,
}

/// The server's end of an in-memory connection.
struct Memory {
    /// What the client sent.
    inbox: Rc<RefCell<Pipe>>,
    /// What the server sent.
    outbox: Rc<RefCell<Pipe>>,
}

impl Read for Memory {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.try_read(buf)
    }
}

impl Write for Memory {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut out = self.outbox.borrow_mut();
        out.writes += 1;
        out.bytes.extend(buf);
        Ok(buf.len())
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let mut out = self.outbox.borrow_mut();
        out.writes += 1;
        let mut n = 0;
        for b in bufs {
            out.bytes.extend(&b[..]);
            n += b.len();
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Transport for Memory {
    fn set_read_timeout(&self, _: Option<Duration>) -> io::Result<()> {
        Ok(())
    }
    fn set_write_timeout(&self, _: Option<Duration>) -> io::Result<()> {
        Ok(())
    }
    fn peer_addr(&self) -> Option<SocketAddr> {
        None
    }
    fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut inbox = self.inbox.borrow_mut();
        if inbox.bytes.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(inbox.bytes.len());
        for (slot, b) in buf.iter_mut().zip(inbox.bytes.drain(..n)) {
            *slot = b;
        }
        Ok(n)
    }
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        if matches!(how, Shutdown::Write | Shutdown::Both) {
            self.outbox.borrow_mut().shut = true;
        }
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
    // The test moves the bytes between the peers itself: nothing to wait for.
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

/// A server and client configuration sharing a fresh self-signed certificate.
fn configs(
    version: &'static rustls::SupportedProtocolVersion,
) -> (Arc<ServerConfig>, Arc<ClientConfig>) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert: CertificateDer<'static> = ck.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
    let mut server = ServerConfig::builder_with_protocol_versions(&[version])
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .unwrap();
    server.send_tls13_tickets = 2;
    let mut roots = RootCertStore::empty();
    roots.add(cert).unwrap();
    let client = ClientConfig::builder_with_protocol_versions(&[version])
        .with_root_certificates(roots)
        .with_no_client_auth();
    (Arc::new(server), Arc::new(client))
}

/// Moves what the server sent to the client; true if there was anything.
fn to_client(outbox: &Rc<RefCell<Pipe>>, client: &mut ClientConnection) -> bool {
    let bytes: Vec<u8> = outbox.borrow_mut().bytes.drain(..).collect();
    if bytes.is_empty() {
        return false;
    }
    let mut rd = &bytes[..];
    while !rd.is_empty() {
        client.read_tls(&mut rd).unwrap();
        client.process_new_packets().unwrap();
    }
    true
}

/// Moves what the client has to send to the server's inbox.
fn to_server(client: &mut ClientConnection, inbox: &Rc<RefCell<Pipe>>) {
    let mut bytes = Vec::new();
    while client.wants_write() {
        client.write_tls(&mut bytes).unwrap();
    }
    inbox.borrow_mut().bytes.extend(bytes);
}

/// One request over a fresh connection, answered with the server's last response: returns
/// the server's writes and what the client read.
fn one_request(version: &'static rustls::SupportedProtocolVersion) -> (usize, Vec<u8>, bool) {
    let (server_config, client_config) = configs(version);
    let inbox = Rc::new(RefCell::new(Pipe::default()));
    let outbox = Rc::new(RefCell::new(Pipe::default()));
    let mut server = Tls::new(
        Memory {
            inbox: inbox.clone(),
            outbox: outbox.clone(),
        },
        ServerConnection::new(server_config).unwrap(),
    );
    let name = ServerName::try_from("localhost").unwrap();
    let mut client = ClientConnection::new(client_config, name).unwrap();
    // The request is queued at once: rustls sends it as soon as the handshake allows (with
    // the client's `Finished`).
    client
        .writer()
        .write_all(b"GET / HTTP/1.0\r\n\r\n")
        .unwrap();
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    for _ in 0..20 {
        to_server(&mut client, &inbox);
        match server.try_read(&mut buf) {
            Ok(n) => {
                request.extend_from_slice(&buf[..n]);
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("server read: {e}"),
        }
        to_client(&outbox, &mut client);
    }
    assert_eq!(request, b"GET / HTTP/1.0\r\n\r\n");
    server
        .write_last(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
        .unwrap();
    let writes = outbox.borrow().writes;
    assert!(outbox.borrow().shut, "the writing side is shut down");
    to_client(&outbox, &mut client);
    let mut response = Vec::new();
    let _ = client.reader().read_to_end(&mut response);
    let closed = client.process_new_packets().unwrap().peer_has_closed();
    (writes, response, closed)
}

#[test]
fn tls13_handshake_request_and_close_take_two_writes() {
    let (writes, response, closed) = one_request(&rustls::version::TLS13);
    assert_eq!(response, b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
    assert!(closed, "close_notify reached the client");
    assert_eq!(
        writes, 2,
        "the handshake flight, then tickets + response + close_notify in one write"
    );
}

#[test]
fn tls12_handshake_request_and_close_answer_in_full() {
    let (writes, response, closed) = one_request(&rustls::version::TLS12);
    assert_eq!(response, b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
    assert!(closed, "close_notify reached the client");
    // ServerHello..ServerHelloDone, then ChangeCipherSpec + Finished (the client waits for
    // it), then the response with close_notify.
    assert_eq!(writes, 3);
}
