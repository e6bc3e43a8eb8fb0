//! Decimal digits of an integer without allocating (`content-length` values).

/// Decimal digits of `n` without allocating.
pub(crate) fn itoa_buf(mut n: u64) -> Digits {
    let mut d = Digits {
        buf: [0; 20],
        start: 20,
    };
    loop {
        d.start -= 1;
        d.buf[d.start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return d;
        }
    }
}

/// The digits, right-aligned in a buffer long enough for any `u64`.
pub(crate) struct Digits {
    buf: [u8; 20],
    start: usize,
}

impl Digits {
    /// The digits.
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}
