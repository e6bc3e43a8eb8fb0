//! Reading an htpasswd file (`user:hash` per line, as Apache's `htpasswd -B` writes it) into
//! users and their [`StoredHash`]es, with errors that point at the line and column.
//!
//! The format: one `user:hash` per line; blank lines and lines whose first non-blank
//! character is `#` are skipped; white space at the end of a line (a `\r` too) is ignored; a
//! third `:`-separated field is a comment, as nginx allows. A user name is everything before
//! the first `:`, so it cannot hold one.

use std::error::Error;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::stored_hash::StoredHash;

/// Why an htpasswd file could not be loaded: the file, and where possible the line and
/// column (both from 1) of the fault. Displayed as `PATH:LINE:COLUMN: WHAT`.
#[derive(Debug)]
pub struct HtpasswdError {
    path: PathBuf,
    /// Line and column, when the fault is in one line.
    at: Option<(usize, usize)>,
    what: String,
    io: Option<io::Error>,
}

impl HtpasswdError {
    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The line of the fault, from 1; `None` when it is not in one line (the file cannot be
    /// read, or holds no users).
    pub fn line(&self) -> Option<usize> {
        self.at.map(|(line, _)| line)
    }

    /// The column of the fault in characters, from 1; `None` as for [`line`](Self::line).
    pub fn column(&self) -> Option<usize> {
        self.at.map(|(_, column)| column)
    }

    /// What is wrong, without the place.
    pub fn what(&self) -> &str {
        &self.what
    }

    pub(crate) fn whole_file(path: &Path, what: String) -> HtpasswdError {
        HtpasswdError {
            path: path.to_path_buf(),
            at: None,
            what,
            io: None,
        }
    }
}

impl fmt::Display for HtpasswdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Some((line, column)) => {
                write!(f, "{}:{line}:{column}: {}", self.path.display(), self.what)
            }
            None => write!(f, "{}: {}", self.path.display(), self.what),
        }
    }
}

impl Error for HtpasswdError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.io.as_ref().map(|e| e as _)
    }
}

/// One user of the file.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) user: String,
    pub(crate) hash: StoredHash,
}

/// Reads and checks the file at `path`. Fails on the first bad line, on a user named twice
/// and on a file with no users (a typo that would lock everyone out is better found at load).
pub(crate) fn read(path: &Path) -> Result<Vec<Entry>, HtpasswdError> {
    let bytes = fs::read(path).map_err(|e| HtpasswdError {
        path: path.to_path_buf(),
        at: None,
        what: format!("cannot be read: {e}"),
        io: Some(e),
    })?;
    parse(&bytes)
        .map_err(|(line, column, what)| HtpasswdError {
            path: path.to_path_buf(),
            at: Some((line, column)),
            what,
            io: None,
        })
        .and_then(|entries| {
            if entries.is_empty() {
                Err(HtpasswdError::whole_file(path, "holds no users".into()))
            } else {
                Ok(entries)
            }
        })
}

/// Parses the file's bytes; an error is (line, column, what).
fn parse(bytes: &[u8]) -> Result<Vec<Entry>, (usize, usize, String)> {
    let mut entries: Vec<Entry> = Vec::new();
    // The line each user was defined on, for the duplicate message.
    let mut lines_of: std::collections::HashMap<String, usize> = Default::default();
    for (index, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line_no = index + 1;
        let line = std::str::from_utf8(raw).map_err(|e| {
            let column = chars(&raw[..e.valid_up_to()]) + 1;
            (line_no, column, "not UTF-8".to_string())
        })?;
        let line = line.trim_end();
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some((user, rest)) = line.split_once(':') else {
            return Err((
                line_no,
                line.chars().count() + 1,
                "expected `user:hash`, found no `:`".into(),
            ));
        };
        if user.is_empty() {
            return Err((line_no, 1, "empty user name before `:`".into()));
        }
        let hash_column = user.chars().count() + 2;
        let hash_text = rest.split(':').next().unwrap_or("");
        let hash = StoredHash::parse(hash_text).map_err(|e| (line_no, hash_column, e))?;
        if let Some(first) = lines_of.get(user) {
            return Err((
                line_no,
                1,
                format!("user {user:?} is already defined on line {first}"),
            ));
        }
        lines_of.insert(user.to_string(), line_no);
        entries.push(Entry {
            user: user.to_string(),
            hash,
        });
    }
    Ok(entries)
}

fn chars(valid: &[u8]) -> usize {
    std::str::from_utf8(valid).map_or(valid.len(), |s| s.chars().count())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::stored_hash::tests::{argon2_hash, bcrypt_hash};

    fn err(text: &[u8]) -> (usize, usize, String) {
        parse(text).unwrap_err()
    }

    #[test]
    fn reads_users_comments_and_blank_lines() {
        let text = format!(
            "# users\n\nalice:{}\r\n  # indented comment\nbob:{}:the builder\n",
            bcrypt_hash("a"),
            argon2_hash("b")
        );
        let entries = parse(text.as_bytes()).unwrap();
        let users: Vec<_> = entries.iter().map(|e| e.user.as_str()).collect();
        assert_eq!(users, ["alice", "bob"]);
        assert!(entries[0].hash.verify(b"a"));
        assert!(entries[1].hash.verify(b"b"));
    }

    #[test]
    fn bad_lines_are_placed() {
        let good = bcrypt_hash("x");
        let (line, column, what) = err(format!("a:{good}\nnocolon\n").as_bytes());
        assert_eq!((line, column), (2, 8), "{what}");
        assert!(what.contains("no `:`"), "{what}");

        let (line, column, what) = err(b"\n:$2y$05$abc\n");
        assert_eq!((line, column), (2, 1), "{what}");
        assert!(what.contains("empty user"), "{what}");

        let (line, column, what) = err(b"# c\nj\xc3\xa9r\xc3\xb4me:{SHA}abc=\n");
        assert_eq!((line, column), (2, 8), "{what}");
        assert!(what.contains("{SHA}"), "{what}");

        let (line, column, what) = err(b"bob:$apr1$salt$hash\n");
        assert_eq!((line, column), (1, 5), "{what}");
        assert!(what.contains("$apr1$"), "{what}");

        let (line, column, what) = err(b"ok\xffx:abc\n");
        assert_eq!((line, column), (1, 3), "{what}");
        assert!(what.contains("UTF-8"), "{what}");

        let (line, column, what) = err(format!("a:{good}\n\na:{good}\n").as_bytes());
        assert_eq!((line, column), (3, 1), "{what}");
        assert!(what.contains("line 1"), "{what}");
    }

    #[test]
    fn file_errors_name_the_path() {
        let dir = std::env::temp_dir().join(format!("fibra-htpasswd-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();

        let missing = dir.join("missing");
        let e = read(&missing).unwrap_err();
        assert_eq!(e.line(), None);
        assert!(e.source().is_some());
        assert!(
            e.to_string().starts_with(&missing.display().to_string()),
            "{e}"
        );

        let bad = dir.join("bad");
        fs::write(&bad, "# admins\nroot:{SHA}abc=\n").unwrap();
        let e = read(&bad).unwrap_err();
        assert_eq!((e.line(), e.column()), (Some(2), Some(6)));
        assert_eq!(e.path(), bad);
        assert_eq!(
            e.to_string(),
            format!("{}:2:6: {}", bad.display(), e.what()),
        );

        let empty = dir.join("empty");
        fs::write(&empty, "# nobody\n").unwrap();
        let e = read(&empty).unwrap_err();
        assert!(e.what().contains("no users"), "{e}");

        fs::remove_dir_all(&dir).unwrap();
    }
}
