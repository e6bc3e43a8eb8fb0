//! Reading a parsed TOML document into the model: every error collected (not just the first),
//! each naming `file:line:column`, the key path and, for an unknown key, the nearest valid one.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// A position in the site file, for messages (`line:column`, both from 1).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pos {
    /// The file.
    pub file: PathBuf,
    /// Line, from 1.
    pub line: usize,
    /// Column (characters), from 1.
    pub col: usize,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.col)
    }
}

/// One error in a site file: where, which key, what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Where it is.
    pub at: Pos,
    /// The key path (`site[0].route[2].proxy.policy`); empty for a syntax error.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.key.is_empty() {
            true => write!(f, "{}: {}", self.at, self.message),
            false => write!(f, "{}: {}: {}", self.at, self.key, self.message),
        }
    }
}

/// Every error found in a site file (at least one), in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

impl From<ConfigErrors> for std::io::Error {
    fn from(e: ConfigErrors) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string())
    }
}

/// The document being read and the errors found so far.
pub(crate) struct Reader<'a> {
    file: &'a Path,
    text: &'a str,
    /// Byte offset of each line's start.
    lines: Vec<usize>,
    pub(crate) errors: Vec<(usize, ConfigError)>,
}

/// A value with its key path and where it starts.
pub(crate) type Val<'i> = Spanned<DeValue<'i>>;

impl<'a> Reader<'a> {
    pub(crate) fn new(file: &'a Path, text: &'a str) -> Reader<'a> {
        let mut lines = vec![0];
        lines.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Reader {
            file,
            text,
            lines,
            errors: Vec::new(),
        }
    }

    /// The file being read.
    pub(crate) fn file(&self) -> &Path {
        self.file
    }

    /// The position of byte `offset`.
    pub(crate) fn pos(&self, offset: usize) -> Pos {
        let offset = offset.min(self.text.len());
        let line = self.lines.partition_point(|&start| start <= offset);
        let start = self.lines[line - 1];
        let col = self.text[start..offset].chars().count() + 1;
        Pos {
            file: self.file.to_path_buf(),
            line,
            col,
        }
    }

    /// Records an error at `span` for `key`.
    pub(crate) fn error(&mut self, span: Range<usize>, key: &str, message: impl Into<String>) {
        let at = self.pos(span.start);
        self.errors.push((
            span.start,
            ConfigError {
                at,
                key: key.to_owned(),
                message: message.into(),
            },
        ));
    }

    /// The errors found, in file order.
    pub(crate) fn into_errors(mut self) -> Vec<ConfigError> {
        self.errors.sort_by_key(|(at, _)| *at);
        self.errors.into_iter().map(|(_, e)| e).collect()
    }

    /// The entries of the table `v` (at `key`), each checked against `known`: an unknown key
    /// is an error naming the nearest known one. `None` (and an error) if `v` is not a table.
    pub(crate) fn table<'v, 'i>(
        &mut self,
        v: &'v Val<'i>,
        key: &str,
        known: &[&str],
    ) -> Option<Table<'v, 'i>> {
        let DeValue::Table(t) = v.get_ref() else {
            self.error(
                v.span(),
                key,
                format!("expected a table, found {}", kind(v)),
            );
            return None;
        };
        Some(self.entries(t, key, known))
    }

    /// [`table`](Self::table) for the document's top level.
    pub(crate) fn entries<'v, 'i>(
        &mut self,
        t: &'v DeTable<'i>,
        key: &str,
        known: &[&str],
    ) -> Table<'v, 'i> {
        for (k, _) in t.iter() {
            let name: &str = k.get_ref();
            if !known.contains(&name) {
                let path = join(key, name);
                let hint = match nearest(name, known) {
                    Some(n) => format!("unknown key {name:?} (did you mean {n:?}?)"),
                    None => format!(
                        "unknown key {name:?} (expected one of: {})",
                        known.join(", ")
                    ),
                };
                self.error(k.span(), &path, hint);
            }
        }
        Table {
            table: t,
            key: key.to_owned(),
        }
    }

    /// A string.
    pub(crate) fn string(&mut self, v: &Val<'_>, key: &str) -> Option<String> {
        match v.get_ref() {
            DeValue::String(s) => Some(s.to_string()),
            _ => {
                self.error(
                    v.span(),
                    key,
                    format!("expected a string, found {}", kind(v)),
                );
                None
            }
        }
    }

    /// A boolean.
    pub(crate) fn boolean(&mut self, v: &Val<'_>, key: &str) -> Option<bool> {
        match v.get_ref() {
            DeValue::Boolean(b) => Some(*b),
            _ => {
                self.error(
                    v.span(),
                    key,
                    format!("expected true or false, found {}", kind(v)),
                );
                None
            }
        }
    }

    /// A whole number in `min..=max`.
    pub(crate) fn integer(&mut self, v: &Val<'_>, key: &str, min: i64, max: i64) -> Option<i64> {
        let n = match v.get_ref() {
            DeValue::Integer(i) => {
                let digits = i.as_str().replace('_', "");
                let digits = digits.trim_start_matches('+');
                match i.radix() {
                    10 => digits.parse::<i64>().ok(),
                    r => i64::from_str_radix(&digits[2..], r).ok(),
                }
            }
            _ => {
                self.error(
                    v.span(),
                    key,
                    format!("expected a whole number, found {}", kind(v)),
                );
                return None;
            }
        };
        match n {
            Some(n) if (min..=max).contains(&n) => Some(n),
            _ => {
                self.error(
                    v.span(),
                    key,
                    format!("expected a whole number from {min} to {max}"),
                );
                None
            }
        }
    }

    /// A duration written as a string: `"1s"`, `"500ms"`, `"2m"`, `"1h"`, `"1.5s"`.
    pub(crate) fn duration(&mut self, v: &Val<'_>, key: &str) -> Option<Duration> {
        let s = self.string(v, key)?;
        match parse_duration(&s) {
            Ok(d) => Some(d),
            Err(e) => {
                self.error(v.span(), key, e);
                None
            }
        }
    }

    /// A byte size: a whole number, or a string with a unit (`"10MiB"`, `"512k"`).
    pub(crate) fn bytes(&mut self, v: &Val<'_>, key: &str) -> Option<u64> {
        if let DeValue::Integer(_) = v.get_ref() {
            return self.integer(v, key, 0, i64::MAX).map(|n| n as u64);
        }
        let s = self.string(v, key)?;
        match parse_bytes(&s) {
            Ok(n) => Some(n),
            Err(e) => {
                self.error(v.span(), key, e);
                None
            }
        }
    }

    /// An array of strings (a single string is taken as an array of one).
    pub(crate) fn strings(&mut self, v: &Val<'_>, key: &str) -> Option<Vec<String>> {
        match v.get_ref() {
            DeValue::String(s) => Some(vec![s.to_string()]),
            DeValue::Array(a) => {
                let mut out = Vec::with_capacity(a.len());
                let mut ok = true;
                for (i, item) in a.iter().enumerate() {
                    match self.string(item, &format!("{key}[{i}]")) {
                        Some(s) => out.push(s),
                        None => ok = false,
                    }
                }
                ok.then_some(out)
            }
            _ => {
                self.error(
                    v.span(),
                    key,
                    format!("expected an array of strings, found {}", kind(v)),
                );
                None
            }
        }
    }

    /// An array of tables (a single table is taken as an array of one).
    pub(crate) fn tables<'v, 'i>(
        &mut self,
        v: &'v Val<'i>,
        key: &str,
    ) -> Vec<(String, &'v Val<'i>)> {
        match v.get_ref() {
            DeValue::Table(_) => vec![(format!("{key}[0]"), v)],
            DeValue::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, item)| (format!("{key}[{i}]"), item))
                .collect(),
            _ => {
                self.error(v.span(), key, format!("expected tables, found {}", kind(v)));
                Vec::new()
            }
        }
    }
}

/// A table's entries, with its key path.
pub(crate) struct Table<'v, 'i> {
    table: &'v DeTable<'i>,
    pub(crate) key: String,
}

impl<'v, 'i> Table<'v, 'i> {
    /// The value of `name`, with its key path.
    pub(crate) fn get(&self, name: &str) -> Option<(String, &'v Val<'i>)> {
        self.table
            .iter()
            .find(|(k, _)| {
                let k: &Cow<'_, str> = k.get_ref();
                k == name
            })
            .map(|(_, v)| (join(&self.key, name), v))
    }

    /// Every entry, with its key path.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&'v str, String, &'v Val<'i>)> + '_ {
        self.table.iter().map(move |(k, v)| {
            let name: &str = k.get_ref();
            (name, join(&self.key, name), v)
        })
    }
}

/// `a.b`, or `b` at the top.
pub(crate) fn join(key: &str, name: &str) -> String {
    match key.is_empty() {
        true => name.to_owned(),
        false => format!("{key}.{name}"),
    }
}

/// What kind of value `v` is, for messages.
pub(crate) fn kind(v: &Val<'_>) -> &'static str {
    match v.get_ref() {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "a whole number",
        DeValue::Float(_) => "a number",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// The known key closest to `name` (edit distance at most a third of its length, at least
/// 2), if any.
pub(crate) fn nearest<'k>(name: &str, known: &[&'k str]) -> Option<&'k str> {
    let limit = (name.chars().count() / 3).max(2);
    known
        .iter()
        .map(|k| (edit_distance(name, k), *k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance, case-insensitive, with `-` and `_` alike.
fn edit_distance(a: &str, b: &str) -> usize {
    let norm = |c: char| match c {
        '-' => '_',
        c => c.to_ascii_lowercase(),
    };
    let a: Vec<char> = a.chars().map(norm).collect();
    let b: Vec<char> = b.chars().map(norm).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Parses `"1s"`, `"500ms"`, `"1.5s"`, `"2m"`, `"1h"`, `"10us"`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "us" | "µs" => 1e-6,
        "" => {
            return Err(format!(
                "{s:?}: a duration needs a unit (\"1s\", \"500ms\", \"2m\")"
            ))
        }
        u => return Err(format!("{s:?}: unknown unit {u:?} (ms, s, m, h)")),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?}: not a duration (\"1s\", \"500ms\", \"2m\")"))?;
    Duration::try_from_secs_f64(n * scale).map_err(|e| format!("{s:?}: {e}"))
}

/// Writes a duration as the site file reads it (`"1s"`, `"500ms"`, `"1.5s"`).
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if !d.subsec_nanos().is_multiple_of(1_000_000) {
        format!("{}s", d.as_secs_f64())
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// Parses a byte size: `"1024"`, `"512k"`, `"10MiB"`, `"1G"` (k/M/G are powers of 1024).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?}: not a size (\"512k\", \"10MiB\")"))?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        u => return Err(format!("{s:?}: unknown unit {u:?} (k, M, G)")),
    };
    n.checked_mul(scale)
        .ok_or_else(|| format!("{s:?}: too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_and_write_back() {
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("10").unwrap_err().contains("needs a unit"));
        assert!(parse_duration("3 days").is_err());
        for d in ["1s", "500ms", "1500ms", "0s", "60s"] {
            assert_eq!(format_duration(parse_duration(d).unwrap()), d);
        }
    }

    #[test]
    fn sizes_have_binary_units() {
        assert_eq!(parse_bytes("512k"), Ok(512 * 1024));
        assert_eq!(parse_bytes("10MiB"), Ok(10 << 20));
        assert_eq!(parse_bytes("7"), Ok(7));
        assert!(parse_bytes("1T").is_err());
    }

    #[test]
    fn nearest_key_allows_small_typos() {
        let known = ["upstreams", "policy", "health"];
        assert_eq!(nearest("upstream", &known), Some("upstreams"));
        assert_eq!(nearest("polcy", &known), Some("policy"));
        assert_eq!(nearest("zzz", &known), None);
    }

    #[test]
    fn positions_count_lines_and_characters() {
        let text = "a = 1\nbé = 2\n";
        let r = Reader::new(Path::new("f.toml"), text);
        assert_eq!(r.pos(0).to_string(), "f.toml:1:1");
        let at = text.find('=').unwrap();
        assert_eq!((r.pos(at).line, r.pos(at).col), (1, 3));
        let second = text.rfind('=').unwrap();
        assert_eq!((r.pos(second).line, r.pos(second).col), (2, 4));
    }
}
