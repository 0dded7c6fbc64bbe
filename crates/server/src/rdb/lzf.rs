//! LZF decompression, for the strings Redis compresses in an RDB payload
//! (`rdbcompression yes`, strings over 20 bytes).
//!
//! Written here rather than taken from a crate: the `lzf` crate is marked
//! deprecated by its author and sizes its output with `unsafe`; the
//! decoder is a loop of twenty lines (liblzf's `lzf_d.c`), checked on
//! every read and never writing past the length the payload claims.

/// The `out_len` bytes that `input` decompresses to; `None` when `input`
/// is not a valid LZF stream of exactly that many bytes. The caller
/// bounds `out_len`; the claimed length is not allocated up front beyond
/// what `input` could expand to (a 3-byte back reference makes at most
/// 264 bytes).
pub fn decompress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    if out_len / 88 > input.len() {
        return None; // more than any LZF stream of this size makes
    }
    let mut out = Vec::with_capacity(out_len);
    let mut i = 0;
    while i < input.len() {
        let ctrl = usize::from(input[i]);
        i += 1;
        if ctrl < 32 {
            // A run of ctrl + 1 literal bytes.
            let run = input.get(i..i + ctrl + 1)?;
            if out.len() + run.len() > out_len {
                return None;
            }
            out.extend_from_slice(run);
            i += run.len();
        } else {
            // A back reference: length in the top 3 bits (7 = one more
            // byte), distance in the low 5 bits and the next byte.
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(*input.get(i)?);
                i += 1;
            }
            len += 2;
            let back = ((ctrl & 0x1f) << 8) + usize::from(*input.get(i)?) + 1;
            i += 1;
            if back > out.len() || out.len() + len > out_len {
                return None;
            }
            // Byte by byte: the source may overlap what this copy writes.
            let start = out.len() - back;
            for k in start..start + len {
                out.push(out[k]);
            }
        }
    }
    (out.len() == out_len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::decompress;

    #[test]
    fn literals_and_overlapping_back_references() {
        // "abc" as literals, then 6 bytes from 3 back: "abcabcabc".
        let input = [2, b'a', b'b', b'c', (4 << 5), 2];
        assert_eq!(decompress(&input, 9).unwrap(), b"abcabcabc");
        // A long back reference (length byte) of 1 back: a run of one byte.
        let input = [0, b'x', (7 << 5), 100 - 9, 0];
        assert_eq!(decompress(&input, 101).unwrap(), vec![b'x'; 101]);
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let input = [2, b'a', b'b', b'c', (4 << 5), 2];
        assert_eq!(decompress(&input, 8), None, "longer than claimed");
        assert_eq!(decompress(&input, 10), None, "shorter than claimed");
        assert_eq!(decompress(&[2, b'a'], 3), None, "literal run cut short");
        assert_eq!(
            decompress(&[0, b'a', (1 << 5), 5], 4),
            None,
            "reference before the start"
        );
        assert_eq!(
            decompress(&[0, b'a', (1 << 5)], 4),
            None,
            "reference cut short"
        );
        // A claim no stream of 6 bytes can meet is refused before any
        // allocation for it.
        assert_eq!(decompress(&input, 1 << 40), None, "claims a terabyte");
    }
}
