//! [`StoredHash`]: one user's password hash as written in an htpasswd file or the site file,
//! checked for a supported format when it is loaded and verified against a password later.
//!
//! Supported: bcrypt (`$2a$`, `$2b$`, `$2y$`) and Argon2 PHC strings (`$argon2id$`,
//! `$argon2i$`, `$argon2d$`). The older htpasswd formats (`{SHA}`, `$apr1$`, crypt(3) and plain
//! text) are fast to brute-force, so a file that uses them fails to load instead of being
//! served with weak hashes.

use std::fmt;
use std::sync::Arc;

use argon2::password_hash::{PasswordHash, PasswordVerifier};
use argon2::Argon2;

/// The hash function a [`StoredHash`] was made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Bcrypt,
    Argon2,
}

/// A password hash in a supported format. Cloning shares the text.
#[derive(Clone)]
pub(crate) struct StoredHash {
    scheme: Scheme,
    /// The hash as written, known to parse as `scheme`; shared so that a verification can move
    /// to a helper thread without copying it.
    text: Arc<str>,
}

/// bcrypt's cost is 4 to 31 (the `bcrypt` crate refuses others when verifying).
const BCRYPT_COSTS: std::ops::RangeInclusive<u32> = 4..=31;

impl StoredHash {
    /// Checks that `text` is a bcrypt or Argon2 hash. The error names the format found and
    /// says what is wrong; it does not repeat the hash.
    pub(crate) fn parse(text: &str) -> Result<StoredHash, String> {
        let scheme = match format_of(text) {
            Format::Bcrypt => {
                let parts: bcrypt::HashParts = text
                    .parse()
                    .map_err(|e| format!("a malformed bcrypt hash ({e})"))?;
                if !BCRYPT_COSTS.contains(&parts.get_cost()) {
                    return Err(format!(
                        "a bcrypt hash with cost {} (expected 4 to 31)",
                        parts.get_cost()
                    ));
                }
                Scheme::Bcrypt
            }
            Format::Argon2 => {
                let hash = PasswordHash::new(text)
                    .map_err(|e| format!("a malformed Argon2 hash ({e})"))?;
                argon2::Params::try_from(&hash)
                    .map_err(|e| format!("an Argon2 hash with bad parameters ({e})"))?;
                if hash.salt.is_none() || hash.hash.is_none() {
                    return Err("an Argon2 hash without salt or output".to_string());
                }
                Scheme::Argon2
            }
            Format::Unsupported(name) => {
                return Err(format!(
                    "unsupported hash format {name}; use bcrypt (htpasswd -B) or Argon2"
                ))
            }
        };
        Ok(StoredHash {
            scheme,
            text: Arc::from(text),
        })
    }

    /// Whether `password` hashes to this hash. Slow on purpose (milliseconds): call it off the
    /// worker's fibers. Both crates compare the outputs in constant time.
    pub(crate) fn verify(&self, password: &[u8]) -> bool {
        let result = match self.scheme {
            Scheme::Bcrypt => bcrypt::verify(password, &self.text).map_err(|e| e.to_string()),
            Scheme::Argon2 => match PasswordHash::new(&self.text) {
                Ok(hash) => match Argon2::default().verify_password(password, &hash) {
                    Ok(()) => Ok(true),
                    Err(argon2::password_hash::Error::Password) => Ok(false),
                    Err(e) => Err(e.to_string()),
                },
                Err(e) => Err(e.to_string()),
            },
        };
        result.unwrap_or_else(|e| {
            // `parse` accepted it, so this is a part it does not look into (a bcrypt salt
            // that is not bcrypt's base64): refuse, and say why once per attempt.
            log::warn!(
                "basic auth: a {:?} hash cannot be verified: {e}",
                self.scheme
            );
            false
        })
    }
}

impl fmt::Debug for StoredHash {
    /// The scheme only: a hash is not for logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoredHash({:?})", self.scheme)
    }
}

/// What a hash's first characters say it is.
enum Format {
    Bcrypt,
    Argon2,
    /// A name for the error message.
    Unsupported(String),
}

fn format_of(text: &str) -> Format {
    if let Some(rest) = text.strip_prefix('$') {
        let id = rest.split('$').next().unwrap_or("");
        return match id {
            "2a" | "2b" | "2y" => Format::Bcrypt,
            "argon2id" | "argon2i" | "argon2d" => Format::Argon2,
            "2x" => Format::Unsupported("$2x$ (bcrypt with the old sign bug)".into()),
            "apr1" => Format::Unsupported("$apr1$ (Apache MD5)".into()),
            "1" => Format::Unsupported("$1$ (MD5-crypt)".into()),
            "5" => Format::Unsupported("$5$ (SHA-256-crypt)".into()),
            "6" => Format::Unsupported("$6$ (SHA-512-crypt)".into()),
            "" => Format::Unsupported("\"$\" with no identifier".into()),
            other => {
                let shown: String = other.chars().take(16).collect();
                Format::Unsupported(format!("${shown}$"))
            }
        };
    }
    if text.starts_with("{SHA}") {
        return Format::Unsupported("{SHA} (SHA-1)".into());
    }
    if text.starts_with('{') {
        let name: String = text.chars().take_while(|&c| c != '}').take(16).collect();
        return Format::Unsupported(format!("{name}}}"));
    }
    if text.is_empty() {
        return Format::Unsupported("(an empty hash)".into());
    }
    Format::Unsupported("crypt(3) or plain text".into())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use argon2::password_hash::{PasswordHasher, SaltString};

    /// A bcrypt hash of `password` at the lowest cost, for tests.
    pub(crate) fn bcrypt_hash(password: &str) -> String {
        bcrypt::hash(password, 4).unwrap()
    }

    /// An Argon2id hash of `password` with small parameters, for tests.
    pub(crate) fn argon2_hash(password: &str) -> String {
        let params = argon2::Params::new(64, 1, 1, None).unwrap();
        let argon = Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
        let salt = SaltString::encode_b64(b"fibra-test-salt!").unwrap();
        argon
            .hash_password(password.as_bytes(), &salt)
            .unwrap()
            .to_string()
    }

    #[test]
    fn bcrypt_verifies() {
        let h = StoredHash::parse(&bcrypt_hash("s3cret")).unwrap();
        assert!(h.verify(b"s3cret"));
        assert!(!h.verify(b"s3cret "));
        assert!(!h.verify(b""));
        for prefix in ["$2a$", "$2b$", "$2y$"] {
            let text = bcrypt_hash("pw").replacen("$2b$", prefix, 1);
            assert!(StoredHash::parse(&text).unwrap().verify(b"pw"), "{prefix}");
        }
    }

    #[test]
    fn argon2_verifies() {
        let h = StoredHash::parse(&argon2_hash("s3cret")).unwrap();
        assert!(h.verify(b"s3cret"));
        assert!(!h.verify(b"S3cret"));
    }

    #[test]
    fn unsupported_formats_are_named() {
        for (text, named) in [
            ("{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=", "{SHA}"),
            ("$apr1$abc$def", "$apr1$"),
            ("$1$abc$def", "$1$"),
            ("$6$abc$def", "$6$"),
            ("$2x$05$abc", "$2x$"),
            ("$scrypt$ln=1$x$y", "$scrypt$"),
            ("{SSHA}abcd", "{SSHA}"),
            ("rl5o6v9JyUy1Q", "crypt(3)"),
            ("", "empty"),
        ] {
            let e = StoredHash::parse(text).unwrap_err();
            assert!(e.contains(named), "{text}: {e}");
            assert!(e.contains("unsupported"), "{text}: {e}");
        }
    }

    #[test]
    fn malformed_supported_hashes_are_refused() {
        let e = StoredHash::parse("$2y$10$short").unwrap_err();
        assert!(e.contains("malformed bcrypt"), "{e}");
        let good = bcrypt_hash("pw");
        let e = StoredHash::parse(&good.replacen("$04$", "$03$", 1)).unwrap_err();
        assert!(e.contains("cost 3"), "{e}");
        let e = StoredHash::parse("$argon2id$v=19$m=x$abc$def").unwrap_err();
        assert!(e.contains("Argon2"), "{e}");
    }
}
