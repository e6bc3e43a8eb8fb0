//! `Server::alpn_hook`: a connection whose handshake agrees on the hook's ALPN protocol
//! (`acme-tls/1`, ACME's tls-alpn-01 validation) completes the handshake, is told to the hook
//! with its SNI name, and is closed without any HTTP; other connections are served as usual.

mod tls_util;
mod util;

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fibra_http::tls::{server_config_from_pem, AlpnHook, ALPN_ACME_TLS, ALPN_HTTP1};
use fibra_http::{Request, Response, Server};
use tls_util::Certs;

#[test]
fn an_acme_tls_connection_is_handed_to_the_hook_and_closed() {
    let certs = Certs::new("alpn-hook");
    let config = server_config_from_pem(certs.cert(), certs.key()).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let server = Server::bind("127.0.0.1:0")
        .workers(1)
        .tls(config)
        .alpn_hook(AlpnHook::new(ALPN_ACME_TLS, move |name| {
            record.lock().unwrap().push(name.map(str::to_owned));
        }))
        .serve(|_req: Request| Response::new("http".into()))
        .unwrap();

    // The validation client: the handshake completes with acme-tls/1; what it then sends is
    // not answered, and the server closes (close_notify, then the end of the stream).
    let mut acme = certs.client_offering(server.local_addr(), &[ALPN_ACME_TLS]);
    acme.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut reply = Vec::new();
    let read = acme.read_to_end(&mut reply);
    assert_eq!(acme.conn.alpn_protocol(), Some(ALPN_ACME_TLS));
    assert!(read.is_ok(), "closed with close_notify: {read:?}");
    assert!(reply.is_empty(), "{}", String::from_utf8_lossy(&reply));
    assert!(util::wait_until(|| seen.lock().unwrap().len() == 1));
    assert_eq!(seen.lock().unwrap()[0].as_deref(), Some("localhost"));

    // An HTTP client on the same server is served.
    let mut web = certs.client_offering(server.local_addr(), &[ALPN_HTTP1]);
    web.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = Vec::new();
    web.read_to_end(&mut reply).unwrap();
    let reply = String::from_utf8(reply).unwrap();
    assert!(
        reply.starts_with("HTTP/1.1 200 OK\r\n") && reply.ends_with("http"),
        "{reply}"
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
    server.shutdown(Duration::from_secs(1));
}
