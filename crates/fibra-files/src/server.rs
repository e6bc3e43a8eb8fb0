//! `FileServer`: configuration and the request -> reply logic, independent of the connection
//! loop. It sees a method, a path, a query and a `HeaderMap`, and answers a [`FileReply`]
//! (status, headers, body description), which the `handler` glue turns into a `Response`.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use http::header::{self, HeaderValue};
use http::{HeaderMap, Method, StatusCode};

use crate::cache::{CacheStats, FileCache};
use crate::catalog::Catalog;
use crate::compress::{CompressConfig, Compressor};
use crate::conditional::{evaluate, Conditionals, Precondition};
use crate::field_rules::FieldRules;
use crate::listing;
use crate::meta::{accepted_encodings, Encoding};
use crate::open::{FileEntry, Lookup, OpenFile, Resolver};
use crate::path::{self, PathError};
use crate::range::{parse_range, RangeRequest};
use crate::reply::{unavailable, Answer};
pub use crate::reply::{FileBody, FileReply};
use fibra_http::prepared::PreparedHead;

/// The methods the file server answers (`Allow` of its `405` and `OPTIONS` responses).
const ALLOW: &str = "GET, HEAD, OPTIONS";

/// Everything a [`FileServer`] can be told, each with its default.
#[derive(Debug, Clone)]
pub struct FileServerConfig {
    /// Directory to serve. Required.
    pub root: PathBuf,
    /// URL prefix the directory is mounted under, e.g. `/static` (no trailing slash).
    /// Default: `""`, the whole URL space.
    pub prefix: String,
    /// Index file served for a directory URL. Default: `Some("index.html")`.
    pub index: Option<String>,
    /// Render an HTML listing for a directory without index file (else 403): sortable by
    /// name, size and date (see [`listing`]). Default: false (`fibra serve`
    /// turns it on unless `--no-list`).
    pub listing: bool,
    /// `Cache-Control` value sent with files and 304s. Default: none.
    pub cache_control: Option<String>,
    /// Serve names starting with `.` (`.git`, `.env`). Default: false (they are 404).
    pub allow_hidden: bool,
    /// Serve symlinks whose target is outside `root`. Default: false (403).
    pub follow_symlinks: bool,
    /// How long a cached lookup is trusted at most. Changes are seen at once anyway (inotify,
    /// see [`cache`](crate::cache)); this bounds what inotify cannot see (a network filesystem
    /// changed from another machine). Default: 60 s (nginx's `open_file_cache_valid`). Zero
    /// disables caching.
    pub cache_ttl: Duration,
    /// Most cached paths. Default: 4096. Files up to 16 KiB are held in memory (no fd), larger
    /// ones as an open fd (up to 3 with precompressed siblings). Zero disables caching.
    pub cache_capacity: usize,
    /// Most bytes of file contents the cache holds in memory. Default: 64 MiB.
    pub cache_max_bytes: u64,
    /// On-the-fly gzip of compressible files without a precompressed sibling (see
    /// [`compress`](crate::compress)). Default: `None` (off; `fibra serve` turns it on).
    pub compress: Option<CompressConfig>,
    /// Header fields set, added or removed on every response (rendered into cached files'
    /// heads once). Default: none.
    pub headers: FieldRules,
    /// A cache shared with other file servers (one bound on entries and bytes for all of
    /// them, e.g. every root of a site file), used instead of one of its own; then
    /// `cache_ttl`, `cache_capacity` and `cache_max_bytes` are the shared cache's. Default:
    /// `None`.
    pub shared_cache: Option<Arc<FileCache>>,
}

impl FileServerConfig {
    /// Defaults for serving `root` at `/`.
    pub fn new(root: impl Into<PathBuf>) -> FileServerConfig {
        FileServerConfig {
            root: root.into(),
            prefix: String::new(),
            index: Some("index.html".to_string()),
            listing: false,
            cache_control: None,
            allow_hidden: false,
            follow_symlinks: false,
            cache_ttl: Duration::from_secs(60),
            cache_capacity: 4096,
            cache_max_bytes: 64 << 20,
            compress: None,
            headers: FieldRules::default(),
            shared_cache: None,
        }
    }
}

/// The request fields a file reply depends on (the first value of each), found in one pass
/// over the request's fields: a request has a handful, and seven hashed `HeaderMap::get`s
/// cost more than walking them once.
#[derive(Default)]
struct RequestFields<'a> {
    accept_encoding: Option<&'a [u8]>,
    range: Option<&'a [u8]>,
    conds: Conditionals<'a>,
}

impl<'a> RequestFields<'a> {
    fn of(headers: &'a HeaderMap) -> RequestFields<'a> {
        let mut f = RequestFields::default();
        for (name, value) in headers {
            let slot = if name == header::ACCEPT_ENCODING {
                &mut f.accept_encoding
            } else if name == header::RANGE {
                &mut f.range
            } else if name == header::IF_MATCH {
                &mut f.conds.if_match
            } else if name == header::IF_NONE_MATCH {
                &mut f.conds.if_none_match
            } else if name == header::IF_MODIFIED_SINCE {
                &mut f.conds.if_modified_since
            } else if name == header::IF_UNMODIFIED_SINCE {
                &mut f.conds.if_unmodified_since
            } else if name == header::IF_RANGE {
                &mut f.conds.if_range
            } else {
                continue;
            };
            if slot.is_none() {
                *slot = Some(value.as_bytes());
            }
        }
        f
    }
}

/// Serves one directory tree: path safety, fd/stat cache, conditionals, ranges, encodings.
/// Cheap to share (`Arc<FileServer>`) across all fibers and workers.
#[derive(Debug)]
pub struct FileServer {
    catalog: Catalog,
    prefix: String,
    listing: bool,
    allow_hidden: bool,
    cache_control: Option<HeaderValue>,
    compressor: Option<Compressor>,
    rules: Option<FieldRules>,
}

impl FileServer {
    /// Checks the configuration (the root must be a directory) and builds the server.
    pub fn new(config: FileServerConfig) -> io::Result<FileServer> {
        let invalid = |m: &str| io::Error::new(io::ErrorKind::InvalidInput, m.to_string());
        let prefix = config.prefix.trim_end_matches('/').to_string();
        if !prefix.is_empty() && !prefix.starts_with('/') {
            return Err(invalid(&format!("prefix {prefix:?} must start with '/'")));
        }
        let cache_control = match &config.cache_control {
            Some(v) => Some(
                HeaderValue::from_str(v)
                    .map_err(|_| invalid(&format!("Cache-Control {v:?}: not a header value")))?,
            ),
            None => None,
        };
        if let Some(i) = &config.index {
            if i.is_empty() || i.contains('/') {
                return Err(invalid(&format!("index {i:?} must be a plain file name")));
            }
        }
        Ok(FileServer {
            catalog: {
                let resolver = Resolver::new(&config.root, config.index, config.follow_symlinks)?;
                match config.shared_cache {
                    Some(cache) => Catalog::sharing(resolver, cache),
                    None => Catalog::new(
                        resolver,
                        config.cache_capacity,
                        config.cache_max_bytes,
                        config.cache_ttl,
                    ),
                }
            },
            prefix,
            listing: config.listing,
            allow_hidden: config.allow_hidden,
            cache_control,
            compressor: config.compress.map(Compressor::new),
            rules: Some(config.headers).filter(|r| !r.is_empty()),
        })
    }

    /// The canonical root directory being served.
    pub fn root(&self) -> &std::path::Path {
        &self.catalog.resolver().root
    }

    /// The mount prefix (`""` for the root).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Whether a request path falls under this server's prefix (for routing next to other
    /// handlers).
    pub fn matches(&self, path: &str) -> bool {
        path::strip_prefix(path, &self.prefix).is_some()
    }

    /// Whether lookups are cached: caching is configured on and inotify could be started
    /// (without it nothing is cached, so that nothing is ever stale).
    pub fn caching(&self) -> bool {
        self.catalog.caching()
    }

    /// fd/stat cache counters.
    pub fn cache_stats(&self) -> CacheStats {
        self.catalog.stats()
    }

    /// Answers one request. `path` and `query` are the request target's parts (still
    /// percent-encoded); `headers` are the request's.
    pub fn reply(
        &self,
        method: &Method,
        path: &str,
        query: Option<&str>,
        headers: &HeaderMap,
    ) -> FileReply {
        match self.answer(method, path, query, headers) {
            Answer::Reply(r) => r,
            Answer::Whole { entry, encoding } => {
                let file = entry.representation(encoding);
                FileReply {
                    status: StatusCode::OK,
                    headers: entry
                        .head(encoding)
                        .map(|h| h.fields().clone())
                        .unwrap_or_default(),
                    body: FileBody::part_of(file, 0, file.size),
                }
            }
        }
    }

    /// [`FileServer::reply`], with the common case apart: a whole file as it is cached, whose
    /// `200` fields come rendered ahead of time.
    pub(crate) fn answer(
        &self,
        method: &Method,
        path: &str,
        query: Option<&str>,
        headers: &HeaderMap,
    ) -> Answer {
        let mut answer = self.answer_as_is(method, path, query, headers);
        // A whole cached file's head has the rules already (`render_head`).
        if let (Some(rules), Answer::Reply(r)) = (&self.rules, &mut answer) {
            rules.apply(&mut r.headers);
        }
        answer
    }

    /// [`answer`](Self::answer) before the field rules.
    #[inline(always)]
    fn answer_as_is(
        &self,
        method: &Method,
        path: &str,
        query: Option<&str>,
        headers: &HeaderMap,
    ) -> Answer {
        let is_get = *method == Method::GET;
        if !is_get && *method != Method::HEAD {
            // OPTIONS (for a path, or `*` for the server) is answered with what is allowed.
            let mut r = if *method == Method::OPTIONS {
                FileReply::new(StatusCode::OK)
            } else {
                FileReply::error(StatusCode::METHOD_NOT_ALLOWED)
            };
            r.header(header::ALLOW, HeaderValue::from_static(ALLOW));
            return Answer::Reply(r);
        }
        let Some(rest) = path::strip_prefix(path, &self.prefix) else {
            return Answer::Reply(FileReply::error(StatusCode::NOT_FOUND));
        };
        let lookup = self
            .catalog
            .lookup(rest, self.allow_hidden, fibra::time::now());
        Answer::Reply(match lookup {
            Err(PathError::BadRequest) => FileReply::error(StatusCode::BAD_REQUEST),
            Err(PathError::NotFound) | Ok(Lookup::NotFound) => {
                FileReply::error(StatusCode::NOT_FOUND)
            }
            Ok(Lookup::Forbidden) => FileReply::error(StatusCode::FORBIDDEN),
            Ok(Lookup::Unavailable) => unavailable(),
            Ok(Lookup::Dir) => self.directory(rest, query),
            Ok(Lookup::File(entry)) => return self.file(entry, is_get, headers),
        })
    }

    /// The `200` head of `file`, the `encoding` representation of `entry`, with the fields the
    /// reply below would set.
    fn render_head(
        &self,
        entry: &FileEntry,
        file: &OpenFile,
        encoding: Encoding,
        compressible: bool,
    ) -> PreparedHead {
        let mut r = FileReply::new(StatusCode::OK);
        self.validator_fields(&mut r, entry, &file.etag, file, compressible);
        self.content_fields(&mut r, entry, encoding);
        if let Some(rules) = &self.rules {
            rules.apply(&mut r.headers);
        }
        PreparedHead::new(r.headers)
    }

    /// `ETag`, `Last-Modified`, `Cache-Control` and `Vary`: what a `200` and a `304` share.
    fn validator_fields(
        &self,
        r: &mut FileReply,
        entry: &FileEntry,
        etag: &HeaderValue,
        file: &OpenFile,
        compressible: bool,
    ) {
        r.header(header::ETAG, etag.clone());
        r.header(header::LAST_MODIFIED, file.last_modified.clone());
        if let Some(cc) = &self.cache_control {
            r.header(header::CACHE_CONTROL, cc.clone());
        }
        if entry.has_variants() || compressible {
            r.header(header::VARY, HeaderValue::from_static("Accept-Encoding"));
        }
    }

    /// `Content-Type`, `Content-Encoding` and `Accept-Ranges` of a file sent as it is stored.
    fn content_fields(&self, r: &mut FileReply, entry: &FileEntry, encoding: Encoding) {
        r.header(header::CONTENT_TYPE, entry.content_type.clone());
        if let Some(enc) = encoding.header() {
            r.header(header::CONTENT_ENCODING, HeaderValue::from_static(enc));
        }
        r.header(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    }

    /// A file: the whole of it with its rendered head when the request asks nothing more
    /// (no precondition, no range, no compression to make), else the reply built field by
    /// field.
    fn file(&self, entry: Arc<FileEntry>, is_get: bool, headers: &HeaderMap) -> Answer {
        let fields = RequestFields::of(headers);
        let (br_ok, gz_ok) = accepted_encodings(fields.accept_encoding);
        let (file, encoding) = entry.select(br_ok, gz_ok);
        // On-the-fly brotli or gzip (cached): a compressible file with no sibling chosen, and
        // no Range (ranges stay offsets into the file itself). Asked only when it matters: a
        // request that accepts no coding cannot be compressed, and the rendered head already
        // says (`Vary`) whether the file is compressible.
        let compressible = || {
            self.compressor
                .as_ref()
                .filter(|c| c.applies(&entry.content_type, entry.identity.size))
        };
        let c = &fields.conds;
        let whole = fields.range.is_none()
            && c.if_match.is_none()
            && c.if_none_match.is_none()
            && c.if_modified_since.is_none()
            && c.if_unmodified_since.is_none()
            && !((br_ok || gz_ok)
                && encoding == Encoding::Identity
                && compressible().is_some_and(|c| c.choose(br_ok, gz_ok).is_some()));
        if whole {
            // (`If-Range` without `Range` means nothing.) The entry is moved into the answer:
            // the response refers to its head and its bytes (see `fibra_http::prepared`).
            entry
                .head_cell(encoding)
                .get_or_init(|| self.render_head(&entry, file, encoding, compressible().is_some()));
            return Answer::Whole { entry, encoding };
        }
        let chosen = ((br_ok, gz_ok), (file, encoding));
        Answer::Reply(self.file_reply(&entry, is_get, &fields, chosen, compressible()))
    }

    /// The reply for a file, field by field (preconditions, ranges, compression); `chosen`:
    /// the codings the request accepts (brotli, gzip) and the representation they select.
    fn file_reply(
        &self,
        entry: &FileEntry,
        is_get: bool,
        fields: &RequestFields<'_>,
        chosen: ((bool, bool), (&OpenFile, Encoding)),
        compressible: Option<&Compressor>,
    ) -> FileReply {
        let ((br_ok, gz_ok), (file, encoding)) = chosen;
        let compressed = compressible
            .filter(|_| encoding == Encoding::Identity && fields.range.is_none())
            .and_then(|c| Some((c, c.choose(br_ok, gz_ok)?)))
            .and_then(|(c, coding)| c.compressed(file, coding));
        let etag = compressed.as_ref().map_or(&file.etag, |g| &g.etag);
        let precondition = evaluate(&fields.conds, etag.as_bytes(), file.mtime);
        let status = match precondition {
            Precondition::Failed => return FileReply::error(StatusCode::PRECONDITION_FAILED),
            Precondition::NotModified => StatusCode::NOT_MODIFIED,
            Precondition::Proceed { .. } => StatusCode::OK,
        };
        let mut r = FileReply::new(status);
        self.validator_fields(&mut r, entry, etag, file, compressible.is_some());
        if status == StatusCode::NOT_MODIFIED {
            return r;
        }
        if let Some(c) = compressed {
            r.header(header::CONTENT_TYPE, entry.content_type.clone());
            if let Some(enc) = c.encoding.header() {
                r.header(header::CONTENT_ENCODING, HeaderValue::from_static(enc));
            }
            r.body = FileBody::Bytes(c.body.clone());
            return r;
        }
        self.content_fields(&mut r, entry, encoding);
        let range_allowed = matches!(
            precondition,
            Precondition::Proceed {
                range_allowed: true
            }
        );
        // Range is defined for GET only (RFC 9110 §14.2); HEAD ignores it.
        let range = match fields.range {
            Some(v) if is_get && range_allowed => parse_range(v, file.size),
            _ => RangeRequest::Full,
        };
        let (offset, len) = match range {
            RangeRequest::Full => (0, file.size),
            RangeRequest::Single { start, end } => {
                r.status = StatusCode::PARTIAL_CONTENT;
                let cr = format!("bytes {start}-{end}/{}", file.size);
                r.header(
                    header::CONTENT_RANGE,
                    HeaderValue::try_from(cr).expect("ascii"),
                );
                (start, end - start + 1)
            }
            RangeRequest::Unsatisfiable => {
                let mut e = FileReply::error(StatusCode::RANGE_NOT_SATISFIABLE);
                let cr = format!("bytes */{}", file.size);
                e.header(
                    header::CONTENT_RANGE,
                    HeaderValue::try_from(cr).expect("ascii"),
                );
                return e;
            }
        };
        r.body = FileBody::part_of(file, offset, len);
        r
    }

    /// A directory URL: redirect to the slash form, list it, or refuse.
    fn directory(&self, rest: &str, query: Option<&str>) -> FileReply {
        let Ok(p) = path::resolve(rest, self.allow_hidden) else {
            return FileReply::error(StatusCode::BAD_REQUEST);
        };
        if !p.trailing_slash {
            let mut location = p.url_path(&self.prefix, true);
            if let Some(q) = query {
                location.push('?');
                location.push_str(q);
            }
            let mut r = FileReply::error(StatusCode::MOVED_PERMANENTLY);
            match HeaderValue::try_from(location) {
                Ok(v) => r.header(header::LOCATION, v),
                Err(_) => return FileReply::error(StatusCode::BAD_REQUEST),
            }
            return r;
        }
        if !self.listing {
            return FileReply::error(StatusCode::FORBIDDEN);
        }
        let title = {
            let mut t = self.prefix.clone();
            for s in &p.segments {
                t.push('/');
                t.push_str(&String::from_utf8_lossy(s));
            }
            t.push('/');
            t
        };
        let resolver = self.catalog.resolver();
        let dir = match resolver.open_dir(&p.rel_path()) {
            Ok(dir) => dir,
            Err(Lookup::Forbidden) => return FileReply::error(StatusCode::FORBIDDEN),
            Err(Lookup::Unavailable) => return unavailable(),
            Err(_) => return FileReply::error(StatusCode::NOT_FOUND),
        };
        // A symlink in the directory is described by what serving it would give.
        let describe_link = |name: &[u8]| {
            let mut child = p.clone();
            child.segments.push(name.to_vec());
            child.trailing_slash = false;
            match resolver.lookup(&child) {
                Lookup::File(f) => Some(listing::Entry {
                    name: name.to_vec(),
                    kind: listing::Kind::File,
                    size: Some(f.identity.size),
                    modified: Some(f.identity.mtime),
                }),
                Lookup::Dir => Some(listing::Entry {
                    name: name.to_vec(),
                    kind: listing::Kind::Dir,
                    size: None,
                    modified: None,
                }),
                Lookup::NotFound | Lookup::Forbidden | Lookup::Unavailable => None,
            }
        };
        match listing::read_entries(&dir, self.allow_hidden, describe_link) {
            Ok(mut entries) => {
                let sort = listing::Sort::from_query(query);
                sort.apply(&mut entries);
                let html = listing::render(&entries, &title, p.segments.is_empty(), sort);
                let mut r = FileReply::new(StatusCode::OK);
                r.header(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/html; charset=utf-8"),
                );
                r.header(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
                r.body = FileBody::Bytes(html.into());
                r
            }
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                FileReply::error(StatusCode::FORBIDDEN)
            }
            Err(_) => FileReply::error(StatusCode::NOT_FOUND),
        }
    }
}
