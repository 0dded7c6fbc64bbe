//! One allocation for a written key and its value ([`copy_key_value`]).
//!
//! A write keeps its key and value beyond the request, out of the read
//! buffer; the memory tier, the write-back queue and a flush batch each hold
//! handles to them. Two `Bytes::copy_from_slice` copies allocate twice, and
//! each handle allocates again when first cloned (a `Vec`-backed `Bytes`
//! gets its shared reference count on the first clone): four allocations
//! per durable SET. Here a key and value of up to [`INLINE_MAX`] bytes
//! together take one block, count included; larger ones take two (the
//! buffer, then its count), where the copy costs more than the allocation.

use bytes::Bytes;

/// The most key and value bytes stored in one block with their count.
const INLINE_MAX: usize = 240;

/// Copies a key and its value into one buffer, as two [`Bytes`] that share
/// it. Clones only count references. The buffer is freed when every handle
/// to either part is gone, so a structure that keeps the key of an
/// overwritten entry must take the new key too (the memory tier does; the
/// file store copies the keys it indexes).
///
/// ```
/// use tiercache_engine::copy_key_value;
/// let (k, v) = copy_key_value(b"user:1", b"alice");
/// assert_eq!((&k[..], &v[..]), (&b"user:1"[..], &b"alice"[..]));
/// ```
pub fn copy_key_value(key: &[u8], value: &[u8]) -> (Bytes, Bytes) {
    let mut both = match key.len() + value.len() {
        0..=24 => inline::<24>(key, value),
        25..=40 => inline::<40>(key, value),
        41..=64 => inline::<64>(key, value),
        65..=80 => inline::<80>(key, value),
        81..=96 => inline::<96>(key, value),
        97..=112 => inline::<112>(key, value),
        113..=144 => inline::<144>(key, value),
        145..=176 => inline::<176>(key, value),
        177..=208 => inline::<208>(key, value),
        209..=INLINE_MAX => inline::<INLINE_MAX>(key, value),
        total => {
            // Exactly the length as capacity: `Bytes::from(Vec)` then takes
            // the buffer as is (another capacity would allocate its count
            // at once).
            let mut buf = Vec::with_capacity(total);
            buf.extend_from_slice(key);
            buf.extend_from_slice(value);
            Bytes::from(buf)
        }
    };
    let key = both.split_to(key.len());
    (key, both)
}

/// Up to `N` bytes stored inline, the owner of a [`Bytes::from_owner`]:
/// its block holds the reference count, `len` and `data`, 16 + `N` bytes,
/// and each `N` above makes that one of mimalloc's size classes (40, 56,
/// 80, 96, 112, 128, 160, 192, 224, 256), so no class rounding is wasted.
/// Measured with callgrind (`scripts/mc-callgrind.sh set 16`, durable,
/// BENCHMARKS.md "Session 23"): 3,027 → 2,831 instructions and 6.07 → 4.72
/// last-level misses per SET on the request thread, against one `Vec` and
/// its count, with RSS within 2%.
struct Inline<const N: usize> {
    len: usize,
    data: [u8; N],
}

impl<const N: usize> AsRef<[u8]> for Inline<N> {
    fn as_ref(&self) -> &[u8] {
        &self.data[..self.len]
    }
}

fn inline<const N: usize>(key: &[u8], value: &[u8]) -> Bytes {
    let len = key.len() + value.len();
    let mut data = [0u8; N];
    data[..key.len()].copy_from_slice(key);
    data[key.len()..len].copy_from_slice(value);
    #[cfg(test)]
    tests::LIVE_INLINE.with(|n| n.set(n.get() + 1));
    Bytes::from_owner(Inline { len, data })
}

/// Counts live inline buffers in tests, to check that a buffer is freed
/// (an owned `Bytes` never reports itself unique).
#[cfg(test)]
impl<const N: usize> Drop for Inline<N> {
    fn drop(&mut self) {
        tests::LIVE_INLINE.with(|n| n.set(n.get() - 1));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// Inline buffers alive on this thread (created and dropped here).
        pub(crate) static LIVE_INLINE: Cell<usize> = const { Cell::new(0) };
    }

    pub(crate) fn live_inline() -> usize {
        LIVE_INLINE.with(Cell::get)
    }

    /// Every split point and total size across the inline classes and
    /// into the `Vec` path gives back exactly the key and the value.
    #[test]
    fn every_size_round_trips() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(INLINE_MAX + 40).collect();
        for total in 0..=INLINE_MAX + 40 {
            for key_len in [0, 1, total / 2, total.saturating_sub(1), total] {
                let key_len = key_len.min(total);
                let (key, value) = (&bytes[..key_len], &bytes[key_len..total]);
                let (k, v) = copy_key_value(key, value);
                assert_eq!(
                    (&k[..], &v[..]),
                    (key, value),
                    "total {total}, key {key_len}"
                );
            }
        }
    }

    /// Up to `INLINE_MAX` bytes the key and value share one inline buffer,
    /// which lives exactly as long as the last handle to either part.
    #[test]
    fn key_and_value_share_one_buffer_until_both_are_dropped() {
        let before = live_inline();
        let (k, v) = copy_key_value(b"key", &[7; INLINE_MAX - 3]);
        assert_eq!(live_inline(), before + 1, "one buffer for both");
        let kept = v.clone();
        drop((k, v));
        assert_eq!(live_inline(), before + 1, "a clone of the value keeps it");
        assert_eq!(kept[0], 7);
        drop(kept);
        assert_eq!(live_inline(), before, "freed with the last handle");

        let (k, v) = copy_key_value(b"key", &[7; INLINE_MAX - 2]);
        assert_eq!(live_inline(), before, "one byte more takes the Vec path");
        assert!(!k.is_unique() && !v.is_unique(), "the two share a buffer");
        drop(k);
        assert!(v.is_unique(), "the value alone holds it");
    }
}
