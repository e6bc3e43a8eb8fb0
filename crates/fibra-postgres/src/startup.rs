//! Opening a session: the startup message, authentication (trust, cleartext, MD5,
//! SCRAM-SHA-256), and the server's parameters up to the first `ReadyForQuery`; also the
//! cancel request, sent on a connection of its own.

use crate::config::Config;
use crate::error::{DbError, Error, ErrorKind};
use crate::stream::Stream;
use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use std::io;

/// Bytes read at a time: room for many pipelined answers.
pub(crate) const READ_CHUNK: usize = 16 * 1024;

/// What the server needs to cancel this session's running query.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BackendKey {
    pub(crate) process_id: i32,
    pub(crate) secret_key: i32,
}

/// Reads more bytes from `stream` into `rbuf`; `Ok(0)` is end of stream.
pub(crate) fn fill(stream: &Stream, rbuf: &mut BytesMut) -> io::Result<usize> {
    rbuf.reserve(READ_CHUNK);
    let len = rbuf.len();
    let room = rbuf.capacity() - len;
    rbuf.resize(len + room, 0);
    let r = stream.read(&mut rbuf[len..]);
    rbuf.truncate(len + *r.as_ref().unwrap_or(&0));
    r
}

/// The next whole message, reading as needed; end of stream is an `UnexpectedEof` error.
fn next_message(stream: &Stream, rbuf: &mut BytesMut) -> io::Result<Message> {
    loop {
        if let Some(m) = Message::parse(rbuf)? {
            return Ok(m);
        }
        if fill(stream, rbuf)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
    }
}

/// Opens a session on `stream`: returns the cancel key and whatever the server sent after
/// its first `ReadyForQuery` (nothing, normally).
pub(crate) fn startup(stream: &Stream, config: &Config) -> Result<(BackendKey, BytesMut), Error> {
    let io_err = |e: io::Error| Error::io(ErrorKind::Connect, "startup", e);
    stream
        .set_read_timeout(Some(config.get_connect_timeout()))
        .map_err(io_err)?;
    stream
        .set_write_timeout(Some(config.get_connect_timeout()))
        .map_err(io_err)?;
    let mut out = BytesMut::with_capacity(256);
    frontend::startup_message(
        [
            ("user", config.get_user()),
            ("database", config.get_dbname()),
            ("client_encoding", "UTF8"),
            ("application_name", "fibra-postgres"),
        ],
        &mut out,
    )
    .map_err(io_err)?;
    stream.write_all(&out).map_err(io_err)?;
    let mut rbuf = BytesMut::with_capacity(READ_CHUNK);
    let mut key = BackendKey {
        process_id: 0,
        secret_key: 0,
    };
    let mut scram: Option<sasl::ScramSha256> = None;
    let password = || {
        config.get_password().ok_or_else(|| {
            Error::new(
                ErrorKind::Auth,
                "the server asks for a password and none is configured",
            )
        })
    };
    loop {
        out.clear();
        match next_message(stream, &mut rbuf).map_err(io_err)? {
            Message::AuthenticationOk => {}
            Message::AuthenticationCleartextPassword => {
                frontend::password_message(password()?.as_bytes(), &mut out).map_err(io_err)?;
            }
            Message::AuthenticationMd5Password(body) => {
                let hash = md5_hash(
                    config.get_user().as_bytes(),
                    password()?.as_bytes(),
                    body.salt(),
                );
                frontend::password_message(hash.as_bytes(), &mut out).map_err(io_err)?;
            }
            Message::AuthenticationSasl(body) => {
                let mut mechanisms = body.mechanisms();
                let mut found = false;
                while let Some(m) = mechanisms.next().map_err(io_err)? {
                    found |= m == sasl::SCRAM_SHA_256;
                }
                if !found {
                    return Err(Error::new(
                        ErrorKind::Auth,
                        "the server offers no SASL mechanism this client speaks (SCRAM-SHA-256)",
                    ));
                }
                let s = sasl::ScramSha256::new(
                    password()?.as_bytes(),
                    sasl::ChannelBinding::unsupported(),
                );
                frontend::sasl_initial_response(sasl::SCRAM_SHA_256, s.message(), &mut out)
                    .map_err(io_err)?;
                scram = Some(s);
            }
            Message::AuthenticationSaslContinue(body) => {
                let s = scram.as_mut().ok_or_else(|| unexpected("SASL continue"))?;
                s.update(body.data())
                    .map_err(|e| Error::io(ErrorKind::Auth, "SCRAM", e))?;
                frontend::sasl_response(s.message(), &mut out).map_err(io_err)?;
            }
            Message::AuthenticationSaslFinal(body) => {
                let s = scram.as_mut().ok_or_else(|| unexpected("SASL final"))?;
                s.finish(body.data())
                    .map_err(|e| Error::io(ErrorKind::Auth, "SCRAM server signature", e))?;
            }
            Message::BackendKeyData(body) => {
                key = BackendKey {
                    process_id: body.process_id(),
                    secret_key: body.secret_key(),
                };
            }
            Message::ParameterStatus(_) | Message::NoticeResponse(_) => {}
            Message::ReadyForQuery(_) => break,
            Message::ErrorResponse(body) => {
                let db = DbError::parse(&body);
                let kind = if db.code.starts_with("28") {
                    ErrorKind::Auth
                } else {
                    ErrorKind::Connect
                };
                return Err(Error::db(kind, db));
            }
            Message::AuthenticationKerberosV5
            | Message::AuthenticationScmCredential
            | Message::AuthenticationGss
            | Message::AuthenticationSspi
            | Message::AuthenticationGssContinue(_) => {
                return Err(Error::new(
                    ErrorKind::Auth,
                    "the server asks for an authentication method this client does not speak",
                ));
            }
            _ => return Err(unexpected("a message during startup")),
        }
        if !out.is_empty() {
            stream.write_all(&out).map_err(io_err)?;
        }
    }
    stream.set_read_timeout(None).map_err(io_err)?;
    Ok((key, rbuf))
}

fn unexpected(what: &str) -> Error {
    Error::new(ErrorKind::Protocol, format!("unexpected {what}"))
}

/// Asks the server to cancel the query `key`'s session is running (best effort: the answer
/// is the server closing this extra connection).
pub(crate) fn cancel(config: &Config, key: BackendKey) -> Result<(), Error> {
    let stream = Stream::connect(config)?;
    let mut out = BytesMut::with_capacity(16);
    frontend::cancel_request(key.process_id, key.secret_key, &mut out);
    let io_err = |e: io::Error| Error::io(ErrorKind::Connect, "cancel request", e);
    stream
        .set_write_timeout(Some(config.get_connect_timeout()))
        .map_err(io_err)?;
    stream.write_all(&out).map_err(io_err)?;
    // Wait for the server to close it, so the cancel has been handled when this returns.
    stream
        .set_read_timeout(Some(config.get_connect_timeout()))
        .map_err(io_err)?;
    let mut b = [0u8; 16];
    let _ = stream.read(&mut b);
    Ok(())
}
