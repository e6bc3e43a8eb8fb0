//! An HTTP/3 connection over a QUIC connection ([`serve_connection`]): the server's control
//! stream with its SETTINGS, the client's control and QPACK streams checked in fibers of
//! their own, and a fiber per request stream (`stream::run`) running the same handler as
//! HTTP/1.1 and HTTP/2.
//!
//! The server advertises no QPACK dynamic table and no blocked streams (the defaults), and
//! its field section limit (`Settings::max_head_bytes`). A client that breaks HTTP/3 gets the
//! connection closed with the error's code (RFC 9114 §8).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use fibra_quic::{Connection, RecvStream};

use super::drain::Drain;
use super::frame::{Carrier, FrameKind};
use super::incoming::{Fail, Incoming, Next};
use super::qpack::{DecoderStreamReader, EncoderStreamReader};
use super::request_head::LastHeads;
use super::settings::{put_settings, Settings as H3Settings};
use super::stream_type::{self, StreamType};
use super::{stream, H3Error};
use crate::service::Service;
use crate::settings::Settings;

/// Which of the client's critical unidirectional streams have been opened (each may be
/// opened once, §6.2.1, RFC 9204 §4.2).
#[derive(Default)]
struct Opened {
    control: AtomicBool,
    encoder: AtomicBool,
    decoder: AtomicBool,
}

/// Serves HTTP/3 on an accepted QUIC connection until it ends, running `handler` for each
/// request, each in a fiber of its own on this fiber's worker. Returns when the client
/// closes the connection or it fails; a client that breaks HTTP/3 has it closed with the
/// error's code. For a graceful shutdown, see [`serve_connection_draining`].
pub fn serve_connection<H>(conn: Connection, settings: Arc<Settings>, handler: Arc<H>)
where
    H: Service + Send + Sync + ?Sized + 'static,
{
    serve_connection_draining(conn, settings, handler, &Drain::new());
}

/// As [`serve_connection`], and when `drain` begins: GOAWAY, the requests taken answered,
/// later ones refused (H3_REQUEST_REJECTED), then the connection closed (see [`Drain`]).
pub fn serve_connection_draining<H>(
    conn: Connection,
    settings: Arc<Settings>,
    handler: Arc<H>,
    drain: &Drain,
) where
    H: Service + Send + Sync + ?Sized + 'static,
{
    let peer = Some(conn.remote_address());
    // The control stream stays open as long as the connection: closing it is an error.
    let mut control = match conn.open_uni() {
        Ok(s) => s,
        Err(e) => {
            log::debug!("HTTP/3 connection from {peer:?}: {e}");
            return;
        }
    };
    let mut opening = Vec::with_capacity(32);
    stream_type::put(&mut opening, StreamType::Control);
    let ours = H3Settings {
        max_field_section_size: Some(settings.max_head_bytes as u64),
        ..H3Settings::default()
    };
    put_settings(&mut opening, &ours, None);
    if let Err(e) = control.write_all(&opening) {
        log::debug!("HTTP/3 connection from {peer:?}: {e}");
        return;
    }
    let worker = fibra::current_worker();
    let opened = Arc::new(Opened::default());
    {
        let conn = conn.clone();
        let settings = settings.clone();
        spawn_on(worker, move || accept_uni(conn, settings, opened, worker));
    }
    let requests = drain.register(conn.clone());
    {
        let requests = requests.clone();
        spawn_on(worker, move || requests.watch(control));
    }
    let last_heads = Arc::new(Mutex::new(LastHeads::default()));
    while let Ok((mut send, mut recv)) = conn.accept_bi() {
        if !requests.take(u64::from(send.id())) {
            // After our GOAWAY's id: not processed, the client may retry it (§5.2).
            let code = H3Error::RequestRejected.code();
            let _ = send.reset(code);
            let _ = recv.stop(code);
            continue;
        }
        let (conn, settings, handler) = (conn.clone(), settings.clone(), handler.clone());
        let (requests, last_heads) = (requests.clone(), last_heads.clone());
        spawn_on(worker, move || {
            let result = stream::run(send, recv, &settings, &*handler, peer, &last_heads);
            requests.answered();
            if let Err(e) = result {
                close(&conn, e);
            }
        });
    }
    requests.ended();
}

/// Closes `conn` with the HTTP/3 error `e`.
fn close(conn: &Connection, e: H3Error) {
    log::debug!("HTTP/3 connection from {}: {e}", conn.remote_address());
    conn.close(e.code(), e.name().as_bytes());
}

/// Spawns `f` on worker `worker` (where the connection's other fibers run).
pub(super) fn spawn_on(worker: Option<usize>, f: impl FnOnce() + Send + 'static) {
    let builder = fibra::fiber::Builder::new();
    let builder = match worker {
        Some(w) => builder.worker(w),
        None => builder,
    };
    if let Err(e) = builder.spawn(f) {
        log::warn!("HTTP/3: cannot start a fiber: {e}");
    }
}

/// Takes the client's unidirectional streams, each into a fiber of its own.
fn accept_uni(
    conn: Connection,
    settings: Arc<Settings>,
    opened: Arc<Opened>,
    worker: Option<usize>,
) {
    while let Ok(recv) = conn.accept_uni() {
        let (conn, settings, opened) = (conn.clone(), settings.clone(), opened.clone());
        spawn_on(worker, move || {
            if let Err(e) = uni_stream(recv, &settings, &opened) {
                close(&conn, e);
            }
        });
    }
}

/// Reads one of the client's unidirectional streams: its type, then what that type carries.
fn uni_stream(recv: RecvStream, settings: &Settings, opened: &Opened) -> Result<(), H3Error> {
    let mut incoming = Incoming::new(recv, Carrier::Control);
    let ty = match incoming.stream_type() {
        Ok(Some(ty)) => ty,
        // Gone before its type: nothing to act on (§6.2).
        Ok(None) | Err(Fail::Io(_)) => return Ok(()),
        Err(Fail::Protocol(e)) => return Err(e),
    };
    ty.check_from_client()?;
    let once = |flag: &AtomicBool| {
        if flag.swap(true, Ordering::AcqRel) {
            Err(H3Error::StreamCreationError)
        } else {
            Ok(())
        }
    };
    match ty {
        StreamType::Control => {
            once(&opened.control)?;
            control_stream(incoming, settings)
        }
        StreamType::QpackEncoder => {
            once(&opened.encoder)?;
            let mut reader = EncoderStreamReader::default();
            instruction_stream(incoming, |bytes| {
                reader.feed(bytes).map_err(|e| e.h3_error())
            })
        }
        StreamType::QpackDecoder => {
            once(&opened.decoder)?;
            let mut reader = DecoderStreamReader::default();
            instruction_stream(incoming, |bytes| {
                reader.feed(bytes, |_| {}).map_err(|e| e.h3_error())
            })
        }
        StreamType::Push | StreamType::Unknown(_) => {
            // Unknown types are discarded (§6.2): ask the client to stop sending.
            let _ = incoming
                .recv_mut()
                .stop(H3Error::StreamCreationError.code());
            Ok(())
        }
    }
}

/// The client's control stream: SETTINGS first (§6.2.1), then GOAWAY, MAX_PUSH_ID,
/// CANCEL_PUSH or unknown frames, until the connection ends. Its end is an error.
fn control_stream(mut incoming: Incoming, settings: &Settings) -> Result<(), H3Error> {
    let max = super::stream::max_frame(settings.max_head_bytes);
    let mut first = true;
    loop {
        let next = match incoming.next(max) {
            Ok(next) => next,
            // The connection is over (the stream reset with it).
            Err(Fail::Io(_)) => return Ok(()),
            Err(Fail::Protocol(e)) => return Err(e),
        };
        match next {
            Next::Frame(FrameKind::Settings, payload) if first => {
                H3Settings::parse(&payload)?;
                first = false;
            }
            _ if first => return Err(H3Error::MissingSettings),
            Next::Frame(FrameKind::Settings, _) => return Err(H3Error::FrameUnexpected),
            // GOAWAY from a client names the last push it will take; the server pushes
            // nothing, so it changes nothing here. MAX_PUSH_ID and CANCEL_PUSH likewise.
            Next::Frame(..) => {}
            Next::End => return Err(H3Error::ClosedCriticalStream),
            // Refused by `Incoming` on a control stream.
            Next::Headers(_) | Next::Data => return Err(H3Error::FrameUnexpected),
        }
    }
}

/// A QPACK instruction stream: every byte through `feed` until the connection ends. Its
/// end is an error (RFC 9204 §4.2).
fn instruction_stream(
    mut incoming: Incoming,
    mut feed: impl FnMut(&[u8]) -> Result<(), Option<H3Error>>,
) -> Result<(), H3Error> {
    loop {
        let bytes = match incoming.raw() {
            Ok(b) => b,
            Err(Fail::Io(_)) => return Ok(()),
            Err(Fail::Protocol(e)) => return Err(e),
        };
        if bytes.is_empty() {
            return Err(H3Error::ClosedCriticalStream);
        }
        feed(bytes).map_err(|e| e.unwrap_or(H3Error::InternalError))?;
    }
}
