//! The SETTINGS frame's payload (RFC 9114 §7.2.4): (identifier, value) pairs of
//! variable-length integers, read into [`Settings`] and written from it.
//!
//! Known settings: QPACK's table capacity and blocked streams (RFC 9204 §5), the field
//! section size limit (RFC 9114 §4.2.2), extended CONNECT (RFC 9220) and HTTP datagrams
//! (RFC 9297). Identifiers HTTP/2 defined and HTTP/3 reserves are H3_SETTINGS_ERROR; any
//! other unknown identifier, reserved (grease) ones included, is ignored.

use super::error::H3Error;
use super::frame::{self, kind};
use super::varint;

/// Setting identifiers.
pub(crate) mod id {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY (RFC 9204 §5).
    pub(crate) const QPACK_MAX_TABLE_CAPACITY: u64 = 0x1;
    /// SETTINGS_MAX_FIELD_SECTION_SIZE (RFC 9114 §7.2.4.1).
    pub(crate) const MAX_FIELD_SECTION_SIZE: u64 = 0x6;
    /// SETTINGS_QPACK_BLOCKED_STREAMS (RFC 9204 §5).
    pub(crate) const QPACK_BLOCKED_STREAMS: u64 = 0x7;
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 9220 §3, with RFC 8441's values).
    pub(crate) const ENABLE_CONNECT_PROTOCOL: u64 = 0x8;
    /// SETTINGS_H3_DATAGRAM (RFC 9297 §2.1.1).
    pub(crate) const H3_DATAGRAM: u64 = 0x33;
}

/// HTTP/2's settings with no HTTP/3 counterpart (ENABLE_PUSH, MAX_CONCURRENT_STREAMS,
/// INITIAL_WINDOW_SIZE, MAX_FRAME_SIZE): receiving one is H3_SETTINGS_ERROR (§7.2.4.1).
const HTTP2_ONLY: std::ops::RangeInclusive<u64> = 0x2..=0x5;

/// One side's settings. `Default` is every setting's default value, what applies until
/// the peer's SETTINGS arrives (§7.2.4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Settings {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY: the dynamic table the sender's decoder allows
    /// (default 0: none).
    pub(crate) qpack_max_table_capacity: u64,
    /// SETTINGS_MAX_FIELD_SECTION_SIZE: the largest field section the sender accepts, as
    /// RFC 9114 §4.2.2 counts it (default `None`: unlimited).
    pub(crate) max_field_section_size: Option<u64>,
    /// SETTINGS_QPACK_BLOCKED_STREAMS: streams that may wait for dynamic-table inserts
    /// (default 0).
    pub(crate) qpack_blocked_streams: u64,
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL: extended CONNECT (`:protocol`) is supported
    /// (default off).
    pub(crate) enable_connect_protocol: bool,
    /// SETTINGS_H3_DATAGRAM: HTTP datagrams are supported (default off).
    pub(crate) h3_datagram: bool,
}

impl Settings {
    /// Reads a SETTINGS payload. Errors: a payload that ends inside a pair (H3_FRAME_ERROR,
    /// §7.1); an identifier that occurs twice (§7.2.4 allows treating it as an error, and we
    /// do, for unknown identifiers too), one of HTTP/2's, or a boolean setting other than 0
    /// or 1 (H3_SETTINGS_ERROR).
    pub(crate) fn parse(payload: &[u8]) -> Result<Settings, H3Error> {
        let mut s = Settings::default();
        let mut seen = Vec::new();
        let mut rest = payload;
        while !rest.is_empty() {
            let (id, n) = varint::decode(rest).ok_or(H3Error::FrameError)?;
            rest = &rest[n..];
            let (value, n) = varint::decode(rest).ok_or(H3Error::FrameError)?;
            rest = &rest[n..];
            seen.push(id);
            match id {
                id::QPACK_MAX_TABLE_CAPACITY => s.qpack_max_table_capacity = value,
                id::MAX_FIELD_SECTION_SIZE => s.max_field_section_size = Some(value),
                id::QPACK_BLOCKED_STREAMS => s.qpack_blocked_streams = value,
                id::ENABLE_CONNECT_PROTOCOL => s.enable_connect_protocol = flag(value)?,
                id::H3_DATAGRAM => s.h3_datagram = flag(value)?,
                id if HTTP2_ONLY.contains(&id) => return Err(H3Error::SettingsError),
                _ => {}
            }
        }
        // A payload is read once per connection; sorting its identifiers is cheaper than
        // comparing every pair of a large (grease-padded) one.
        seen.sort_unstable();
        if seen.windows(2).any(|w| w[0] == w[1]) {
            return Err(H3Error::SettingsError);
        }
        Ok(s)
    }

    /// The (identifier, value) pairs of the settings that differ from their defaults, in
    /// identifier order: what a SETTINGS frame has to carry (§7.2.4.2 lets the rest out).
    pub(crate) fn pairs(&self) -> impl Iterator<Item = (u64, u64)> {
        let number = |id, value| (value != 0).then_some((id, value));
        let flag = |id, on: bool| on.then_some((id, 1));
        [
            number(id::QPACK_MAX_TABLE_CAPACITY, self.qpack_max_table_capacity),
            // Unlimited is no value at all; a limit of 0 is a value.
            self.max_field_section_size
                .map(|v| (id::MAX_FIELD_SECTION_SIZE, v)),
            number(id::QPACK_BLOCKED_STREAMS, self.qpack_blocked_streams),
            flag(id::ENABLE_CONNECT_PROTOCOL, self.enable_connect_protocol),
            flag(id::H3_DATAGRAM, self.h3_datagram),
        ]
        .into_iter()
        .flatten()
    }
}

/// A boolean setting's value: 0 or 1, else H3_SETTINGS_ERROR (RFC 9297 §2.1.1; RFC 9220
/// carries over RFC 8441 §3's rule).
fn flag(value: u64) -> Result<bool, H3Error> {
    match value {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(H3Error::SettingsError),
    }
}

/// Appends a SETTINGS frame with `settings`' non-default values, then a reserved setting
/// (`grease`, any value from [`varint::reserved`]) as §7.2.4.1 asks senders to include, when
/// given.
pub(crate) fn put_settings(out: &mut Vec<u8>, settings: &Settings, grease: Option<(u64, u64)>) {
    if let Some((id, _)) = grease {
        debug_assert!(varint::is_reserved(id), "{id:#x} is not a reserved setting");
    }
    let mut payload = Vec::with_capacity(32);
    for (id, value) in settings.pairs().chain(grease) {
        varint::put(&mut payload, id);
        varint::put(&mut payload, value);
    }
    frame::put_frame(out, kind::SETTINGS, &payload);
}

#[cfg(test)]
mod tests;
