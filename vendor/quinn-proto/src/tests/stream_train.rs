//! (fibra) Stream trains: the Data packets that one `poll_transmit` builds, after a packet
//! that held only STREAM frames, while nothing else is pending (`Connection::
//! stream_train_may_start`). They skip the general path's questions, and must hold exactly the
//! frames it would have put in them. Each test runs one exchange twice, with trains and
//! without, and compares every packet the client receives, frame by frame.

use super::*;

/// What a test compares of a frame: a STREAM frame's place in its stream, the type of any
/// other (ACK contents depend on timing the two runs share, but not on the trains).
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Stream {
        id: StreamId,
        offset: u64,
        len: usize,
        fin: bool,
    },
    Other(String),
}

fn seen(packet: Vec<u8>) -> Vec<Seen> {
    frame::Iter::new(packet.into())
        .unwrap()
        .map(|frame| match frame.unwrap() {
            Frame::Stream(s) => Seen::Stream {
                id: s.id,
                offset: s.offset,
                len: s.data.len(),
                fin: s.fin,
            },
            other => Seen::Other(format!("{}", other.ty())),
        })
        .collect()
}

/// What happens during a transfer, besides the transfer.
#[derive(Clone, Copy)]
enum Meanwhile {
    Nothing,
    /// The server is asked for a PING after its first burst.
    Ping,
    /// The client sends data on a stream of its own after the server's first burst, which
    /// the server acknowledges (ACKs of its own, and bundled ones).
    ClientSends,
    /// The server resets a second stream with pending data after its first burst.
    Reset,
    /// Before the transfer, the client sends a packet of data that the server does not
    /// acknowledge at once: when the server starts sending, an ACK is due to be bundled
    /// where a packet has room.
    ClientFirst,
}

/// The server sends `len` bytes on a unidirectional stream (and a second one of 1,000 bytes
/// when `meanwhile` resets it); returns the frames of every packet the client received after
/// the handshake, how many packets the server built as part of a train, and how many ACK
/// frames it bundled into them.
fn transfer(trains: bool, len: usize, meanwhile: Meanwhile) -> (Vec<Vec<Seen>>, u64, u64) {
    let _guard = subscribe();
    let mut pair = Pair::default_with_deterministic_pns();
    // The client's packet numbers too: the server's ACK frames, and so the room left in
    // its packets, depend on them.
    let mut config = client_config();
    let mut transport = TransportConfig::default();
    transport.deterministic_packet_numbers(true);
    config.transport_config(Arc::new(transport));
    let (client_ch, server_ch) = pair.connect_with(config);
    pair.server_conn_mut(server_ch).stream_train_off = !trains;
    if let Meanwhile::ClientFirst = meanwhile {
        let c = pair.client_streams(client_ch).open(Dir::Uni).unwrap();
        pair.client_send(client_ch, c).write(&[3; 100]).unwrap();
        pair.drive_client();
        pair.drive_server();
    }
    pair.client.capture_inbound_packets = true;

    let s = pair.server_streams(server_ch).open(Dir::Uni).unwrap();
    let data: Vec<u8> = (0..len).map(|i| i as u8).collect();
    assert_eq!(pair.server_send(server_ch, s).write(&data).unwrap(), len);
    pair.server_send(server_ch, s).finish().unwrap();
    let second = match meanwhile {
        Meanwhile::Reset => {
            let t = pair.server_streams(server_ch).open(Dir::Uni).unwrap();
            assert_eq!(
                pair.server_send(server_ch, t).write(&[1; 1000]).unwrap(),
                1000
            );
            Some(t)
        }
        _ => None,
    };

    // The first burst, as much as the congestion window allows.
    pair.drive_server();
    match meanwhile {
        Meanwhile::Nothing | Meanwhile::ClientFirst => {}
        Meanwhile::Ping => pair.server_conn_mut(server_ch).ping(),
        Meanwhile::ClientSends => {
            let c = pair.client_streams(client_ch).open(Dir::Uni).unwrap();
            pair.client_send(client_ch, c).write(&[2; 5000]).unwrap();
            pair.client_send(client_ch, c).finish().unwrap();
        }
        Meanwhile::Reset => {
            pair.server_send(server_ch, second.unwrap())
                .reset(VarInt(7))
                .unwrap();
        }
    }
    pair.drive();

    // Everything arrived, in order, on the client.
    assert_matches!(pair.client_streams(client_ch).accept(Dir::Uni), Some(id) if id == s);
    let mut recv = pair.client_recv(client_ch, s);
    let mut chunks = recv.read(true).unwrap();
    let mut got = Vec::new();
    while let Ok(Some(chunk)) = chunks.next(usize::MAX) {
        assert_eq!(chunk.offset, got.len() as u64);
        got.extend_from_slice(&chunk.bytes);
    }
    let _ = chunks.finalize();
    assert_eq!(got, data);

    let packets = mem::take(&mut pair.client.captured_packets);
    let server = pair.server_conn_mut(server_ch);
    let (train_packets, train_acks) = (server.stream_train_packets, server.stream_train_acks);
    (
        packets.into_iter().map(seen).collect(),
        train_packets,
        train_acks,
    )
}

/// Compares the packets of a transfer with trains and without; returns how many packets were
/// built in trains, and how many ACK frames were bundled into them.
fn same_packets_with_and_without_trains(len: usize, meanwhile: Meanwhile) -> (u64, u64) {
    let (with, train_packets, train_acks) = transfer(true, len, meanwhile);
    let (without, none, _) = transfer(false, len, meanwhile);
    assert_eq!(none, 0);
    assert_eq!(with.len(), without.len(), "packets received");
    for (i, (a, b)) in with.iter().zip(&without).enumerate() {
        assert_eq!(a, b, "packet {i} of {}", with.len());
    }
    (train_packets, train_acks)
}

#[test]
fn a_bulk_transfer_goes_out_in_trains_with_the_same_frames() {
    let (trained, _) = same_packets_with_and_without_trains(300_000, Meanwhile::Nothing);
    // 300 kB is about 210 packets; all but the first of each transmit call are a train's.
    assert!(trained > 100, "{trained} packets in trains");
}

#[test]
fn a_ping_asked_for_mid_transfer_goes_out_as_without_trains() {
    let (trained, _) = same_packets_with_and_without_trains(300_000, Meanwhile::Ping);
    assert!(trained > 100, "{trained} packets in trains");
}

#[test]
fn acks_for_the_clients_data_go_out_as_without_trains() {
    let (trained, _) = same_packets_with_and_without_trains(300_000, Meanwhile::ClientSends);
    assert!(trained > 100, "{trained} packets in trains");
}

/// An ACK due to be bundled does not keep a train from starting: the train bundles it where
/// a packet has room (here the last one), as the packets without trains do.
#[test]
fn an_ack_due_to_be_bundled_goes_out_in_a_train_as_without() {
    let (trained, acks) = same_packets_with_and_without_trains(10_000, Meanwhile::ClientFirst);
    assert!(trained > 3, "{trained} packets in trains");
    assert_eq!(acks, 1, "ACK frames bundled into trains");
}

#[test]
fn a_reset_mid_transfer_goes_out_as_without_trains() {
    let (trained, _) = same_packets_with_and_without_trains(300_000, Meanwhile::Reset);
    assert!(trained > 100, "{trained} packets in trains");
}

#[test]
fn a_transfer_of_one_packet_builds_no_train() {
    assert_eq!(
        same_packets_with_and_without_trains(500, Meanwhile::Nothing),
        (0, 0)
    );
}
