//! The `chat` example over a real socket: a subscriber's event stream carries what another
//! connection posts, and an empty message is refused.

#[path = "../examples/chat/app.rs"]
#[allow(dead_code)]
mod app;
mod raw_http;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use fibra_web::test::{TestClient, TestServer};
use raw_http::Conn;

fn post(addr: std::net::SocketAddr, body: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "POST /messages HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn a_posted_message_reaches_every_subscriber() {
    let hub = app::Hub::default();
    let server = TestServer::spawn(app::router(hub.clone())).unwrap();
    let mut a = Conn::open(server.addr());
    let mut b = Conn::open(server.addr());
    // `b` is connected (idle) before `a` asks: on the one worker, `a`'s head must still go
    // out before any event (an event stream flushes its head at once).
    for c in [&mut a, &mut b] {
        c.get("/events", &[]);
        let head = c.head();
        assert_eq!(head.status, 200);
        assert_eq!(head.header("content-type"), Some("text/event-stream"));
    }
    // Both handlers subscribed before their heads went out.
    assert_eq!(hub.subscribers(), 2);

    let reply = post(server.addr(), "user=ann&text=hello+there");
    assert!(reply.starts_with("HTTP/1.1 204 "), "{reply}");
    for c in [&mut a, &mut b] {
        let mut text = String::new();
        while !text.contains("\n\n") {
            let chunk = c.chunk().expect("the stream goes on");
            text.push_str(&String::from_utf8(chunk).unwrap());
        }
        assert_eq!(
            text,
            "event: message\nid: 1\ndata: {\"user\":\"ann\",\"text\":\"hello there\"}\n\n"
        );
    }
}

#[test]
fn an_empty_message_is_refused_and_the_page_is_served() {
    let c = TestClient::new(app::router(app::Hub::default()));
    assert_eq!(
        c.post("/messages")
            .form(&[("user", "ann"), ("text", " ")])
            .send()
            .status(),
        422
    );
    let page = c.get("/").send();
    assert!(page.text().contains("new EventSource(\"/events\")"));
}
