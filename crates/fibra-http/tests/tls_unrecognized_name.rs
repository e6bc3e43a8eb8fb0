//! A `ChooseConfig` that returns `None` refuses the handshake with a fatal `unrecognized_name`
//! alert (what a server with no site for the client's SNI name answers), and the server goes
//! on serving the names it has.

use std::io::{Read, Write};
use std::sync::Arc;

use fibra_http::tls::{server_config_from_pem, ChooseConfig};
use fibra_http::{Request, Response, Server};
use rustls::pki_types::ServerName;
use rustls::{AlertDescription, ClientConnection, StreamOwned};

mod tls_util;

use tls_util::{tcp, Certs};

#[test]
fn an_unknown_name_gets_unrecognized_name_and_known_ones_are_served() {
    let certs = Certs::new("unrecognized-name");
    let config = server_config_from_pem(certs.cert(), certs.key()).unwrap();
    let choose: Arc<ChooseConfig> = Arc::new(move |hello: &rustls::server::ClientHello<'_>| {
        (hello.server_name() == Some("localhost")).then(|| config.clone())
    });
    let server = Server::bind("127.0.0.1:0")
        .workers(1)
        .tls_choosing(choose)
        .serve(|_req: Request| Response::new("ok".into()))
        .unwrap();
    let addr = server.local_addr();

    // The certificate is for localhost; the client asks for another name (and would not
    // verify it anyway: the alert comes first).
    let name = ServerName::try_from("other.test").unwrap();
    let conn = ClientConnection::new(certs.client_config(), name).unwrap();
    let mut tls = StreamOwned::new(conn, tcp(addr));
    let err = tls
        .write_all(b"GET / HTTP/1.1\r\nHost: other.test\r\n\r\n")
        .and_then(|()| tls.read(&mut [0; 64]).map(|_| ()))
        .expect_err("the handshake is refused");
    let alert = err
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
        .cloned();
    assert_eq!(
        alert,
        Some(rustls::Error::AlertReceived(
            AlertDescription::UnrecognisedName
        )),
        "{err}"
    );

    let mut ok = certs.client_offering(addr, &[fibra_http::tls::ALPN_HTTP1]);
    ok.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    ok.read_to_string(&mut reply).unwrap();
    assert!(
        reply.starts_with("HTTP/1.1 200 OK") && reply.ends_with("ok"),
        "{reply}"
    );
    server.shutdown(std::time::Duration::from_secs(5));
}
