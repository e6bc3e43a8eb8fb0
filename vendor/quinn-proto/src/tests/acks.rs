//! (fibra) Acknowledgements: how the fork processes an ACK frame (the packets it newly
//! acknowledges collected in a kept vector, and the stream data of consecutive packets
//! acknowledged in one call per run) must leave the connection as quinn-proto's own way did.

use super::*;

/// (fibra) `Connection::on_ack_received` collects the packets an ACK frame newly acknowledges
/// in a vector kept between frames, sorted only when the frame has several ranges with
/// packets in them. Losing every fifth packet of a burst gives the client's ACKs many ranges;
/// the transfer completes, the losses are found, and every byte is acknowledged (the server
/// sees its stream finished).
#[test]
fn acks_with_many_ranges_acknowledge_every_packet_once() {
    let _guard = subscribe();
    let mut pair = Pair::default_with_deterministic_pns();
    let (client_ch, server_ch) = pair.connect();
    let s = pair.server_streams(server_ch).open(Dir::Uni).unwrap();
    let data: Vec<u8> = (0..300_000).map(|i| (i * 7) as u8).collect();
    assert_eq!(pair.server_send(server_ch, s).write(&data).unwrap(), data.len());
    pair.server_send(server_ch, s).finish().unwrap();

    for _ in 0..3 {
        pair.drive_server();
        let before = pair.client.inbound.len();
        let mut i = 0;
        pair.client.inbound.retain(|_| {
            i += 1;
            i % 5 != 0
        });
        assert!(pair.client.inbound.len() < before, "a burst lost packets");
        pair.drive_client();
    }
    pair.drive();

    let stats = pair.server_conn_mut(server_ch).stats();
    assert!(stats.path.lost_packets >= 3, "{stats:?}");
    assert_matches!(pair.client_streams(client_ch).accept(Dir::Uni), Some(id) if id == s);
    let got = stream_chunks(pair.client_recv(client_ch, s));
    assert_eq!(&got[..], &data[..]);
    let mut finished = false;
    while let Some(event) = pair.server_conn_mut(server_ch).poll() {
        finished |= matches!(event, Event::Stream(StreamEvent::Finished { id }) if id == s);
    }
    assert!(finished, "every byte of the stream acknowledged");
}

/// (fibra) `Connection::on_packet_acked` merges the stream data of consecutive packets while
/// each continues the one before in the same stream. Two streams sent at once (their packets
/// interleave with fair scheduling) and a third reset after part of it was sent: both
/// finished streams are reported finished once, with all their bytes delivered, and the
/// reset one is not.
#[test]
fn interleaved_streams_are_each_acknowledged_to_their_end() {
    let _guard = subscribe();
    let mut pair = Pair::default_with_deterministic_pns();
    let (client_ch, server_ch) = pair.connect();
    let a = pair.server_streams(server_ch).open(Dir::Uni).unwrap();
    let b = pair.server_streams(server_ch).open(Dir::Uni).unwrap();
    let c = pair.server_streams(server_ch).open(Dir::Uni).unwrap();
    let data_a: Vec<u8> = (0..100_000).map(|i| i as u8).collect();
    let data_b: Vec<u8> = (0..70_001).map(|i| (i * 3) as u8).collect();
    assert_eq!(pair.server_send(server_ch, a).write(&data_a).unwrap(), data_a.len());
    assert_eq!(pair.server_send(server_ch, b).write(&data_b).unwrap(), data_b.len());
    assert_eq!(pair.server_send(server_ch, c).write(&[5; 30_000]).unwrap(), 30_000);
    pair.server_send(server_ch, a).finish().unwrap();
    pair.server_send(server_ch, b).finish().unwrap();
    pair.drive_server();
    pair.server_send(server_ch, c).reset(VarInt(3)).unwrap();
    pair.drive();

    let mut finished = Vec::new();
    while let Some(event) = pair.server_conn_mut(server_ch).poll() {
        if let Event::Stream(StreamEvent::Finished { id }) = event {
            finished.push(id);
        }
    }
    finished.sort();
    assert_eq!(finished, vec![a, b]);
    for (id, data) in [(a, &data_a), (b, &data_b)] {
        assert_matches!(pair.client_streams(client_ch).accept(Dir::Uni), Some(s) if s == id);
        assert_eq!(&stream_chunks(pair.client_recv(client_ch, id))[..], &data[..]);
    }
}
