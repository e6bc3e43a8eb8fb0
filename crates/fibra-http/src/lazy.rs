//! A value boxed on first use, for the parts of a request or response that are usually empty
//! (extensions, the response's header map).

use std::cell::OnceCell;
use std::sync::OnceLock;

use http::{Extensions, HeaderMap};

/// The empty header map shown while a [`Lazy`] one is not made.
pub(crate) static NO_HEADERS: OnceLock<HeaderMap> = OnceLock::new();
/// The empty extensions shown while [`Lazy`] ones are not made (requests and responses).
pub(crate) static NO_EXTENSIONS: OnceLock<Extensions> = OnceLock::new();

/// A box made on first use: empty, it is one pointer and its drop an inline check (the drop
/// glue of a boxed map is an out-of-line call even for `None`).
pub(crate) struct Lazy<T>(OnceCell<Box<T>>);

impl<T> Lazy<T> {
    /// Empty.
    #[inline]
    pub(crate) const fn none() -> Self {
        Lazy(OnceCell::new())
    }
    /// Holding `value` (boxed).
    pub(crate) fn some(value: T) -> Self {
        Lazy(OnceCell::from(Box::new(value)))
    }
    /// Holding `value`, or empty when `value` is (nothing is boxed for it).
    pub(crate) fn unless_empty(value: T, is_empty: impl FnOnce(&T) -> bool) -> Self {
        if is_empty(&value) {
            Lazy::none()
        } else {
            Lazy::some(value)
        }
    }
    /// The value, or `empty` (a shared empty one) if none was made.
    #[inline]
    pub(crate) fn get_or<'a>(&'a self, empty: &'a OnceLock<T>) -> &'a T
    where
        T: Default,
    {
        match self.0.get() {
            Some(v) => v,
            None => empty.get_or_init(T::default),
        }
    }
    /// The value, made (empty) first if needed.
    #[inline]
    pub(crate) fn get_mut(&mut self) -> &mut T
    where
        T: Default,
    {
        if self.0.get().is_none() {
            let _ = self.0.set(Box::default());
        }
        self.0.get_mut().expect("made above")
    }
    /// Whether no value was made.
    #[inline]
    pub(crate) fn is_none(&self) -> bool {
        self.0.get().is_none()
    }
    /// Takes the value out, leaving this empty.
    #[inline]
    pub(crate) fn take(&mut self) -> Option<T> {
        self.0.take().map(|b| *b)
    }
}

impl<T> Drop for Lazy<T> {
    #[inline]
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            drop_boxed(value);
        }
    }
}

/// The rare drop of a made value, out of line.
#[cold]
#[inline(never)]
fn drop_boxed<T>(value: Box<T>) {
    drop(value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn made_on_first_change_and_dropped_once() {
        static EMPTY: OnceLock<Vec<u8>> = OnceLock::new();
        let mut l: Lazy<Vec<u8>> = Lazy::none();
        assert!(l.get_or(&EMPTY).is_empty());
        l.get_mut().push(1);
        assert_eq!(l.get_or(&EMPTY), &[1]);
        assert_eq!(l.take(), Some(vec![1]));
        assert_eq!(l.take(), None);
        assert!(Lazy::unless_empty(Vec::<u8>::new(), Vec::is_empty)
            .take()
            .is_none());
        assert_eq!(
            Lazy::unless_empty(vec![2u8], Vec::is_empty).take(),
            Some(vec![2])
        );
        // A held value is dropped with the `Lazy`, exactly once.
        let tracked = Rc::new(());
        let held = Lazy::some(tracked.clone());
        assert_eq!(Rc::strong_count(&tracked), 2);
        drop(held);
        assert_eq!(Rc::strong_count(&tracked), 1);
    }
}
