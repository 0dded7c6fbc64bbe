//! `FUNCTION DUMP`'s payload (`functionDumpCommand` in Redis's
//! `functions.c`): for each library, the opcode `FUNCTION2` (245) and its
//! code (shebang included) as an RDB string; then the RDB version and a
//! CRC-64, as a key's `DUMP` payload ends. Redis 7.0's release candidates
//! wrote libraries under opcode `FUNCTION` (246) with name, engine and
//! description before the code; those are read too.
//!
//! The same bytes are the server's functions file (`cmd/script/library.rs`),
//! so a damaged file fails its checksum.

use super::read::Reader;
use super::{footer, verify, write};
use bytes::Bytes;

/// `RDB_OPCODE_FUNCTION2`: a library's code follows.
const FUNCTION2: u8 = 245;
/// `RDB_OPCODE_FUNCTION` (7.0 release candidates): name, engine, an
/// optional description, then the code.
const FUNCTION: u8 = 246;
/// The version stamped on a functions payload: Redis 7.0's RDB 10.
pub const FUNCTIONS_VERSION: u16 = 10;

/// The payload of the libraries whose codes are `codes`.
pub fn dump_functions<'a>(codes: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(FUNCTION2);
        write::string(&mut out, code);
    }
    footer(&mut out, FUNCTIONS_VERSION);
    out
}

/// The library codes a payload holds; the error text is Redis's
/// (without its `ERR ` code).
pub fn restore_functions(payload: &[u8]) -> Result<Vec<Bytes>, String> {
    let body = verify(payload).map_err(|_| "DUMP payload version or checksum are wrong")?;
    let mut r = Reader::new(body, usize::MAX);
    let mut codes = Vec::new();
    while !r.at_end() {
        let Ok(ty) = r.byte() else {
            return Err("can not read data type".into());
        };
        match ty {
            FUNCTION2 => {
                let code = r.string().map_err(|_| "Failed loading library payload")?;
                codes.push(code);
            }
            FUNCTION => {
                let _name = r.string().map_err(|_| "Failed loading library name")?;
                let _engine = r.string().map_err(|_| "Failed loading engine name")?;
                let has_desc = r
                    .len()
                    .map_err(|_| "Failed loading library description indicator")?;
                if has_desc != 0 {
                    r.string()
                        .map_err(|_| "Failed loading library description")?;
                }
                let code = r.string().map_err(|_| "Failed loading library blob")?;
                codes.push(code);
            }
            _ => return Err("given type is not a function".into()),
        }
    }
    Ok(codes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let code: &[u8] = b"#!lua name=lib\nredis.register_function('f', function() return 1 end)";
        let payload = dump_functions([code]);
        assert_eq!(payload[0], FUNCTION2);
        assert_eq!(
            restore_functions(&payload).unwrap(),
            vec![Bytes::from(code)]
        );
        let mut bad = payload.clone();
        bad[3] ^= 1;
        assert_eq!(
            restore_functions(&bad).unwrap_err(),
            "DUMP payload version or checksum are wrong"
        );
        assert!(restore_functions(&dump_functions([])).unwrap().is_empty());
    }

    #[test]
    fn reads_a_redis_7_payload() {
        // redis-server 7.0.15's FUNCTION DUMP of one library whose code
        // it LZF-compressed.
        let payload = b"\xf5\xc3@E@\xa5\x1f#!lua name=z\nredis.register_func\ttion('f', \xe0\x00\r\n) return 'a\xe0X\x00\x05' end)\n\x00\xc0\x104\xe8\x075\xd1\x8a";
        let code = format!(
            "#!lua name=z\nredis.register_function('f', function() return '{}' end)",
            "a".repeat(98)
        );
        assert_eq!(
            restore_functions(payload).unwrap(),
            vec![Bytes::from(code.into_bytes())]
        );
    }
}
