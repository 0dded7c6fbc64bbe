//! A part of a stream kept as its stored bytes until a command uses it.

use crate::packed::Corrupt;
use bytes::Bytes;
use std::cell::OnceCell;

/// A value decoded from `raw` on first use. Once changed it has no bytes
/// of its own: encoding it encodes the value; until then encoding copies
/// the bytes it came from.
#[derive(Clone, Debug)]
pub(crate) struct Lazy<T> {
    /// The stored bytes, while the value is unchanged.
    raw: Option<Bytes>,
    /// The value, once decoded (or built here).
    value: OnceCell<Result<T, Corrupt>>,
}

impl<T: Default> Default for Lazy<T> {
    fn default() -> Self {
        Lazy::new(T::default())
    }
}

impl<T> Lazy<T> {
    /// A value built here (nothing stored yet).
    pub fn new(value: T) -> Self {
        Lazy {
            raw: None,
            value: OnceCell::from(Ok(value)),
        }
    }

    /// A value stored as `raw`, decoded on first use.
    pub fn stored(raw: Bytes) -> Self {
        Lazy {
            raw: Some(raw),
            value: OnceCell::new(),
        }
    }

    /// The value, decoding it with `decode` the first time.
    pub fn get(&self, decode: impl FnOnce(&Bytes) -> Result<T, Corrupt>) -> Result<&T, Corrupt> {
        let raw = &self.raw;
        self.value
            .get_or_init(|| decode(raw.as_ref().expect("a lazy value has bytes or a value")))
            .as_ref()
            .map_err(|c| *c)
    }

    /// The value to change (decoded first if need be); its stored bytes no
    /// longer stand for it.
    pub fn get_mut(
        &mut self,
        decode: impl FnOnce(&Bytes) -> Result<T, Corrupt>,
    ) -> Result<&mut T, Corrupt> {
        self.get(decode)?;
        self.raw = None;
        match self.value.get_mut() {
            Some(Ok(v)) => Ok(v),
            _ => unreachable!("decoded just above"),
        }
    }

    /// The decoded value, if it was decoded (or built) and is valid.
    pub fn decoded(&self) -> Option<&T> {
        self.value.get().and_then(|r| r.as_ref().ok())
    }

    /// The stored bytes, while the value is unchanged.
    pub fn raw(&self) -> Option<&Bytes> {
        self.raw.as_ref()
    }
}
