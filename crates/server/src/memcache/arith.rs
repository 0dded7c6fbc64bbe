//! `incr`/`decr`, and the arithmetic `ma` shares: the value is a 64-bit
//! unsigned decimal; `incr` wraps at 2^64, `decr` stops at 0. As memcached
//! does when it rewrites an item in place, a result shorter than the old
//! value is padded with spaces to the old length (`decr` of `10` by 1 reads
//! back as `"9 "`); flags and expiry are kept, the cas unique changes.

use super::flags::strtoull;
use super::parse::valid_key;
use super::{Ctx, Req};
use bytes::Bytes;
use tiercache_engine::{Change, Entry, ValueKind};

/// What an arithmetic step found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delta {
    /// The new value.
    Done(u64),
    /// No such key.
    NotFound,
    /// The value is not a number.
    NonNumeric,
    /// A cas unique was given and differs.
    CasMismatch,
}

/// The [`Change`] an arithmetic step makes to `old`. `cas` 0 means no check.
pub fn apply(old: Option<&Entry>, incr: bool, delta: u64, cas: u64) -> (Change, Delta) {
    let Some(e) = old else {
        return (Change::Keep, Delta::NotFound);
    };
    // A Redis hash is not a number: memcached's own answer for an item
    // arithmetic cannot apply to is the non-numeric error.
    if e.value.is_empty() || e.kind != ValueKind::String {
        return (Change::Keep, Delta::NonNumeric);
    }
    if cas != 0 && e.cas != cas {
        return (Change::Keep, Delta::CasMismatch);
    }
    let Some(v) = strtoull(&e.value) else {
        return (Change::Keep, Delta::NonNumeric);
    };
    let new = if incr {
        v.wrapping_add(delta)
    } else {
        v.saturating_sub(delta)
    };
    let mut text = new.to_string().into_bytes();
    if text.len() < e.value.len() {
        text.resize(e.value.len(), b' ');
    }
    let entry = Entry::with_flags(text, e.expires_at, e.flags);
    (Change::Put(entry), Delta::Done(new))
}

/// `incr|decr <key> <delta> [noreply]`: the new value, `NOT_FOUND`, or
/// memcached's `CLIENT_ERROR`s.
pub async fn incr_decr(req: &Req<'_>, ctx: &mut Ctx<'_, '_>, incr: bool) {
    let nt = req.ntokens();
    if nt != 4 && nt != 5 {
        ctx.line(false, b"ERROR");
        return;
    }
    let noreply = req.noreply();
    if !valid_key(req.tok(1)) {
        ctx.line(noreply, b"CLIENT_ERROR bad command line format");
        return;
    }
    let Some(delta) = strtoull(req.tok(2)) else {
        ctx.line(noreply, b"CLIENT_ERROR invalid numeric delta argument");
        return;
    };
    let key = Bytes::copy_from_slice(req.tok(1));
    let m = ctx
        .session
        .modify(key, |old| apply(old, incr, delta, 0))
        .await;
    let stats = ctx.stats();
    match m.map(|m| m.result) {
        Ok(Delta::Done(n)) => {
            if incr {
                stats.incr_hits.incr();
            } else {
                stats.decr_hits.incr();
            }
            if !noreply {
                super::push_u64(ctx.out, n);
                ctx.out.extend_from_slice(b"\r\n");
            }
        }
        Ok(Delta::NotFound) => {
            if incr {
                stats.incr_misses.incr();
            } else {
                stats.decr_misses.incr();
            }
            ctx.line(noreply, b"NOT_FOUND");
        }
        Ok(_) => ctx.line(
            noreply,
            b"CLIENT_ERROR cannot increment or decrement non-numeric value",
        ),
        Err(e) => ctx.engine_error(noreply, &e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(value: &str, incr: bool, delta: u64) -> (Option<String>, Delta) {
        let e = Entry::with_flags(value.to_string(), Some(5), 9);
        match apply(Some(&e), incr, delta, 0) {
            (Change::Put(n), d) => {
                assert_eq!((n.flags, n.expires_at), (9, Some(5)));
                (Some(String::from_utf8(n.value.to_vec()).unwrap()), d)
            }
            (_, d) => (None, d),
        }
    }

    #[test]
    fn wraps_floors_and_pads_like_memcached() {
        assert_eq!(step("1", false, 5), (Some("0".into()), Delta::Done(0)));
        assert_eq!(
            step("18446744073709551615", true, 2),
            (Some("1                   ".into()), Delta::Done(1))
        );
        assert_eq!(step("10", false, 1), (Some("9 ".into()), Delta::Done(9)));
        assert_eq!(step("99", true, 1), (Some("100".into()), Delta::Done(100)));
        assert_eq!(
            step(" 12 3", true, 1),
            (Some("13   ".into()), Delta::Done(13))
        );
        assert_eq!(step("+5", true, 1).1, Delta::Done(6));
        for bad in ["", "abc", "-5", "12abc", "18446744073709551616"] {
            assert_eq!(step(bad, true, 1), (None, Delta::NonNumeric), "{bad:?}");
        }
        assert_eq!(apply(None, true, 1, 0).1, Delta::NotFound);
        let mut e = Entry::new("1");
        e.cas = 5;
        assert_eq!(apply(Some(&e), true, 1, 6).1, Delta::CasMismatch);
        assert_eq!(apply(Some(&e), true, 1, 5).1, Delta::Done(2));
    }
}
