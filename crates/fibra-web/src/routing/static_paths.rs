//! [`StaticPaths`]: the routes without parameters, looked up by their exact path before the
//! radix tree — one hash and one compare instead of the tree's walk and its parameter list.
//!
//! The tree would find the same route: a path equal to a static pattern matches that route
//! there too (static segments win over parameters), and every route is in the tree as well,
//! which keeps finding conflicts when routes are added. The hash is a multiply-rotate one
//! over 8-byte words (the keys are the app's own patterns, fixed when the router is built;
//! a request's path is only looked up, never inserted, so a path chosen to collide costs one
//! lookup, not a growing table).

use fibra_http::word_hash::WordMap;

/// Exact paths of the parameterless routes, to the routes' indexes.
#[derive(Debug, Clone, Default)]
pub(super) struct StaticPaths {
    map: WordMap<Box<str>, usize>,
}

impl StaticPaths {
    /// Adds `pattern` if it has no parameter (`{`).
    pub(super) fn add(&mut self, pattern: &str, index: usize) {
        if !pattern.contains('{') {
            self.map.insert(pattern.into(), index);
        }
    }

    /// The route whose pattern is exactly `path`.
    #[inline]
    pub(super) fn get(&self, path: &str) -> Option<usize> {
        if self.map.is_empty() {
            return None;
        }
        self.map.get(path).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::StaticPaths;

    #[test]
    fn exact_static_paths_only() {
        let mut s = StaticPaths::default();
        s.add("/plaintext", 0);
        s.add("/users/{id}", 1);
        s.add("/a/b/c/d/e/f/g/h/i", 2);
        assert_eq!(s.get("/plaintext"), Some(0));
        assert_eq!(s.get("/plaintext/"), None);
        assert_eq!(s.get("/users/{id}"), None);
        assert_eq!(s.get("/a/b/c/d/e/f/g/h/i"), Some(2));
        assert_eq!(s.get("/a/b/c/d/e/f/g/h/j"), None);
    }
}
