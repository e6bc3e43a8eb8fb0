//! Which route of a site takes a path: an exact (`=/x`) route first, then the longest prefix
//! (order in the file never matters).

use crate::config::PathMatch;
use crate::name_table::NameTable;
use crate::words::nth_word;

/// A site's routes by path.
#[derive(Debug, Default)]
pub struct RouteTable {
    exact: NameTable,
    /// Bit `n` set: an exact route is `n` bytes long (63: 63 or longer), so most paths skip
    /// hashing for the exact table.
    exact_lens: u64,
    /// Longest first.
    prefixes: Vec<Prefix>,
}

/// A prefix route: its first word compared at once, the rest (if any) after.
#[derive(Debug)]
struct Prefix {
    /// The first 8 bytes (zero-padded).
    first: u64,
    /// The bytes of a path's first word that `first` holds.
    mask: u64,
    /// The whole prefix.
    bytes: Box<[u8]>,
    route: usize,
}

impl RouteTable {
    /// Adds route `i`.
    pub fn add(&mut self, i: usize, path: &PathMatch) {
        match path {
            PathMatch::Exact(p) => {
                self.exact.insert(p.as_bytes(), i);
                self.exact_lens |= 1 << p.len().min(63);
            }
            PathMatch::Prefix(p) => {
                let bytes: Box<[u8]> = p.as_bytes().into();
                let n = bytes.len().min(8);
                self.prefixes.push(Prefix {
                    first: nth_word(&bytes[..n], 0),
                    mask: if n == 8 {
                        u64::MAX
                    } else {
                        (1u64 << (8 * n)) - 1
                    },
                    bytes,
                    route: i,
                });
                self.prefixes
                    .sort_by_key(|p| std::cmp::Reverse(p.bytes.len()));
            }
        }
    }

    /// The route for the (decoded) `path`.
    #[inline]
    pub fn lookup(&self, path: &str) -> Option<usize> {
        let path = path.as_bytes();
        if self.exact_lens & (1 << path.len().min(63)) != 0 {
            if let Some(i) = self.exact.get(path, false) {
                return Some(i);
            }
        }
        let head = nth_word(path, 0);
        self.prefixes
            .iter()
            .find(|p| {
                p.bytes.len() <= path.len()
                    && head & p.mask == p.first
                    && (p.bytes.len() <= 8 || path[8..p.bytes.len()] == p.bytes[8..])
            })
            .map(|p| p.route)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_then_longest_prefix_whatever_the_order() {
        let mut t = RouteTable::default();
        t.add(0, &PathMatch::Prefix("/".into()));
        t.add(1, &PathMatch::Prefix("/api/v2/".into()));
        t.add(2, &PathMatch::Prefix("/api/".into()));
        t.add(3, &PathMatch::Exact("/api/".into()));
        assert_eq!(t.lookup("/x"), Some(0));
        assert_eq!(t.lookup("/api/x"), Some(2));
        assert_eq!(t.lookup("/api/v2/x"), Some(1));
        assert_eq!(t.lookup("/api/"), Some(3));
        assert_eq!(t.lookup("/api"), Some(0));
        t.add(4, &PathMatch::Prefix("/static/images/".into()));
        t.add(5, &PathMatch::Prefix("/static/".into()));
        t.add(6, &PathMatch::Prefix("/s".into()));
        t.add(
            7,
            &PathMatch::Exact("/static/images/a-long-exact-name.png".into()),
        );
        assert_eq!(t.lookup("/static/images/x.png"), Some(4));
        assert_eq!(t.lookup("/static/images/"), Some(4));
        assert_eq!(t.lookup("/static/images"), Some(5));
        assert_eq!(t.lookup("/static/imageS/x"), Some(5));
        assert_eq!(t.lookup("/static/"), Some(5));
        assert_eq!(t.lookup("/static"), Some(6));
        assert_eq!(t.lookup("/s"), Some(6));
        assert_eq!(t.lookup("/"), Some(0));
        assert_eq!(t.lookup("/static/images/a-long-exact-name.png"), Some(7));
        assert_eq!(t.lookup("/static/images/a-long-exact-name.pnG"), Some(4));
        let mut none = RouteTable::default();
        none.add(0, &PathMatch::Prefix("/only/".into()));
        assert_eq!(none.lookup("/other"), None);
    }
}
