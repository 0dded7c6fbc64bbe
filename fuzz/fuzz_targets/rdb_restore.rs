//! Fuzzes `RESTORE`'s payload reader (`rdb::restore`) with a round-trip
//! oracle.
//!
//! The input is the object part of a `DUMP` payload; the target appends a
//! valid footer (RDB version and CRC-64), so the fuzzer explores the
//! object reader, not the checksum. Whatever parses must dump again and
//! restore to the same value: `restore(dump(restore(x))) == restore(x)`.
//! Panics, huge allocations (the value limit is 64 KiB here) and hangs
//! are bugs; a refusal is fine.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tiercache_server::rdb;

const MAX_VALUE: usize = 64 * 1024;

fuzz_target!(|object: &[u8]| {
    let payload = rdb::frame(object, 10);
    let Ok((kind, value)) = rdb::restore(&payload, MAX_VALUE) else {
        return;
    };
    let again = rdb::dump(kind, &value).expect("a restored value dumps");
    let (kind2, value2) = rdb::restore(&again, usize::MAX).expect("a dump restores");
    assert_eq!(kind, kind2);
    assert_eq!(value, value2, "restore(dump(v)) != v for {kind:?}");
});
