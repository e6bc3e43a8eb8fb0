//! HTTP/3 with 0-RTT (`fibra_quic::Config::zero_rtt`): a resuming client's requests in early
//! data, which an attacker could replay, are served if doing them twice does no harm (GET)
//! and answered `425 Too Early` otherwise (POST, RFC 8470 §5.2); the same POST once the
//! handshake is done is served.
//!
//! The client's streams are opened and written before its fiber first parks: the client's
//! driver runs on the same worker (and so does the server's), so nothing of the handshake
//! has happened yet and both streams go out as 0-RTT data, whatever the machine's load.

mod h3_util;
mod util;

use std::io::Write;

use fibra::net::UdpSocket;
use fibra_http::Settings;
use fibra_quic::{Config, Endpoint};
use h3_util::*;

#[test]
fn in_early_data_a_get_is_served_and_a_post_gets_425() {
    run("early data", || {
        let config = Config {
            zero_rtt: true,
            ..Config::default()
        };
        let (addr, client_config, _drain) = server_with(Settings::default(), config);
        let client = Endpoint::client(UdpSocket::bind("127.0.0.1:0").unwrap()).unwrap();

        // A first connection: a full handshake, and a session ticket.
        let first = client
            .connect(addr, "localhost", client_config.clone())
            .unwrap();
        let _control = open_control(&first);
        let answer = exchange(&first, &request(false, "/hello", &[], &[])).unwrap();
        assert_eq!((answer.status(), &answer.body[..]), (200, &b"hello"[..]));
        first.close(0x100, b"");

        // The second, resumed: two requests in its first flight.
        let conn = client
            .connect_early(addr, "localhost", client_config)
            .unwrap();
        let _control = open_control(&conn);
        let (mut post_send, mut post_recv) = conn.open_bi().unwrap();
        post_send
            .write_all(&request(true, "/echo", &[], &[b"pay once"]))
            .unwrap();
        post_send.finish().unwrap();
        let (mut get_send, mut get_recv) = conn.open_bi().unwrap();
        get_send
            .write_all(&request(false, "/hello", &[], &[]))
            .unwrap();
        get_send.finish().unwrap();

        let post = read_answer(&mut post_recv).unwrap();
        assert_eq!(post.status(), 425, "a POST in early data");
        assert!(
            String::from_utf8_lossy(&post.body).contains("too early"),
            "{:?}",
            post.body
        );
        let get = read_answer(&mut get_recv).unwrap();
        assert_eq!(
            (get.status(), &get.body[..]),
            (200, &b"hello"[..]),
            "a GET in early data"
        );
        assert!(
            conn.accepted_0rtt().unwrap(),
            "the server took the early data"
        );

        // After the handshake, the POST again: served.
        let again = exchange(&conn, &request(true, "/echo", &[], &[b"pay once"])).unwrap();
        assert_eq!((again.status(), &again.body[..]), (200, &b"pay once"[..]));
        conn.close(0x100, b"");
    });
}
