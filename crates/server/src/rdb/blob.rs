//! The compact encodings Redis nests inside an RDB string: listpacks
//! (Redis 7), ziplists (Redis 6 and before) and intsets. Each reader
//! checks every length against the blob and returns the elements in
//! order, integers as their decimal text (what a client reads back);
//! `None` for a blob that does not parse to its end.

use bytes::Bytes;

fn le(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .rev()
        .fold(0, |acc, &b| (acc << 8) | u64::from(b))
}

/// A little-endian two's complement integer of `bytes.len()` bytes.
fn signed_le(bytes: &[u8]) -> i64 {
    let bits = 64 - 8 * bytes.len() as u32;
    ((le(bytes) << bits) as i64) >> bits
}

fn int(v: i64) -> Bytes {
    Bytes::from(v.to_string())
}

/// The elements of a listpack (`listpack.c`): a 6-byte header (total
/// bytes, element count), elements each followed by its back length, and
/// an end byte.
pub fn listpack(lp: &[u8]) -> Option<Vec<Bytes>> {
    if lp.len() < 7 || le(&lp[..4]) != lp.len() as u64 {
        return None;
    }
    let count = le(&lp[4..6]);
    let mut out = Vec::new();
    let mut p = 6;
    loop {
        let b = *lp.get(p)?;
        let (item, end) = match b {
            0xFF => break,
            0x00..=0x7F => (int(i64::from(b)), p + 1),
            0x80..=0xBF => string_at(lp, p + 1, usize::from(b & 0x3F))?,
            0xC0..=0xDF => {
                let v = (u64::from(b & 0x1F) << 8) | u64::from(*lp.get(p + 1)?);
                (int(((v << 51) as i64) >> 51), p + 2)
            }
            0xE0..=0xEF => {
                let n = (usize::from(b & 0x0F) << 8) | usize::from(*lp.get(p + 1)?);
                string_at(lp, p + 2, n)?
            }
            0xF0 => {
                let n = le(lp.get(p + 1..p + 5)?) as usize;
                string_at(lp, p + 5, n)?
            }
            0xF1..=0xF4 => {
                let width = [2, 3, 4, 8][usize::from(b - 0xF1)];
                (int(signed_le(lp.get(p + 1..p + 1 + width)?)), p + 1 + width)
            }
            _ => return None,
        };
        out.push(item);
        // The back length must say the element's encoded size.
        let (back, n) = back_length(end - p);
        if lp.get(end..end + n)? != &back[..n] {
            return None;
        }
        p = end + n;
    }
    // 65535 stands for "too many to count in the header".
    (p + 1 == lp.len() && (count == 65_535 || count == out.len() as u64)).then_some(out)
}

/// The string of `n` bytes at `at` (its header ends there), and where it
/// ends.
fn string_at(blob: &[u8], at: usize, n: usize) -> Option<(Bytes, usize)> {
    let s = blob.get(at..at.checked_add(n)?)?;
    Some((Bytes::copy_from_slice(s), at + n))
}

/// The elements of a ziplist (`ziplist.c`, Redis 6 and before): a 10-byte
/// header, elements each led by the previous one's length, an end byte.
pub fn ziplist(zl: &[u8]) -> Option<Vec<Bytes>> {
    if zl.len() < 11 || le(&zl[..4]) != zl.len() as u64 {
        return None;
    }
    let mut out = Vec::new();
    let mut p = 10;
    loop {
        match *zl.get(p)? {
            0xFF => break,
            0xFE => p += 5,
            _ => p += 1,
        }
        let enc = *zl.get(p)?;
        let (item, next) = match enc >> 6 {
            0 => string_at(zl, p + 1, usize::from(enc & 0x3F))?,
            1 => {
                let n = (usize::from(enc & 0x3F) << 8) | usize::from(*zl.get(p + 1)?);
                string_at(zl, p + 2, n)?
            }
            2 if enc == 0x80 => {
                let len = zl.get(p + 1..p + 5)?;
                string_at(zl, p + 5, u32::from_be_bytes(len.try_into().ok()?) as usize)?
            }
            2 => return None,
            _ => {
                let width = match enc {
                    0xC0 => 2,
                    0xD0 => 4,
                    0xE0 => 8,
                    0xF0 => 3,
                    0xFE => 1,
                    0xF1..=0xFD => {
                        out.push(int(i64::from(enc & 0x0F) - 1));
                        p += 1;
                        continue;
                    }
                    _ => return None,
                };
                (int(signed_le(zl.get(p + 1..p + 1 + width)?)), p + 1 + width)
            }
        };
        out.push(item);
        p = next;
    }
    (p + 1 == zl.len()).then_some(out)
}

/// The members of an intset (`intset.c`): element width (2, 4 or 8),
/// count, then the integers, little-endian.
pub fn intset(is: &[u8]) -> Option<Vec<Bytes>> {
    let width = le(is.get(..4)?) as usize;
    let count = le(is.get(4..8)?) as usize;
    if !matches!(width, 2 | 4 | 8) || is.len() != 8 + width.checked_mul(count)? {
        return None;
    }
    Some(is[8..].chunks(width).map(|c| int(signed_le(c))).collect())
}

/// `lpEncodeBacklen`: an element's encoded size `l`, 7 bits a byte, the
/// most significant first; every byte but the first has its top bit set,
/// so it reads from the element's last byte backwards.
fn back_length(l: usize) -> ([u8; 5], usize) {
    let n = match l {
        0..=127 => 1,
        128..=16_382 => 2,
        16_383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    };
    let mut out = [0; 5];
    for (i, b) in out[..n].iter_mut().enumerate() {
        let group = ((l as u64 >> (7 * (n - 1 - i))) & 127) as u8;
        *b = if i == 0 { group } else { group | 128 };
    }
    (out, n)
}

/// Builds a listpack as Redis's `lpAppend` does: an integer, or a string
/// that reads as one, in the smallest integer encoding; other strings
/// with a 1, 2 or 5 byte header; each element followed by its back
/// length.
#[derive(Default)]
pub struct ListpackWriter {
    body: Vec<u8>,
    count: usize,
}

impl ListpackWriter {
    pub fn int(&mut self, v: i64) {
        let start = self.body.len();
        match v {
            0..=127 => self.body.push(v as u8),
            -4096..=4095 => self
                .body
                .extend_from_slice(&[0xC0 | ((v >> 8) as u8 & 0x1F), v as u8]),
            _ => {
                let (tag, width) = match v {
                    -32_768..=32_767 => (0xF1, 2),
                    -8_388_608..=8_388_607 => (0xF2, 3),
                    -2_147_483_648..=2_147_483_647 => (0xF3, 4),
                    _ => (0xF4, 8),
                };
                self.body.push(tag);
                self.body.extend_from_slice(&v.to_le_bytes()[..width]);
            }
        }
        self.back_length(start);
    }

    pub fn string(&mut self, s: &[u8]) {
        if s.len() <= 20 {
            if let Some(v) = crate::resp::parse_i64(s) {
                return self.int(v);
            }
        }
        let start = self.body.len();
        let n = s.len();
        match n {
            0..=63 => self.body.push(0x80 | n as u8),
            64..=4095 => self
                .body
                .extend_from_slice(&[0xE0 | (n >> 8) as u8, n as u8]),
            _ => {
                self.body.push(0xF0);
                self.body.extend_from_slice(&(n as u32).to_le_bytes());
            }
        }
        self.body.extend_from_slice(s);
        self.back_length(start);
    }

    fn back_length(&mut self, start: usize) {
        let (back, n) = back_length(self.body.len() - start);
        self.body.extend_from_slice(&back[..n]);
        self.count += 1;
    }

    /// The listpack: header (total bytes; element count, 65535 when it
    /// does not fit), elements, end byte.
    pub fn finish(self) -> Vec<u8> {
        let total = 6 + self.body.len() + 1;
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&(total as u32).to_le_bytes());
        out.extend_from_slice(&(self.count.min(65_535) as u16).to_le_bytes());
        out.extend_from_slice(&self.body);
        out.push(0xFF);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[Bytes]) -> Vec<&str> {
        items
            .iter()
            .map(|b| std::str::from_utf8(b).unwrap())
            .collect()
    }

    /// Builds a listpack from encoded elements (back lengths added).
    fn lp(elements: &[&[u8]]) -> Vec<u8> {
        let mut body = Vec::new();
        for e in elements {
            body.extend_from_slice(e);
            assert!(e.len() < 128);
            body.push(e.len() as u8);
        }
        let total = 6 + body.len() + 1;
        let mut out = (total as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&(elements.len() as u16).to_le_bytes());
        out.extend_from_slice(&body);
        out.push(0xFF);
        out
    }

    #[test]
    fn listpack_reads_every_encoding() {
        let blob = lp(&[
            &[5],                               // 7-bit uint
            &[0x83, b'a', b'b', b'c'],          // 6-bit string
            &[0xDF, 0xFF],                      // 13-bit int: -1
            &[0xC0 | 0x0F, 0xFF],               // 13-bit int: 4095
            &[0xE0, 2, b'h', b'i'],             // 12-bit string
            &[0xF1, 0x00, 0x80],                // int16: -32768
            &[0xF2, 0xFF, 0xFF, 0x7F],          // int24: 8388607
            &[0xF3, 0xFE, 0xFF, 0xFF, 0xFF],    // int32: -2
            &[0xF4, 1, 0, 0, 0, 0, 0, 0, 0x80], // int64: i64::MIN + 1
            &[0xF0, 1, 0, 0, 0, b'z'],          // 32-bit string
        ]);
        let items = listpack(&blob).unwrap();
        assert_eq!(
            strings(&items),
            [
                "5",
                "abc",
                "-1",
                "4095",
                "hi",
                "-32768",
                "8388607",
                "-2",
                "-9223372036854775807",
                "z"
            ]
        );
    }

    #[test]
    fn listpack_refuses_damage() {
        let good = lp(&[&[0x83, b'a', b'b', b'c']]);
        assert!(listpack(&good).is_some());
        let mut wrong_total = good.clone();
        wrong_total[0] += 1;
        assert_eq!(listpack(&wrong_total), None);
        let mut wrong_count = good.clone();
        wrong_count[4] = 2;
        assert_eq!(listpack(&wrong_count), None);
        let mut long_string = good.clone();
        long_string[6] = 0xBF; // claims 63 bytes
        assert_eq!(listpack(&long_string), None);
        let mut bad_encoding = good;
        bad_encoding[6] = 0xF7;
        assert_eq!(listpack(&bad_encoding), None);
    }

    #[test]
    fn ziplist_reads_every_encoding() {
        // Entries: prevlen, encoding, data.
        let entries: &[&[u8]] = &[
            &[0, 0x03, b'f', b'o', b'o'],          // 6-bit string
            &[5, 0xF1 + 7],                        // immediate 7
            &[2, 0xFE, 0xF6],                      // int8 -10
            &[3, 0xC0, 0x39, 0x30],                // int16 12345
            &[4, 0xF0, 0, 0, 0x80],                // int24 -8388608
            &[5, 0xD0, 0xFF, 0xFF, 0xFF, 0x7F],    // int32 max
            &[6, 0xE0, 0, 0, 0, 0, 0, 0, 0, 0x80], // int64 min
            &[10, 0x40, 2, b'o', b'k'],            // 14-bit string
        ];
        let body: Vec<u8> = entries.concat();
        let total = 10 + body.len() + 1;
        let mut zl = (total as u32).to_le_bytes().to_vec();
        zl.extend_from_slice(&[0; 4]);
        zl.extend_from_slice(&(entries.len() as u16).to_le_bytes());
        zl.extend_from_slice(&body);
        zl.push(0xFF);
        assert_eq!(
            strings(&ziplist(&zl).unwrap()),
            [
                "foo",
                "7",
                "-10",
                "12345",
                "-8388608",
                "2147483647",
                "-9223372036854775808",
                "ok"
            ]
        );
        zl[total - 1] = 0; // no end byte
        assert_eq!(ziplist(&zl), None);
    }

    #[test]
    fn intset_reads_each_width() {
        let mut is = vec![2, 0, 0, 0, 2, 0, 0, 0];
        is.extend_from_slice(&(-3i16).to_le_bytes());
        is.extend_from_slice(&7i16.to_le_bytes());
        assert_eq!(strings(&intset(&is).unwrap()), ["-3", "7"]);
        let mut wide = vec![8, 0, 0, 0, 1, 0, 0, 0];
        wide.extend_from_slice(&i64::MAX.to_le_bytes());
        assert_eq!(strings(&intset(&wide).unwrap()), [i64::MAX.to_string()]);
        is.pop();
        assert_eq!(intset(&is), None, "short");
        assert_eq!(intset(&[3, 0, 0, 0, 0, 0, 0, 0]), None, "bad width");
    }

    #[test]
    fn listpack_writer_reads_back() {
        let mut w = ListpackWriter::default();
        let ints = [
            0i64,
            127,
            128,
            -1,
            4095,
            -4096,
            4096,
            32_767,
            -32_769,
            8_388_607,
            1 << 31,
            i64::MIN,
        ];
        for v in ints {
            w.int(v);
        }
        let long = "y".repeat(5000);
        let words = ["", "abc", "007", &"x".repeat(64), &long, "-12"];
        for s in words {
            w.string(s.as_bytes());
        }
        let lp = w.finish();
        let items = listpack(&lp).unwrap();
        let want: Vec<String> = ints
            .iter()
            .map(|v| v.to_string())
            .chain(words.iter().map(|s| s.to_string()))
            .collect();
        assert_eq!(strings(&items), want);
        // "007" is not an integer's canonical text: kept as a string.
        assert!(lp.windows(4).any(|w| w == [0x83, b'0', b'0', b'7']));
    }
}
