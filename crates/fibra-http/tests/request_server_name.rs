//! `Request::server_name`: the SNI name of the TLS connection a request came on, over HTTP/1.1
//! and HTTP/2 (ALPN `h2`); none over plain TCP.

mod h2_util;
mod tls_util;
mod util;

use std::io::{Read, Write};

use fibra_http::tls::{server_config_from_pem, ALPN_H2, ALPN_HTTP1};
use fibra_http::{Request, Response, Server};
use h2_util::*;
use tls_util::Certs;

fn answer(req: Request) -> Response {
    let name = req.server_name();
    Response::new(format!("{:?} {:?}", req.version(), name.as_deref()).into())
}

#[test]
fn requests_carry_the_sni_name_of_their_connection() {
    let certs = Certs::new("request-sni");
    let config = server_config_from_pem(certs.cert(), certs.key()).unwrap();
    let tls = Server::bind("127.0.0.1:0")
        .workers(1)
        .tls(config)
        .serve(answer)
        .unwrap();

    // HTTP/1.1: two requests on one connection both see it.
    let mut s = certs.client_offering(tls.local_addr(), &[ALPN_HTTP1]);
    s.write_all(
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).unwrap();
    let reply = String::from_utf8(reply).unwrap();
    assert_eq!(
        reply.matches("HTTP/1.1 Some(\"localhost\")").count(),
        2,
        "{reply}"
    );

    // HTTP/2 after ALPN.
    let mut s = certs.client_offering(tls.local_addr(), &[ALPN_H2]);
    let mut out = PREFACE.to_vec();
    out.extend(frame(SETTINGS, 0, 0, &[]));
    out.extend(get(1, "/"));
    s.write_all(&out).unwrap();
    let data = read_until(&mut s, |f| f.ty == DATA && f.stream == 1).expect("a response");
    assert_eq!(data.payload, b"HTTP/2.0 Some(\"localhost\")");
    tls.shutdown(std::time::Duration::from_secs(1));

    // Plain TCP: none.
    let plain = Server::bind("127.0.0.1:0")
        .workers(1)
        .serve(answer)
        .unwrap();
    let reply = util::send_and_read_to_close(
        plain.local_addr(),
        b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(reply.ends_with("HTTP/1.1 None"), "{reply}");
    plain.shutdown(std::time::Duration::from_secs(1));
}
