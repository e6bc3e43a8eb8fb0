//! One server, several acceptors on one runtime: plain HTTP on two addresses and HTTPS on a
//! third (`Server::also_bind`, `Server::also_tls`), one service, one graceful shutdown.

#[path = "h2_util/mod.rs"]
mod h2_util;
#[path = "tls_util/mod.rs"]
mod tls_util;
#[path = "util/mod.rs"]
mod util;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use fibra_http::{Request, Response, Server};

fn get_over<S: Read + Write>(s: &mut S) -> String {
    s.write_all(b"GET /where HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = Vec::new();
    // A TLS peer that closes without close_notify would be an error; fibra sends it.
    s.read_to_end(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn plain_and_tls_acceptors_share_one_service_and_one_shutdown() {
    let certs = tls_util::Certs::new("several-acceptors");
    let config = fibra_http::tls::server_config_from_pem(certs.cert(), certs.key()).unwrap();
    let server = Server::bind("127.0.0.1:0")
        .workers(2)
        .also_bind("127.0.0.1:0")
        .also_tls("127.0.0.1:0", config)
        .serve(|req: Request| {
            Response::new(format!("served {} on {}", req.uri().path(), req.listener()).into())
        })
        .expect("server starts");
    let addrs = server.local_addrs().to_vec();
    assert_eq!(addrs.len(), 3, "{addrs:?}");
    assert_eq!(server.local_addr(), addrs[0]);
    assert!(addrs.iter().all(|a| a.port() != 0), "{addrs:?}");

    // Each request knows which acceptor its connection came through.
    for (i, plain) in addrs[..2].iter().enumerate() {
        let reply = get_over(&mut util::connect(*plain));
        assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
        assert!(reply.ends_with(&format!("served /where on {i}")), "{reply}");
    }
    // Over HTTP/2 (prior knowledge) too.
    let rt = h2_util::runtime();
    rt.block_on(async {
        let mut client = h2_util::client(addrs[1]).await;
        let (status, _, body) =
            h2_util::exchange(&mut client, http::Method::GET, "/two", None).await;
        assert_eq!(
            (status.as_u16(), &body[..]),
            (200, &b"served /two on 1"[..])
        );
    });
    drop(rt);
    let mut tls = certs.client_offering(addrs[2], &[fibra_http::tls::ALPN_HTTP1]);
    let reply = get_over(&mut tls);
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    assert!(reply.ends_with("served /where on 2"), "{reply}");
    // Plain HTTP on the TLS port is not answered as HTTP.
    let mut wrong = util::connect(addrs[2]);
    wrong
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut junk = Vec::new();
    let _ = wrong.read_to_end(&mut junk);
    assert!(!junk.starts_with(b"HTTP/1.1 200"), "{junk:?}");

    // An idle keep-alive connection on each acceptor: shutdown closes them all, and then no
    // acceptor takes connections any more.
    let idle: Vec<TcpStream> = addrs.iter().map(|a| util::connect(*a)).collect();
    assert!(util::wait_until(|| server.connections() >= 3));
    server.shutdown(Duration::from_secs(5));
    assert_eq!(server.connections(), 0);
    for mut s in idle {
        let mut buf = [0; 16];
        assert!(matches!(s.read(&mut buf), Ok(0) | Err(_)));
    }
    for a in &addrs {
        assert!(TcpStream::connect(a).is_err(), "{a} still accepts");
    }
}

/// An acceptor that cannot be made (its address is taken) fails `serve`, naming the address,
/// and the main acceptor is not left listening.
#[test]
fn a_taken_address_fails_serve_and_names_it() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let err = Server::bind("127.0.0.1:0")
        .workers(1)
        .also_bind(addr)
        .serve(|_req: Request| Response::new("x".into()))
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse, "{err}");
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
}
