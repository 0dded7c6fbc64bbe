//! The writes made to a decoded hash, set or sorted set, recorded as a
//! patch the write-back journal can carry instead of the whole value (see
//! the engine's `Patcher` and [`crate::CollectionPatcher`]). A `HSET` to a
//! hash of 1,000 fields then journals the field, not the hash.
//!
//! A patch is a sequence of operations, each a tag the type defines and
//! its arguments as [`packed`](crate::packed) items:
//!
//! ```text
//! per operation: [tag: u8][count: varint] then count × ([len: varint][bytes])
//! ```
//!
//! Each type replays its operations with the same methods that made
//! them, on the bytes they were made on, and so gets the same bytes.

use crate::packed::{put_item, put_varint, Corrupt, Reader};
use bytes::{BufMut, Bytes, BytesMut};

/// The operations recorded since a value was decoded.
#[derive(Clone, Debug, Default)]
pub(crate) struct OpLog {
    buf: BytesMut,
}

impl OpLog {
    /// Records one operation.
    pub(crate) fn push<A: AsRef<[u8]>>(&mut self, tag: u8, args: &[A]) {
        self.buf.put_u8(tag);
        put_varint(&mut self.buf, args.len() as u64);
        for a in args {
            put_item(&mut self.buf, a.as_ref());
        }
    }

    /// The patch recorded so far (`None` when nothing was), leaving the
    /// log empty.
    pub(crate) fn take(&mut self) -> Option<Bytes> {
        (!self.buf.is_empty()).then(|| self.buf.split().freeze())
    }
}

/// The patch of one operation (what an `OpLog` holding only it takes).
pub(crate) fn one<A: AsRef<[u8]>>(tag: u8, args: &[A]) -> Bytes {
    let mut log = OpLog::default();
    log.push(tag, args);
    log.take().expect("one operation recorded")
}

/// Calls `f` with each operation of `patch`, in order: its tag and
/// arguments (slices of `patch`).
pub(crate) fn replay(
    patch: &Bytes,
    mut f: impl FnMut(u8, Vec<Bytes>) -> Result<(), Corrupt>,
) -> Result<(), Corrupt> {
    let mut r = Reader::new(patch);
    while r.position() < patch.len() {
        let tag = r.byte()?;
        let n = r.count(1)?;
        let args = (0..n).map(|_| r.item()).collect::<Result<Vec<_>, _>>()?;
        f(tag, args)?;
    }
    Ok(())
}

/// The arguments of an operation that takes exactly `N`.
pub(crate) fn exactly<const N: usize>(args: Vec<Bytes>) -> Result<[Bytes; N], Corrupt> {
    args.try_into()
        .map_err(|_| Corrupt("wrong number of arguments in a patch"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_come_back_in_order() {
        let mut log = OpLog::default();
        assert!(log.take().is_none());
        log.push(1, &[&b"f"[..], b"v"]);
        log.push(2, &[&b"a"[..], b"bc", b""]);
        log.push::<&[u8]>(3, &[]);
        let patch = log.take().unwrap();
        assert!(log.take().is_none(), "taking empties the log");
        let mut seen = Vec::new();
        replay(&patch, |tag, args| {
            seen.push((tag, args));
            Ok(())
        })
        .unwrap();
        let f = |s: &'static str| Bytes::from_static(s.as_bytes());
        assert_eq!(
            seen,
            [
                (1, vec![f("f"), f("v")]),
                (2, vec![f("a"), f("bc"), f("")]),
                (3, vec![]),
            ]
        );
        assert!(exactly::<2>(seen[0].1.clone()).is_ok());
        assert!(exactly::<2>(seen[1].1.clone()).is_err());
    }

    #[test]
    fn a_truncated_patch_is_corrupt() {
        let mut log = OpLog::default();
        log.push(1, &[&b"field"[..], b"value"]);
        let patch = log.take().unwrap();
        for cut in 1..patch.len() {
            assert!(
                replay(&patch.slice(..cut), |_, _| Ok(())).is_err(),
                "cut at {cut}"
            );
        }
    }
}
