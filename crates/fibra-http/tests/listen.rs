//! One port, one server: the workers of `Server::bind` share one listening socket, so a
//! second server on the same address fails with "address in use" naming it, whatever its
//! worker count or socket options; `Server::bind_reuse_port` gives each worker its own
//! `SO_REUSEPORT` socket, which other servers may then join (that is what the flag is for).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use fibra_http::{Request, Response, Server, ServerHandle};

mod util;

fn answering(name: &'static str) -> impl Fn(Request) -> Response + Send + Sync + 'static {
    move |_req: Request| Response::new(name.into())
}

/// The body of `GET /` on a new connection.
fn body_from(addr: SocketAddr) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(util::CLIENT_TIMEOUT)).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    reply.split("\r\n\r\n").nth(1).unwrap_or("").to_string()
}

/// Listening TCP sockets on `port` (IPv4), from the kernel's table: one line per socket, so
/// descriptors of one socket count once.
fn listening_sockets(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    let local = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && f[1].ends_with(&local) && f[3] == "0A"
        })
        .count()
}

fn stop(h: ServerHandle) {
    h.shutdown(Duration::from_secs(1));
}

#[test]
fn a_second_server_on_the_port_fails_naming_the_address() {
    let first = Server::bind("127.0.0.1:0")
        .workers(3)
        .serve(answering("first"))
        .expect("first server");
    let addr = first.local_addr();
    assert_eq!(
        listening_sockets(addr.port()),
        1,
        "one socket for 3 workers"
    );

    for workers in [1, 3] {
        let err = Server::bind(addr)
            .workers(workers)
            .serve(answering("second"))
            .expect_err("a second server on the port must fail");
        assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse, "{err}");
        assert!(err.to_string().contains(&addr.to_string()), "{err}");
    }
    // Not even with SO_REUSEPORT: the first server's socket is not in a reuse-port group.
    let err = Server::bind_reuse_port(addr)
        .workers(2)
        .serve(answering("second"))
        .expect_err("SO_REUSEPORT cannot join a socket bound without it");
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse, "{err}");

    // Every connection still reaches the first server, whichever worker accepts it.
    for _ in 0..40 {
        assert_eq!(body_from(addr), "first");
    }
    stop(first);
}

#[test]
fn workers_share_the_socket_under_concurrent_connections() {
    let server = Server::bind("127.0.0.1:0")
        .workers(4)
        .serve(|_req: Request| {
            let name = std::thread::current().name().unwrap_or("").to_string();
            Response::new(name.into())
        })
        .expect("server");
    let addr = server.local_addr();
    let clients: Vec<_> = (0..8)
        .map(|_| std::thread::spawn(move || (0..25).map(|_| body_from(addr)).collect::<Vec<_>>()))
        .collect();
    let mut served = 0;
    for c in clients {
        for worker in c.join().unwrap() {
            assert!(worker.starts_with("fibra-http"), "{worker:?}");
            served += 1;
        }
    }
    assert_eq!(served, 200);
    stop(server);
    // Once stopped, the port is free again (every descriptor of the socket was closed).
    let again = Server::bind(addr)
        .workers(2)
        .serve(answering("again"))
        .expect("the port is free after shutdown");
    assert_eq!(body_from(addr), "again");
    stop(again);
}

#[test]
fn reuse_port_is_asked_for_and_then_shares_the_port() {
    let first = Server::bind_reuse_port("127.0.0.1:0")
        .workers(2)
        .serve(answering("first"))
        .expect("first server");
    let addr = first.local_addr();
    assert_eq!(listening_sockets(addr.port()), 2, "a socket per worker");
    assert_eq!(body_from(addr), "first");
    // Another reuse-port server joins the group: the opt-in behaviour.
    let second = Server::bind_reuse_port(addr)
        .workers(1)
        .serve(answering("second"))
        .expect("a reuse-port server may join");
    assert_eq!(listening_sockets(addr.port()), 3);
    stop(second);
    // A server without the flag still cannot.
    let err = Server::bind(addr)
        .serve(answering("third"))
        .expect_err("a plain bind fails");
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse, "{err}");
    stop(first);
}
