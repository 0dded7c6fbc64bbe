//! Writing one RDB object (`rdbSaveObject`). Collections are written in
//! RDB's plain types (`LIST`, `SET`, `ZSET_2`, `HASH`: a count, then the
//! strings), which every Redis since 4.0 loads and converts to whatever
//! encoding its own thresholds pick; strings that read as small integers
//! take RDB's integer encoding, as Redis writes them. Nothing is
//! compressed (`rdbcompression` off). Streams: `stream.rs`.

use super::read::types;
use super::Object;

/// `rdbSaveLen`.
pub(super) fn len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
    } else if n <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// `rdbSaveRawString` without compression: an integer of up to 32 bits
/// written in its canonical form (`rdbTryIntegerEncoding`) takes 2 to 5
/// bytes, anything else its length and bytes.
pub(super) fn string(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() <= 11 {
        if let Some(v) = crate::resp::parse_i64(s) {
            if let Ok(v) = i8::try_from(v) {
                out.extend_from_slice(&[0xC0, v as u8]);
                return;
            }
            if let Ok(v) = i16::try_from(v) {
                out.push(0xC1);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            }
            if let Ok(v) = i32::try_from(v) {
                out.push(0xC2);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            }
        }
    }
    len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Appends `obj`, type byte first.
pub(super) fn object(out: &mut Vec<u8>, obj: &Object) -> Result<(), crate::packed::Corrupt> {
    match obj {
        Object::Stream(s) => {
            out.push(types::STREAM_LISTPACKS_2);
            super::stream::write(out, s)?;
        }
        Object::String(s) => {
            out.push(types::STRING);
            string(out, s);
        }
        Object::List(items) | Object::Set(items) => {
            out.push(if matches!(obj, Object::List(_)) {
                types::LIST
            } else {
                types::SET
            });
            len(out, items.len() as u64);
            for item in items {
                string(out, item);
            }
        }
        Object::ZSet(members) => {
            out.push(types::ZSET_2);
            len(out, members.len() as u64);
            for (m, score) in members {
                string(out, m);
                out.extend_from_slice(&score.to_le_bytes());
            }
        }
        Object::Hash(fields) => {
            out.push(types::HASH);
            len(out, fields.len() as u64);
            for (f, v) in fields {
                string(out, f);
                string(out, v);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdb::read::Reader;

    #[test]
    fn lengths_and_strings_read_back() {
        for n in [0u64, 63, 64, 16_383, 16_384, 1 << 20] {
            let mut out = Vec::new();
            len(&mut out, n);
            let expected = match n {
                0..=63 => 1,
                64..=16_383 => 2,
                _ => 5,
            };
            assert_eq!(out.len(), expected, "length {n}");
        }
        for s in [
            &b""[..],
            b"0",
            b"-128",
            b"127",
            b"128",
            b"-32768",
            b"40000",
            b"2147483647",
            b"2147483648",
            b"-2147483648",
            b"007",
            b"-0",
            b"1e3",
            b"hello",
            &[b'x'; 70][..],
        ] {
            let mut out = Vec::new();
            string(&mut out, s);
            let mut r = Reader::new(&out, 1 << 20);
            assert_eq!(
                &r.string().unwrap()[..],
                s,
                "{:?}",
                String::from_utf8_lossy(s)
            );
            assert!(r.at_end());
        }
        // Integers take the integer encoding; the rest stay text.
        let mut out = Vec::new();
        string(&mut out, b"-32768");
        assert_eq!(out, [0xC1, 0x00, 0x80]);
        out.clear();
        string(&mut out, b"007");
        assert_eq!(out, [3, b'0', b'0', b'7']);
    }
}
