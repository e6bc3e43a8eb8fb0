//! (fibra) `SendStream::unsent`: the bytes a stream's writer is ahead of its packets.

use super::*;

/// Written bytes count as unsent until a packet carries them once; a loss that queues them
/// again does not count them anew; a receive stream or a forgotten one answers
/// `ClosedStream`.
#[test]
fn unsent_counts_what_no_packet_carried_yet() {
    let _guard = subscribe();
    let mut pair = Pair::default();
    let (client_ch, server_ch) = pair.connect();
    let s = pair.server_streams(server_ch).open(Dir::Uni).unwrap();
    assert_eq!(pair.server_send(server_ch, s).unsent(), Ok(0));
    let data = vec![7u8; 40_000];
    assert_eq!(pair.server_send(server_ch, s).write(&data).unwrap(), 40_000);
    assert_eq!(pair.server_send(server_ch, s).unsent(), Ok(40_000));

    // One packet made: what it carries is no longer unsent.
    let now = pair.time;
    let mut buf = Vec::with_capacity(1500);
    let t = pair
        .server_conn_mut(server_ch)
        .poll_transmit(now, 1, &mut buf)
        .unwrap();
    let left = pair.server_send(server_ch, s).unsent().unwrap();
    assert!(
        left < 40_000 && left + t.size as u64 >= 40_000,
        "{left} after {}",
        t.size
    );
    // That packet is lost (never delivered); the rest goes out and arrives.
    pair.server.outbound.clear();
    pair.drive();
    assert_eq!(pair.server_send(server_ch, s).unsent(), Ok(0));
    let more = vec![8u8; 5_000];
    assert_eq!(pair.server_send(server_ch, s).write(&more).unwrap(), 5_000);
    assert_eq!(pair.server_send(server_ch, s).unsent(), Ok(5_000));
    pair.server_send(server_ch, s).finish().unwrap();
    pair.drive();
    // Acknowledged and finished: the stream is forgotten.
    assert!(pair.server_send(server_ch, s).unsent().is_err());

    let mut recv = pair.client_recv(client_ch, s);
    let mut chunks = recv.read(true).unwrap();
    let mut got = 0;
    while let Ok(Some(chunk)) = chunks.next(usize::MAX) {
        got += chunk.bytes.len();
    }
    let _ = chunks.finalize();
    assert_eq!(got, 45_000, "the lost packet's bytes were sent again");
}
