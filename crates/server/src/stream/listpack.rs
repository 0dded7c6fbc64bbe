//! The byte size Redis's listpack encoding would give a stream node.
//!
//! Nothing here is stored as a listpack. Redis starts a new node (a new
//! radix tree key) when the tail node's listpack would pass
//! `stream-node-max-bytes`, and approximate trimming (`MAXLEN ~`) removes
//! whole nodes only, so what clients see (`XLEN` after `XADD ... MAXLEN ~
//! 1000`, `XINFO STREAM`'s `radix-tree-keys`) depends on those sizes.
//! These functions compute them from `listpack.c`'s encoding rules:
//! integers in 1 to 9 bytes, strings with a 1, 2 or 5 byte header, every
//! element followed by its length in 1 to 5 bytes.

use super::{Item, StreamId};

/// The size of a listpack's header (total bytes and element count) and
/// end marker.
pub const OVERHEAD: usize = 6 + 1;

/// The bytes of an integer element's encoding, without its back length
/// (`lpEncodeIntegerGetType`).
fn int_encoding(v: i64) -> usize {
    match v {
        0..=127 => 1,
        -4096..=4095 => 2,
        -32_768..=32_767 => 3,
        -8_388_608..=8_388_607 => 4,
        -2_147_483_648..=2_147_483_647 => 5,
        _ => 9,
    }
}

/// An element of `encoded` bytes plus its back length (`lpEncodeBacklen`).
fn element(encoded: usize) -> usize {
    encoded
        + match encoded {
            0..=127 => 1,
            128..=16_382 => 2,
            16_383..=2_097_150 => 3,
            2_097_151..=268_435_454 => 4,
            _ => 5,
        }
}

/// An integer element.
pub fn int(v: i64) -> usize {
    element(int_encoding(v))
}

/// A string element: stored as an integer when it reads as a canonical
/// 64-bit integer (`lpStringToInt64`), as a string otherwise.
pub fn string(s: &[u8]) -> usize {
    if s.len() < 21 {
        if let Some(v) = crate::resp::parse_i64(s) {
            return int(v);
        }
    }
    let header = match s.len() {
        0..=63 => 1,
        64..=4095 => 2,
        _ => 5,
    };
    element(header + s.len())
}

/// A node's master entry: live count, deleted count, the field count,
/// the fields, and a zero terminator.
pub fn master(live: usize, deleted: u64, fields: &[bytes::Bytes]) -> usize {
    int(live as i64)
        + int(deleted as i64)
        + int(fields.len() as i64)
        + fields.iter().map(|f| string(f)).sum::<usize>()
        + int(0)
}

/// One entry in a node whose master has `master_id` and `master_fields`:
/// flags, the ID as deltas, the field count and fields unless they are
/// the master's, the values, and the count of elements for walking back.
pub fn entry(item: &Item, master_id: StreamId, master_fields: &[bytes::Bytes]) -> usize {
    let pairs = item.fields.len() / 2;
    let same = same_fields(item, master_fields);
    // Deltas are taken modulo 2^64 and stored as signed 64-bit integers.
    let mut size = int(2)
        + int(item.id.ms.wrapping_sub(master_id.ms) as i64)
        + int(item.id.seq.wrapping_sub(master_id.seq) as i64);
    let mut count = pairs + 3;
    if !same {
        size += int(pairs as i64);
        count += pairs + 1;
    }
    for (i, part) in item.fields.iter().enumerate() {
        if i % 2 == 1 || !same {
            size += string(part);
        }
    }
    size + int(count as i64)
}

/// True when the entry's field names are the master entry's, in order
/// (Redis then stores only the values).
pub fn same_fields(item: &Item, master_fields: &[bytes::Bytes]) -> bool {
    item.fields.len() / 2 == master_fields.len()
        && item.fields.iter().step_by(2).eq(master_fields.iter())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_listpack_c() {
        assert_eq!(int(0), 2);
        assert_eq!(int(127), 2);
        assert_eq!(int(128), 3);
        assert_eq!(int(-4096), 3);
        assert_eq!(int(4096), 4);
        assert_eq!(int(1 << 40), 10);
        assert_eq!(
            string(b"12"),
            2,
            "an integer string is stored as an integer"
        );
        assert_eq!(string(b"012"), 5, "not canonical: a string");
        assert_eq!(string(b""), 2);
        assert_eq!(string(&[b'a'; 63]), 65);
        assert_eq!(
            string(&[b'a'; 64]),
            66 + 1,
            "two-byte header, two-byte back length"
        );
        assert_eq!(string(&[b'a'; 5000]), 5005 + 2);
    }
}
