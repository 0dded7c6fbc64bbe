//! A whole RDB file (`rdbSaveRio`), for a replica's full synchronisation:
//! the header, `redis-ver` and `redis-bits`, database 0 with its sizes,
//! each key (its absolute expiry first, if any) as a `DUMP` would write
//! its value, the end mark and the CRC-64 of everything before it.

use super::{dump, write, CRC};
use bytes::Bytes;
use tiercache_engine::Entry;

/// The RDB version written: Redis 7.0's (streams are written as 7.0
/// writes them).
const FILE_VERSION: &[u8] = b"REDIS0010";

/// The RDB file of `entries` (in any order); `Err` is the error of a
/// value that does not decode.
///
/// ```
/// use bytes::Bytes;
/// use tiercache_engine::Entry;
/// let rdb = tiercache_server::rdb::file(&[(Bytes::from("k"), Entry::new("v"))], "7.0.15").unwrap();
/// assert!(rdb.starts_with(b"REDIS0010"));
/// // ... database 0 holding one key, no expiry: `k` = `v` as a string.
/// assert!(rdb.windows(6).any(|w| w == b"\x00\x01k\x01v\xff"));
/// ```
pub fn file(entries: &[(Bytes, Entry)], redis_version: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(
        64 + entries
            .iter()
            .map(|(k, e)| k.len() + e.value.len() + 24)
            .sum::<usize>(),
    );
    out.extend_from_slice(FILE_VERSION);
    for (name, value) in [("redis-ver", redis_version), ("redis-bits", "64")] {
        out.push(0xFA); // AUX
        write::string(&mut out, name.as_bytes());
        write::string(&mut out, value.as_bytes());
    }
    out.push(0xFE); // SELECTDB
    write::len(&mut out, 0);
    out.push(0xFB); // RESIZEDB
    write::len(&mut out, entries.len() as u64);
    let expiring = entries
        .iter()
        .filter(|(_, e)| e.expires_at.is_some())
        .count();
    write::len(&mut out, expiring as u64);
    for (key, entry) in entries {
        if let Some(at) = entry.expires_at {
            out.push(0xFC); // EXPIRETIME_MS
            out.extend_from_slice(&at.to_le_bytes());
        }
        let payload = dump(entry.kind, &entry.value)?;
        // The payload: type byte, value, then 10 bytes of footer.
        let object = &payload[..payload.len() - 10];
        out.push(object[0]);
        write::string(&mut out, key);
        out.extend_from_slice(&object[1..]);
    }
    out.push(0xFF); // EOF
    let crc = CRC.checksum(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}
