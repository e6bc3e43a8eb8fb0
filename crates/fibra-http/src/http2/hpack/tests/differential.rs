//! Differential tests against the `loona-hpack` crate (a dev-dependency; the maintained fork
//! of `hpack` 0.3, whose static table has a wrong name at index 15, which this test found),
//! on pseudo-random inputs from a seeded PRNG:
//!
//! - its encoder (plain strings, incremental indexing of every new name) → our decoder;
//! - random representations of every kind, Huffman-coded or not, with size updates, valid
//!   by construction against a model of the dynamic table → our decoder, its decoder and
//!   the model must agree on the fields, and our table must be the model's after each block;
//! - our encoder → its decoder.

use http::HeaderName;

use super::{decode, encode_block, name_text, Field, Kind, NameRef, Repr, Rng};
use crate::http2::hpack::table::{ENTRY_OVERHEAD, MAX_TABLE_SIZE, STATIC};
use crate::http2::hpack::{classify, encode_field, encode_status, Decoder};

/// Names for generated fields: pseudo, static-table, custom.
const NAMES: &[&str] = &[
    ":method",
    ":path",
    ":authority",
    ":scheme",
    ":protocol",
    "user-agent",
    "accept",
    "accept-encoding",
    "cookie",
    "content-type",
    "cache-control",
    "te",
    "x-request-id",
    "x-forwarded-for",
    "sec-ch-ua-platform",
];

/// Names a decoder must take without an HPACK error, though the request is malformed.
const ODD_NAMES: &[&str] = &["Upper-Case", ":bogus", "", "sp ace", "x-\u{e9}"];

/// Values seen in requests.
const VALUES: &[&str] = &[
    "GET",
    "POST",
    "/",
    "/index.html",
    "/search?q=hpack&lang=en",
    "www.example.com",
    "https",
    "gzip, deflate, br",
    "no-cache",
    "trailers",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0",
    "session=0123456789abcdef; theme=dark",
];

/// A random value: usually text, sometimes long (multi-byte lengths), sometimes with
/// control bytes (a raw entry), rarely larger than the whole table.
fn value(rng: &mut Rng) -> Vec<u8> {
    match rng.below(20) {
        0..=9 => rng.pick(VALUES).as_bytes().to_vec(),
        10..=15 => {
            let len = rng.below(40);
            (0..len).map(|_| b' ' + (rng.next() % 95) as u8).collect()
        }
        16 | 17 => {
            let len = 100 + rng.below(300);
            (0..len).map(|_| b'a' + (rng.next() % 26) as u8).collect()
        }
        18 => {
            let len = rng.below(30);
            rng.bytes(len)
        }
        _ => vec![b'z'; MAX_TABLE_SIZE + rng.below(100)],
    }
}

/// A header list as `loona-hpack` takes it.
type List = Vec<(Vec<u8>, Vec<u8>)>;

/// Our decoder's fields for the raw pairs `list`.
fn classified(list: &List) -> Vec<Field> {
    list.iter()
        .map(|(n, v)| (name_text(&classify(n)), v.clone()))
        .collect()
}

/// Asserts `got == want`, printing only the first difference (fields can be 4 KiB long).
fn same<N: AsRef<[u8]> + PartialEq, V: AsRef<[u8]> + PartialEq>(
    got: &[(N, V)],
    want: &[(N, V)],
    who: &str,
) {
    let show = |b: &[u8]| String::from_utf8_lossy(&b[..b.len().min(60)]).into_owned();
    if let Some(i) = (0..got.len().min(want.len())).find(|&i| got[i] != want[i]) {
        let (g, w) = (&got[i], &want[i]);
        panic!(
            "{who}: field {i}: got {:?}: {:?} ({} bytes), want {:?}: {:?} ({} bytes)",
            show(g.0.as_ref()),
            show(g.1.as_ref()),
            g.1.as_ref().len(),
            show(w.0.as_ref()),
            show(w.1.as_ref()),
            w.1.as_ref().len()
        );
    }
    assert_eq!(got.len(), want.len(), "{who}: number of fields");
}

#[test]
fn their_encoder_our_decoder() {
    let mut rng = Rng::new(0x4b1d);
    for _connection in 0..30 {
        let mut theirs = loona_hpack::Encoder::new();
        let mut ours = Decoder::new();
        for _block in 0..10 {
            let list: List = (0..1 + rng.below(15))
                .map(|_| (rng.pick(NAMES).as_bytes().to_vec(), value(&mut rng)))
                .collect();
            let block = theirs.encode(list.iter().map(|(n, v)| (&n[..], &v[..])));
            same(
                &decode(&mut ours, &block).unwrap(),
                &classified(&list),
                "ours",
            );
        }
    }
}

/// The dynamic table as RFC 7541 §4 defines it: the generator's model.
struct Model {
    /// Entries, newest first.
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    max_size: usize,
}

impl Model {
    fn size(&self) -> usize {
        self.entries
            .iter()
            .map(|(n, v)| n.len() + v.len() + ENTRY_OVERHEAD)
            .sum()
    }

    fn evict_to(&mut self, target: usize) {
        while self.size() > target {
            self.entries.pop();
        }
    }

    fn insert(&mut self, name: Vec<u8>, value: Vec<u8>) {
        let size = name.len() + value.len() + ENTRY_OVERHEAD;
        if size > self.max_size {
            self.entries.clear();
        } else {
            self.evict_to(self.max_size - size);
            self.entries.insert(0, (name, value));
        }
    }

    /// The field at a 1-based index (which the generator keeps in range).
    fn get(&self, index: usize) -> (Vec<u8>, Vec<u8>) {
        match index {
            1..=61 => {
                let e = &STATIC[index - 1];
                (e.text.as_bytes().to_vec(), e.value.as_bytes().to_vec())
            }
            _ => self.entries[index - 62].clone(),
        }
    }

    /// A valid index, preferring the dynamic table when it has entries.
    fn index(&self, rng: &mut Rng) -> usize {
        if !self.entries.is_empty() && rng.one_in(2) {
            62 + rng.below(self.entries.len())
        } else {
            1 + rng.below(61)
        }
    }
}

/// A random block valid for `model` (updated as the decoder will be), and its field list.
fn random_block(rng: &mut Rng, model: &mut Model) -> (Vec<Repr>, List) {
    let mut reprs = Vec::new();
    let mut list = Vec::new();
    if rng.one_in(8) {
        for _ in 0..1 + rng.below(2) {
            let size = if rng.one_in(2) {
                MAX_TABLE_SIZE
            } else {
                rng.below(MAX_TABLE_SIZE + 1)
            };
            reprs.push(Repr::SizeUpdate(size));
            model.max_size = size;
            model.evict_to(size);
        }
    }
    for _ in 0..1 + rng.below(12) {
        if rng.one_in(3) {
            let index = model.index(rng);
            list.push(model.get(index));
            reprs.push(Repr::Indexed(index));
            continue;
        }
        let kind = *rng.pick(&[
            Kind::Incremental,
            Kind::Incremental,
            Kind::Without,
            Kind::Never,
        ]);
        let (name_ref, name) = if rng.one_in(2) {
            let index = model.index(rng);
            (NameRef::Index(index), model.get(index).0)
        } else {
            let names = if rng.one_in(10) { ODD_NAMES } else { NAMES };
            let name = rng.pick(names).as_bytes().to_vec();
            (NameRef::Literal(name.clone(), rng.one_in(2)), name)
        };
        let value = value(rng);
        reprs.push(Repr::Literal(kind, name_ref, value.clone(), rng.one_in(2)));
        if kind == Kind::Incremental {
            model.insert(name.clone(), value.clone());
        }
        list.push((name, value));
    }
    (reprs, list)
}

#[test]
fn random_representations_three_ways() {
    let mut rng = Rng::new(0x7541);
    for _connection in 0..20 {
        let mut model = Model {
            entries: Vec::new(),
            max_size: MAX_TABLE_SIZE,
        };
        let mut ours = Decoder::new();
        let mut theirs = loona_hpack::Decoder::new();
        for _block in 0..15 {
            let (reprs, list) = random_block(&mut rng, &mut model);
            let block = encode_block(&reprs);
            same(
                &decode(&mut ours, &block).unwrap(),
                &classified(&list),
                "ours",
            );
            same(&theirs.decode(&block).unwrap(), &list, "loona-hpack");
            let table: List = ours
                .table()
                .entries()
                .map(|(n, v)| (name_text(n).into_bytes(), v.to_vec()))
                .collect();
            let model_table: List = model
                .entries
                .iter()
                .map(|(n, v)| (name_text(&classify(n)).into_bytes(), v.clone()))
                .collect();
            same(&table, &model_table, "our table");
            assert_eq!(ours.table_size(), model.size());
        }
    }
}

#[test]
fn our_encoder_their_decoder() {
    let mut rng = Rng::new(0xe4c0de);
    let statuses = [200, 204, 206, 304, 400, 404, 500, 101, 302, 418, 503, 999];
    let mut theirs = loona_hpack::Decoder::new();
    let mut ours = Decoder::new();
    for _head in 0..300 {
        let status = *rng.pick(&statuses);
        let mut block = Vec::new();
        encode_status(&mut block, status);
        let mut list: List = vec![(b":status".to_vec(), status.to_string().into_bytes())];
        for _ in 0..rng.below(10) {
            let name = *rng.pick(&NAMES[5..]);
            let name = HeaderName::from_static(name);
            let value = value(&mut rng);
            encode_field(&mut block, &name, &value, rng.one_in(4));
            list.push((name.as_str().as_bytes().to_vec(), value));
        }
        same(&theirs.decode(&block).unwrap(), &list, "loona-hpack");
        same(
            &decode(&mut ours, &block).unwrap(),
            &classified(&list),
            "ours",
        );
        // Nothing we send is indexed.
        assert_eq!(ours.table_len(), 0);
    }
}
