//! The misses in a row of a one-entry cache that is looked at on every request (the parser's
//! last head and last target, the last response head composed), so that traffic on which it
//! never hits stops paying for the comparison and the copy: after [`BACKOFF_AFTER`] misses in
//! a row the count goes on and only every 16th chance to look (or to keep) is taken, so
//! traffic that starts repeating is caught again within 32 requests.

/// Misses in a row after which a [`Backoff`] takes only every 16th chance.
pub(crate) const BACKOFF_AFTER: u32 = 8;

/// See the module docs.
#[derive(Debug, Default)]
pub(crate) struct Backoff(u32);

impl Backoff {
    /// Whether to take this chance: always, unless backing off; then every 16th.
    #[inline]
    pub(crate) fn take_chance(&mut self) -> bool {
        if self.0 <= BACKOFF_AFTER {
            return true;
        }
        self.0 = self.0.wrapping_add(1);
        self.0.is_multiple_of(16)
    }

    /// The cache hit: back to taking every chance.
    #[inline]
    pub(crate) fn hit(&mut self) {
        self.0 = 0;
    }

    /// The cache missed (counted up to the point where backing off starts).
    #[inline]
    pub(crate) fn miss(&mut self) {
        if self.0 <= BACKOFF_AFTER {
            self.0 += 1;
        }
    }

    /// Misses in a row so far (0 right after a hit).
    #[cfg(test)]
    pub(crate) fn misses(&self) -> u32 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backs_off_after_misses_and_recovers_on_a_hit() {
        let mut b = Backoff::default();
        for _ in 0..=BACKOFF_AFTER {
            assert!(b.take_chance());
            b.miss();
        }
        let taken = (0..64).filter(|_| b.take_chance()).count();
        assert_eq!(taken, 4, "every 16th chance while backing off");
        b.hit();
        assert_eq!(b.misses(), 0);
        assert!(b.take_chance());
    }
}
