//! On-the-fly brotli and gzip for compressible files without a precompressed sibling, with
//! the results cached so that a popular file is compressed once.
//!
//! What is compressed: a `GET`/`HEAD` without `Range`, from a client that accepts brotli
//! (preferred, as for siblings) or gzip, for a
//! file whose type compresses (text, JSON, JavaScript, CSS, SVG, XML, WebAssembly, TrueType/
//! OpenType fonts, icons) of at least [`CompressConfig::min_bytes`] and at most
//! [`CompressConfig::max_bytes`]. A `.gz`/`.br` sibling on disk still wins (it is chosen
//! before this runs). A `Range` request gets the identity bytes, so ranges keep meaning
//! offsets into the file.
//!
//! Validators: each compressed representation has its own strong `ETag`, the file's with
//! `-br` or `-gz` before the closing quote (`"5f-1a2b-63e8"` → `"5f-1a2b-63e8-gz"`), so a cache never
//! mistakes one representation for the other; every response for such a file carries
//! `Vary: Accept-Encoding`.
//!
//! The cache: keyed by the file's `ETag` and the coding (the `ETag` names inode, size and modification time, so
//! a changed file is a new key and its old entry is never served), bounded by the bytes of
//! compressed output it holds ([`CompressConfig::cache_bytes`]), evicted by CLOCK (second
//! chance), shared by all workers behind one lock held only for the lookup or the insert.
//! Compression itself runs on a blocking-pool thread ([`fibra::task::spawn_blocking`]), so
//! a cache miss does not stall the worker's other connections. A file that does not get
//! smaller is remembered as such and sent as it is.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::HeaderValue;

use crate::meta::Encoding;
use crate::open::{FileData, OpenFile};

/// Settings of on-the-fly compression.
#[derive(Debug, Clone)]
pub struct CompressConfig {
    /// gzip level, 1 (fastest) to 9 (smallest). Default: 6 (zlib's and nginx's usual choice).
    pub level: u32,
    /// brotli quality, 0 to 11; `None`: gzip only. Default: `Some(5)` (smaller than gzip 6
    /// and about as fast to make; higher qualities cost many times more on a cache miss).
    pub brotli_quality: Option<u32>,
    /// Smallest file compressed, in bytes. Default: 1024 (below that, gzip's header and the
    /// `Vary` cost more than they save).
    pub min_bytes: u64,
    /// Largest file compressed, in bytes. Default: 8 MiB (a bigger file is read whole into
    /// memory to compress; serve such files precompressed).
    pub max_bytes: u64,
    /// Most bytes of compressed output kept. Default: 64 MiB.
    pub cache_bytes: u64,
}

impl Default for CompressConfig {
    fn default() -> Self {
        CompressConfig {
            level: 6,
            brotli_quality: Some(5),
            min_bytes: 1024,
            max_bytes: 8 << 20,
            cache_bytes: 64 << 20,
        }
    }
}

/// A compressed representation of a file.
#[derive(Debug)]
pub struct Compressed {
    /// The compressed bytes.
    pub body: Bytes,
    /// Its strong `ETag`.
    pub etag: HeaderValue,
    /// Its coding (`Content-Encoding`).
    pub encoding: Encoding,
}

/// What compressing a file gave: the compressed form, or nothing worth sending (not
/// smaller, or the file changed while it was read).
type Outcome = Option<Arc<Compressed>>;

/// A cache key: the file's `ETag` and the coding.
type Key = (HeaderValue, Encoding);

struct Slot {
    outcome: Outcome,
    /// Looked up since the clock hand last passed (CLOCK's second chance).
    referenced: AtomicBool,
}

#[derive(Default)]
struct Cache {
    map: HashMap<Key, Slot>,
    /// Keys in insertion order: the clock hand walks from the front.
    ring: VecDeque<Key>,
    bytes: u64,
}

/// On-the-fly gzip with its cache. Shared by every worker (`Arc<FileServer>`).
pub struct Compressor {
    config: CompressConfig,
    cache: Mutex<Cache>,
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Whether a `Content-Type` value names a type worth compressing. Asked on every file
/// response, so it compares in place (case-insensitively) rather than lowercasing a copy.
pub fn compressible(content_type: &[u8]) -> bool {
    const TYPES: [&[u8]; 13] = [
        b"application/json",
        b"application/javascript",
        b"application/x-javascript",
        b"application/ecmascript",
        b"application/xml",
        b"application/wasm",
        b"application/vnd.ms-fontobject",
        b"font/ttf",
        b"font/otf",
        b"image/svg+xml",
        b"image/x-icon",
        b"image/vnd.microsoft.icon",
        b"image/bmp",
    ];
    let t = content_type
        .split(|&b| b == b';')
        .next()
        .unwrap_or(b"")
        .trim_ascii();
    let starts = |p: &[u8]| t.len() >= p.len() && t[..p.len()].eq_ignore_ascii_case(p);
    let ends = |p: &[u8]| t.len() >= p.len() && t[t.len() - p.len()..].eq_ignore_ascii_case(p);
    starts(b"text/")
        || ends(b"+json")
        || ends(b"+xml")
        || TYPES.iter().any(|x| t.eq_ignore_ascii_case(x))
}

/// The `ETag` of the `encoding` form of the file whose `ETag` is `etag` (`"x"` → `"x-gz"`,
/// `"x-br"`).
pub fn variant_etag(etag: &HeaderValue, encoding: Encoding) -> HeaderValue {
    let b = etag.as_bytes();
    let inner = b.strip_suffix(b"\"").unwrap_or(b);
    let mut v = Vec::with_capacity(b.len() + 3);
    v.extend_from_slice(inner);
    v.push(b'-');
    v.extend_from_slice(encoding.suffix().trim_start_matches('.').as_bytes());
    v.push(b'"');
    HeaderValue::from_bytes(&v).unwrap_or_else(|_| etag.clone())
}

impl Compressor {
    /// A compressor with `config` (the level clamped to 1..=9).
    pub fn new(mut config: CompressConfig) -> Compressor {
        config.level = config.level.clamp(1, 9);
        Compressor {
            config,
            cache: Mutex::new(Cache::default()),
        }
    }

    /// The settings.
    pub fn config(&self) -> &CompressConfig {
        &self.config
    }

    /// The coding to make for a client that accepts brotli (`br_ok`) and gzip (`gz_ok`):
    /// brotli when it is on and accepted, else gzip when accepted.
    pub fn choose(&self, br_ok: bool, gz_ok: bool) -> Option<Encoding> {
        match (br_ok && self.config.brotli_quality.is_some(), gz_ok) {
            (true, _) => Some(Encoding::Brotli),
            (false, true) => Some(Encoding::Gzip),
            _ => None,
        }
    }

    /// Whether a file of this type and size is compressed for a client that accepts it.
    pub fn applies(&self, content_type: &HeaderValue, size: u64) -> bool {
        size >= self.config.min_bytes
            && size <= self.config.max_bytes
            && compressible(content_type.as_bytes())
    }

    /// The `encoding` form of `file` (gzip or brotli), from the cache or made now (on a
    /// blocking-pool thread); `None` when it is not worth sending.
    pub fn compressed(&self, file: &OpenFile, encoding: Encoding) -> Outcome {
        let key = (file.etag.clone(), encoding);
        if let Some(hit) = self.lookup(&key) {
            return hit;
        }
        let level = match encoding {
            Encoding::Brotli => self.config.brotli_quality?,
            Encoding::Gzip => self.config.level,
            Encoding::Identity => return None,
        };
        let etag = variant_etag(&file.etag, encoding);
        let size = file.size;
        let outcome = match &file.data {
            FileData::Memory(bytes) => {
                let bytes = bytes.clone();
                fibra::task::spawn_blocking(move || compress(&bytes, encoding, level, etag))
            }
            FileData::Open(f) => {
                let f = f.shared().clone();
                fibra::task::spawn_blocking(move || {
                    read_whole(&f, size).and_then(|b| compress(&b, encoding, level, etag))
                })
            }
        };
        self.insert(key, outcome.clone());
        outcome
    }

    fn lookup(&self, key: &Key) -> Option<Outcome> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let slot = cache.map.get(key)?;
        slot.referenced.store(true, Ordering::Relaxed);
        Some(slot.outcome.clone())
    }

    fn insert(&self, key: Key, outcome: Outcome) {
        let cost = cost_of(&key, &outcome);
        if cost > self.config.cache_bytes {
            return;
        }
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.map.contains_key(&key) {
            return;
        }
        // CLOCK: a referenced entry gets a second chance (moved to the back, its bit
        // cleared); every entry is passed at most twice.
        let mut steps = 2 * cache.ring.len();
        while cache.bytes + cost > self.config.cache_bytes && steps > 0 {
            steps -= 1;
            let Some(k) = cache.ring.pop_front() else {
                break;
            };
            let second_chance = cache
                .map
                .get(&k)
                .is_some_and(|s| s.referenced.swap(false, Ordering::Relaxed));
            if second_chance {
                cache.ring.push_back(k);
            } else if let Some(slot) = cache.map.remove(&k) {
                cache.bytes -= cost_of(&k, &slot.outcome);
            }
        }
        if cache.bytes + cost > self.config.cache_bytes {
            return;
        }
        cache.bytes += cost;
        cache.ring.push_back(key.clone());
        cache.map.insert(
            key,
            Slot {
                outcome,
                referenced: AtomicBool::new(false),
            },
        );
    }

    /// Bytes the cache holds (keys and compressed output).
    pub fn cached_bytes(&self) -> u64 {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).bytes
    }
}

fn cost_of(key: &Key, outcome: &Outcome) -> u64 {
    // A fixed overhead per entry for the map, the ring and the allocation headers.
    let body = outcome.as_ref().map_or(0, |g| g.body.len() as u64);
    body + key.0.len() as u64 + 128
}

/// Reads exactly `size` bytes of `file`, or `None` if it is not that long any more.
fn read_whole(file: &std::fs::File, size: u64) -> Option<Bytes> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; usize::try_from(size).ok()?];
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], got as u64) {
            Ok(0) => return None,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(buf.into())
}

/// `data` compressed in `encoding` (gzip at `level` 1..=9, brotli at quality `level` 0..=11,
/// clamped), whole, in memory; `None` for [`Encoding::Identity`]. The file server's encoders,
/// for others that compress a body they hold (fibra-web's `CompressionLayer`): the result may
/// be no smaller than `data`, which the caller checks.
///
/// ```
/// use fibra_files::compress::compress_bytes;
/// use fibra_files::meta::Encoding;
///
/// let text = "hello, hello, hello, hello, hello".repeat(20);
/// let gz = compress_bytes(text.as_bytes(), Encoding::Gzip, 6).unwrap();
/// assert!(gz.len() < text.len());
/// assert!(compress_bytes(b"x", Encoding::Identity, 6).is_none());
/// ```
pub fn compress_bytes(data: &[u8], encoding: Encoding, level: u32) -> Option<Vec<u8>> {
    let out = Vec::with_capacity(data.len() / 3 + 64);
    match encoding {
        Encoding::Gzip => {
            let level = flate2::Compression::new(level.clamp(1, 9));
            let mut enc = flate2::write::GzEncoder::new(out, level);
            enc.write_all(data).ok()?;
            enc.finish().ok()
        }
        Encoding::Brotli => {
            // A 4 MiB window (lgwin 22, brotli's default) and its 4 KiB internal buffer.
            let mut enc = brotli::CompressorWriter::new(out, 4096, level.min(11), 22);
            enc.write_all(data).ok()?;
            // Ends the stream (a flush would only end a block).
            Some(enc.into_inner())
        }
        Encoding::Identity => None,
    }
}

/// `data` in `encoding` at `level`, if smaller than `data`.
fn compress(data: &[u8], encoding: Encoding, level: u32, etag: HeaderValue) -> Outcome {
    let out = compress_bytes(data, encoding, level)?;
    (out.len() < data.len()).then(|| {
        Arc::new(Compressed {
            body: out.into(),
            etag,
            encoding,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::time::UNIX_EPOCH;

    fn file(etag: &str, data: &[u8]) -> OpenFile {
        OpenFile {
            data: FileData::Memory(Bytes::copy_from_slice(data)),
            size: data.len() as u64,
            mtime: UNIX_EPOCH,
            etag: HeaderValue::from_str(etag).unwrap(),
            last_modified: HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT"),
        }
    }

    fn gunzip(b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(b)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    fn unbrotli(b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        brotli::Decompressor::new(b, 4096)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn types_and_etags() {
        for t in [
            "text/html; charset=utf-8",
            "text/css",
            "application/javascript",
            "application/json",
            "image/svg+xml",
            "application/manifest+json",
            "Application/JSON",
            "TEXT/plain",
            "image/SVG+XML",
        ] {
            assert!(compressible(t.as_bytes()), "{t}");
        }
        for t in [
            "image/png",
            "font/woff2",
            "application/zip",
            "video/mp4",
            "",
        ] {
            assert!(!compressible(t.as_bytes()), "{t}");
        }
        let e = HeaderValue::from_static("\"5f-1a2b-63e8\"");
        assert_eq!(variant_etag(&e, Encoding::Gzip), "\"5f-1a2b-63e8-gz\"");
        assert_eq!(variant_etag(&e, Encoding::Brotli), "\"5f-1a2b-63e8-br\"");
    }

    #[test]
    fn compresses_once_and_remembers_what_does_not_shrink() {
        let c = Compressor::new(CompressConfig::default());
        let text = "body { color: red }\n".repeat(200);
        let f = file("\"a\"", text.as_bytes());
        let g = c.compressed(&f, Encoding::Gzip).expect("text shrinks");
        assert_eq!(g.etag, "\"a-gz\"");
        assert_eq!(gunzip(&g.body), text.as_bytes());
        let again = c.compressed(&f, Encoding::Gzip).unwrap();
        assert!(Arc::ptr_eq(&g, &again), "the second request is a cache hit");
        let b = c.compressed(&f, Encoding::Brotli).expect("text shrinks");
        assert_eq!(b.etag, "\"a-br\"");
        assert_eq!(unbrotli(&b.body), text.as_bytes());
        assert!(!Arc::ptr_eq(&b, &c.compressed(&f, Encoding::Gzip).unwrap()));
        // Random bytes do not shrink: remembered as not worth it.
        let mut noise = vec![0u8; 4096];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for b in noise.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        for enc in [Encoding::Gzip, Encoding::Gzip, Encoding::Brotli] {
            assert!(c.compressed(&file("\"n\"", &noise), enc).is_none());
        }
    }

    #[test]
    fn the_cache_stays_within_its_bytes() {
        let c = Compressor::new(CompressConfig {
            cache_bytes: 4096,
            ..CompressConfig::default()
        });
        let mut held = Vec::new();
        for i in 0..200 {
            let text = format!("{i} lorem ipsum dolor sit amet\n").repeat(100);
            let f = file(&format!("\"{i}\""), text.as_bytes());
            let g = c.compressed(&f, Encoding::Gzip).unwrap();
            assert_eq!(gunzip(&g.body), text.as_bytes());
            assert!(c.cached_bytes() <= 4096, "{}", c.cached_bytes());
            held.push(g);
        }
        assert!(c.cached_bytes() > 0);
    }
}
