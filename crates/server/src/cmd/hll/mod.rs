//! The HyperLogLog commands: `PFADD` ([`add`]), `PFCOUNT` ([`count`]),
//! `PFMERGE` ([`merge`]), `PFDEBUG` and `PFSELFTEST` ([`debug`]).
//!
//! An HLL is a string holding Redis's exact bytes ([`crate::hll`]), so
//! `GET`, `SET`, `DUMP` and the rest see it as Redis's. As in Redis's
//! `hyperloglog.c`: a key of another kind answers the usual `WRONGTYPE`,
//! a string that is not an HLL `WRONGTYPE Key is not a valid HyperLogLog
//! string value.`, an HLL whose sparse runs are broken `INVALIDOBJ`.
//! A write of one key is one `Session::update`; the commands over
//! several keys are one `Session::modify_many`, so they see one state.

pub mod add;
pub mod count;
pub mod debug;
pub mod merge;

use super::{Ctx, WRONGTYPE};
use crate::hll::{self, Encoding};
use tiercache_engine::{Entry, ValueKind};

/// `isHLLObjectOrReply`: the encoding of an existing key's HLL, or the
/// error Redis answers for it.
pub(crate) fn check(entry: &Entry) -> Result<Encoding, &'static str> {
    if entry.kind != ValueKind::String {
        return Err(WRONGTYPE);
    }
    hll::encoding_of(&entry.value).ok_or(hll::NOT_HLL)
}

/// `hll-sparse-max-bytes` (`CONFIG SET`), Redis's 3000 by default.
pub(crate) fn sparse_max_bytes(ctx: &Ctx<'_, '_>) -> usize {
    let n = ctx
        .server
        .tunable("hll-sparse-max-bytes", hll::SPARSE_MAX_BYTES);
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Records that `key`, holding `value` (an HLL written in place), is a
/// `raw` string for `OBJECT ENCODING`, as in Redis (short values would
/// otherwise read as `embstr`).
pub(crate) fn note_raw(ctx: &Ctx<'_, '_>, key: &[u8], value: Option<u64>) {
    if let Some(fp) = value {
        ctx.server.encodings.note(key, fp, "raw");
    }
}
