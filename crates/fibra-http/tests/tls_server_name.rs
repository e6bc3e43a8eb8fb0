//! What TLS agreed on, as the transport reports it: a TLS connection whose client sent the
//! SNI name `localhost` and offered ALPN `http/1.1` reports both
//! ([`Transport::server_name`], [`Transport::alpn`]); a plain TCP connection reports neither.
//! The upgrade callback takes the transport and writes what it reports back on the wire.

use std::io::{Read, Write};

use fibra_http::tls::{server_config_from_pem, Tls};
use fibra_http::{Request, Response, ResponseBody, Server, ServerHandle, Tcp, Transport};
use http::{HeaderValue, StatusCode};
use rustls::pki_types::ServerName;
use rustls::{ClientConnection, StreamOwned};

mod tls_util;

use tls_util::{tcp, Certs};

/// One line describing what `io` reports.
fn report(io: &impl Transport) -> String {
    let alpn = io.alpn().map(|p| String::from_utf8_lossy(p).into_owned());
    format!("server_name={:?} alpn={:?}\n", io.server_name(), alpn)
}

/// A `101` whose upgrade callback writes `report` of the transport it gets (a `T`).
fn reporting<T: Transport>(_req: Request) -> Response {
    let mut resp = Response::new(ResponseBody::upgrade(|io| {
        let Ok((mut io, _early)) = io.downcast::<T>() else {
            panic!("the transport is a {}", std::any::type_name::<T>());
        };
        let line = report(&io);
        io.write_all(line.as_bytes()).unwrap();
        io.flush().unwrap();
    }));
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = resp.headers_mut();
    headers.insert("upgrade", HeaderValue::from_static("report"));
    headers.insert("connection", HeaderValue::from_static("upgrade"));
    resp
}

/// Sends the upgrade request and returns the line that follows the `101` head.
fn upgrade_and_read(s: &mut (impl Read + Write)) -> String {
    s.write_all(
        b"GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: report\r\nConnection: upgrade\r\n\r\n",
    )
    .unwrap();
    let mut all = Vec::new();
    let mut byte = [0u8; 1];
    let whole = |all: &[u8]| {
        let text = String::from_utf8_lossy(all);
        text.split_once("\r\n\r\n")
            .is_some_and(|(_, rest)| rest.ends_with('\n'))
    };
    while !whole(&all) {
        assert_eq!(s.read(&mut byte).unwrap(), 1, "EOF before the line");
        all.push(byte[0]);
    }
    let text = String::from_utf8(all).unwrap();
    let (head, line) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    line.to_string()
}

fn stop(h: ServerHandle) {
    h.shutdown(std::time::Duration::from_secs(5));
}

#[test]
fn a_tls_connection_reports_the_sni_name_and_alpn_protocol_it_was_sent() {
    let certs = Certs::new("server-name");
    let config = server_config_from_pem(certs.cert(), certs.key()).unwrap();
    let h = Server::bind("127.0.0.1:0")
        .tls(config)
        .serve(reporting::<Tls<Tcp>>)
        .unwrap();
    let addr = h.local_addr();
    let name = ServerName::try_from("localhost").unwrap();
    let conn = ClientConnection::new(certs.client_config(), name).unwrap();
    let mut client = StreamOwned::new(conn, tcp(addr));
    assert_eq!(
        upgrade_and_read(&mut client),
        "server_name=Some(\"localhost\") alpn=Some(\"http/1.1\")\n"
    );
    stop(h);
}

#[test]
fn a_plain_connection_reports_no_server_name_and_no_alpn_protocol() {
    let h = Server::bind("127.0.0.1:0").serve(reporting::<Tcp>).unwrap();
    assert_eq!(
        upgrade_and_read(&mut tcp(h.local_addr())),
        "server_name=None alpn=None\n"
    );
    stop(h);
}
