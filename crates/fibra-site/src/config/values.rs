//! Values that keys of several tables take (durations, paths, address ranges) and the
//! helpers that read them, shared by `schema` and `route_schema`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fibra_http::IpNet;
use toml::de::DeValue;

use super::reader::{Reader, Val};

/// `path` taken from the file's directory when relative.
pub(super) fn path_in(base: &Path, p: &str) -> PathBuf {
    let p = Path::new(p);
    match p.is_absolute() {
        true => p.to_path_buf(),
        false => base.join(p),
    }
}

/// Stores `value` in `slot` when there is one (a key given and valid).
pub(super) fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}

/// A duration longer than 0 s.
pub(super) fn positive(r: &mut Reader<'_>, v: &Val<'_>, key: &str) -> Option<Duration> {
    let d = r.duration(v, key)?;
    if d.is_zero() {
        r.error(v.span(), key, "must be longer than 0s");
        return None;
    }
    Some(d)
}

/// A URL path (starting with `/`).
pub(super) fn url_path(r: &mut Reader<'_>, v: &Val<'_>, key: &str) -> Option<String> {
    let s = r.string(v, key)?;
    if !s.starts_with('/') {
        r.error(v.span(), key, format!("{s:?}: a path must start with /"));
        return None;
    }
    Some(s)
}

/// A list of addresses or CIDR ranges.
pub(super) fn nets(r: &mut Reader<'_>, v: &Val<'_>, key: &str) -> Vec<IpNet> {
    let Some(list) = r.strings(v, key) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, s) in list.iter().enumerate() {
        match s.parse::<IpNet>() {
            Ok(n) => out.push(n),
            Err(e) => r.error(item_span(v, i), &format!("{key}[{i}]"), e.to_string()),
        }
    }
    out
}

/// The span of item `i` of an array (or of the value itself).
pub(super) fn item_span(v: &Val<'_>, i: usize) -> std::ops::Range<usize> {
    match v.get_ref() {
        DeValue::Array(a) => a.get(i).map_or(v.span(), |x| x.span()),
        _ => v.span(),
    }
}

/// A log's path: `-` (stdout), else taken from the file's directory when relative.
pub(super) fn log_path(base: &Path, p: &str) -> String {
    match p {
        "-" => p.to_owned(),
        p => path_in(base, p).display().to_string(),
    }
}
