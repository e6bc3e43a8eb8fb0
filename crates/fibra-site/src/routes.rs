//! Which route of a site takes a path: an exact (`=/x`) route first, then the longest prefix
//! (order in the file never matters).

use fibra_http::word_hash::WordMap;

use crate::config::PathMatch;

/// A site's routes by path.
#[derive(Debug, Default)]
pub struct RouteTable {
    exact: WordMap<Box<str>, usize>,
    /// Longest first.
    prefixes: Vec<(Box<str>, usize)>,
}

impl RouteTable {
    /// Adds route `i`.
    pub fn add(&mut self, i: usize, path: &PathMatch) {
        match path {
            PathMatch::Exact(p) => {
                self.exact.insert(p.as_str().into(), i);
            }
            PathMatch::Prefix(p) => {
                self.prefixes.push((p.as_str().into(), i));
                self.prefixes.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
            }
        }
    }

    /// The route for the (decoded) `path`.
    pub fn lookup(&self, path: &str) -> Option<usize> {
        if !self.exact.is_empty() {
            if let Some(&i) = self.exact.get(path) {
                return Some(i);
            }
        }
        self.prefixes
            .iter()
            .find(|(p, _)| path.starts_with(&**p))
            .map(|&(_, i)| i)
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
        let mut none = RouteTable::default();
        none.add(0, &PathMatch::Prefix("/only/".into()));
        assert_eq!(none.lookup("/other"), None);
    }
}
