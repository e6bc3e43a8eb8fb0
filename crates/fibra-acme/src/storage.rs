//! What survives a restart, under [`AcmeConfig::storage`](crate::AcmeConfig::storage):
//!
//! ```text
//! <storage>/                                  0700
//!   <directory>/                              0700  one per ACME server, e.g.
//!                                                   acme-v02.api.letsencrypt.org-directory
//!     account.key                             0600  the account's P-256 key (PKCS#8 PEM)
//!     account.json                            0600  {"url": the account URL} once registered
//!     certificates/<first name>[+<hash>]/     0700  one per managed set of names
//!       cert.pem                              0644  the chain, leaf first
//!       key.pem                               0600  its private key (PKCS#8 PEM)
//! ```
//!
//! An account belongs to one server, and so do its certificates, so each directory URL has
//! its own tree: switching from a staging to a production server starts afresh. Files are
//! written whole and renamed into place, so a crash leaves the old file or the new one.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::PrivateKeyDer;
use serde_json::{json, Value};

use crate::jws::{b64url, sha256, AccountKey};

/// The storage of one ACME server's account and certificates.
#[derive(Debug)]
pub(crate) struct Storage {
    /// `<storage>/<directory>`.
    dir: PathBuf,
}

/// A certificate and key as stored.
#[derive(Debug)]
pub(crate) struct StoredPair {
    pub(crate) chain_pem: Vec<u8>,
    pub(crate) key_pem: Vec<u8>,
}

impl Storage {
    /// The storage for the server at `directory_url` under `root`, both created (0700) if
    /// missing.
    pub(crate) fn open(root: &Path, directory_url: &str) -> io::Result<Storage> {
        private_dir(root)?;
        let dir = root.join(directory_slug(directory_url));
        private_dir(&dir)?;
        Ok(Storage { dir })
    }

    /// The account key, created and saved (0600) the first time.
    pub(crate) fn account_key(&self) -> io::Result<AccountKey> {
        let path = self.dir.join("account.key");
        match fs::read(&path) {
            Ok(pem) => {
                let named = |why: String| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("{}: {why}", path.display()),
                    )
                };
                match PrivateKeyDer::from_pem_slice(&pem).map_err(|e| named(e.to_string()))? {
                    PrivateKeyDer::Pkcs8(der) => AccountKey::from_pkcs8(der.secret_pkcs8_der())
                        .map_err(|e| named(e.to_string())),
                    _ => Err(named("not a PKCS#8 key".into())),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let key = AccountKey::generate()?;
                write_file(&path, pem("PRIVATE KEY", key.pkcs8()).as_bytes(), 0o600)?;
                // A new key has no account yet, whatever an old file says.
                self.save_account_url(None)?;
                Ok(key)
            }
            Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        }
    }

    /// The account URL saved with the key, if it has registered.
    pub(crate) fn account_url(&self) -> Option<String> {
        let text = fs::read(self.dir.join("account.json")).ok()?;
        let doc: Value = serde_json::from_slice(&text).ok()?;
        Some(doc.get("url")?.as_str()?.to_owned())
    }

    /// Saves (or with `None` forgets) the account URL.
    pub(crate) fn save_account_url(&self, url: Option<&str>) -> io::Result<()> {
        let path = self.dir.join("account.json");
        match url {
            Some(url) => write_file(&path, json!({ "url": url }).to_string().as_bytes(), 0o600),
            None => match fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
        }
    }

    /// The folder of the certificate for `names` (validated DNS names, the first one the
    /// folder's name).
    pub(crate) fn certificate_dir(&self, names: &[String]) -> PathBuf {
        let mut folder = names[0].clone();
        if names.len() > 1 {
            let mut sorted = names.to_vec();
            sorted.sort();
            let hash = b64url(sha256(sorted.join(",").as_bytes()));
            folder.push('+');
            folder.push_str(&hash[..10]);
        }
        self.dir.join("certificates").join(folder)
    }

    /// The stored certificate for `names`, if there is one.
    pub(crate) fn load_certificate(&self, names: &[String]) -> io::Result<Option<StoredPair>> {
        let dir = self.certificate_dir(names);
        let read = |file: &str| match fs::read(dir.join(file)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("{}: {e}", dir.join(file).display()),
            )),
        };
        match (read("cert.pem")?, read("key.pem")?) {
            (Some(chain_pem), Some(key_pem)) => Ok(Some(StoredPair { chain_pem, key_pem })),
            _ => Ok(None),
        }
    }

    /// Stores the certificate for `names`: the key (0600) first, then the chain.
    pub(crate) fn save_certificate(&self, names: &[String], pair: &StoredPair) -> io::Result<()> {
        let dir = self.certificate_dir(names);
        private_dir(dir.parent().expect("has a parent"))?;
        private_dir(&dir)?;
        write_file(&dir.join("key.pem"), &pair.key_pem, 0o600)?;
        write_file(&dir.join("cert.pem"), &pair.chain_pem, 0o644)
    }
}

/// A folder name for a directory URL: its host, port and path, other characters as `_`.
fn directory_slug(url: &str) -> String {
    let rest = url.strip_prefix("https://").unwrap_or(url);
    let rest = rest.trim_end_matches('/');
    rest.chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '-' => c,
            '/' => '-',
            _ => '_',
        })
        .collect()
}

/// Creates `dir` (0700) if missing, and makes an existing one 0700: it holds private keys.
pub(crate) fn private_dir(dir: &Path) -> io::Result<()> {
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", dir.display()));
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(named)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(named)
}

/// Writes `bytes` to `path` with `mode`: to a temporary file created with that mode (never
/// wider, even for a moment), synced, then renamed over `path`.
pub(crate) fn write_file(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let _ = fs::remove_file(&tmp);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .map_err(named)?;
    // The umask may have narrowed the mode; make it exactly the one asked for.
    file.set_permissions(fs::Permissions::from_mode(mode))
        .map_err(named)?;
    file.write_all(bytes).map_err(named)?;
    file.sync_all().map_err(named)?;
    fs::rename(&tmp, path).map_err(named)
}

/// `der` as a PEM block labelled `label`.
pub(crate) fn pem(label: &str, der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder under the system's temporary one, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos();
            let dir = std::env::temp_dir()
                .join(format!("fibra-acme-{name}-{}-{nanos}", std::process::id()));
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn keys_and_folders_are_private() {
        let tmp = TempDir::new("perm");
        let root = tmp.0.join("acme");
        let storage = Storage::open(&root, "https://127.0.0.1:14000/dir").unwrap();
        let key = storage.account_key().unwrap();
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&root.join("127.0.0.1_14000-dir")), 0o700);
        assert_eq!(mode(&root.join("127.0.0.1_14000-dir/account.key")), 0o600);

        // The same key comes back, with the account URL saved beside it.
        assert_eq!(storage.account_url(), None);
        storage.save_account_url(Some("https://ca/acct/1")).unwrap();
        let again = Storage::open(&root, "https://127.0.0.1:14000/dir").unwrap();
        assert_eq!(again.account_key().unwrap().jwk(), key.jwk());
        assert_eq!(again.account_url().as_deref(), Some("https://ca/acct/1"));
        assert_eq!(mode(&root.join("127.0.0.1_14000-dir/account.json")), 0o600);

        let names = vec!["a.example.com".to_owned(), "b.example.com".to_owned()];
        assert!(storage.load_certificate(&names).unwrap().is_none());
        let pair = StoredPair {
            chain_pem: b"chain".to_vec(),
            key_pem: b"key".to_vec(),
        };
        storage.save_certificate(&names, &pair).unwrap();
        let dir = storage.certificate_dir(&names);
        assert!(dir
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("a.example.com+"));
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(dir.parent().unwrap()), 0o700);
        assert_eq!(mode(&dir.join("key.pem")), 0o600);
        assert_eq!(mode(&dir.join("cert.pem")), 0o644);
        let loaded = storage.load_certificate(&names).unwrap().unwrap();
        assert_eq!(loaded.chain_pem, b"chain");
        assert_eq!(loaded.key_pem, b"key");

        // A folder made too wide by hand is narrowed again.
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).unwrap();
        Storage::open(&root, "https://127.0.0.1:14000/dir").unwrap();
        assert_eq!(mode(&root), 0o700);
    }

    #[test]
    fn folder_names() {
        assert_eq!(
            directory_slug("https://acme-v02.api.letsencrypt.org/directory"),
            "acme-v02.api.letsencrypt.org-directory"
        );
        assert_eq!(
            directory_slug("https://[::1]:14000/dir/"),
            "___1__14000-dir"
        );
        let tmp = TempDir::new("names");
        let storage = Storage::open(&tmp.0, "https://ca/dir").unwrap();
        let one = storage.certificate_dir(&["example.com".to_owned()]);
        assert!(one.ends_with("certificates/example.com"));
        // The hash is the set's, whatever the order (the prefix is the first name).
        let ab = storage.certificate_dir(&["a.example".into(), "b.example".into()]);
        let ba = storage.certificate_dir(&["b.example".into(), "a.example".into()]);
        assert_eq!(
            ab.file_name().unwrap().to_str().unwrap()[10..],
            ba.file_name().unwrap().to_str().unwrap()[10..]
        );
    }

    #[test]
    fn pem_blocks() {
        let text = pem("PRIVATE KEY", &[0u8; 100]);
        assert!(text.starts_with("-----BEGIN PRIVATE KEY-----\n"));
        assert!(text.ends_with("-----END PRIVATE KEY-----\n"));
        assert!(text.lines().all(|l| l.len() <= 64));
    }
}
