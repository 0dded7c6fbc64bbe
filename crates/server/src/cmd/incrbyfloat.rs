//! `INCRBYFLOAT key increment`: adds a decimal number, keeps the key's
//! expiry, answers (and stores) the sum as Redis prints it.
//!
//! Redis adds in C `long double` (x87, 64-bit mantissa) and prints with
//! `%.17Lf`, trailing zeros trimmed, so `5009.5 + 0.2` is
//! `5009.70000000000000018`. Decimal operands (mantissa below 2^127,
//! exponent within ±60: everything clients send in practice) go through
//! [`crate::longdouble`], which reproduces those digits exactly. Others
//! (`inf`, exponents like `1e400`, hexadecimal floats) use `f64`; their
//! last digits, and whether `1e400` is finite, can differ from Redis's.

use super::{Args, Ctx, Flow};
use crate::longdouble::{Dec, LongDouble};
use crate::notify::class;
use crate::resp::reply;
use tiercache_engine::{Entry, Update};

const NOT_A_FLOAT: &str = "ERR value is not a valid float";
const NAN_OR_INF: &str = "ERR increment would produce NaN or Infinity";
/// Redis's `MAX_LONG_DOUBLE_CHARS`.
const MAX_CHARS: usize = 5 * 1024;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let incr = args.get(2);
    let r = super::update_string(ctx.session, args.get(1), |old| {
        let current = old.map_or(&b"0"[..], |e| &e.value[..]);
        match add(current, incr) {
            Ok(sum) => {
                let update = match old {
                    Some(e) => {
                        Update::SetEntry(Entry::with_flags(sum.clone(), e.expires_at, e.flags))
                    }
                    None => Update::Set(sum.clone().into()),
                };
                (update, Ok(sum))
            }
            Err(msg) => (Update::Keep, Err(msg)),
        }
    })
    .await;
    match r {
        Ok(Ok(sum)) => {
            ctx.notify(class::STRING, "incrbyfloat", args.get(1));
            // The sum, as `SET`: float formatting may differ on a replica.
            ctx.propagate_as(&[b"SET", args.get(1), &sum[..], b"KEEPTTL"]);
            // Redis stores the sum as a string object, never `int`.
            if let Some(fp) = crate::state::hint_fingerprint(&sum) {
                ctx.server.encodings.note(args.get(1), fp, "embstr");
            }
            reply::bulk(ctx.out, &sum);
        }
        Ok(Err(msg)) => reply::error(ctx.out, msg),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// `HINCRBYFLOAT`'s check of its increment, before the key is looked at
/// (Redis's order): a number, and a finite one.
pub(crate) fn check_hash_increment(incr: &[u8]) -> Result<(), &'static str> {
    match parse(incr).ok_or(NOT_A_FLOAT)? {
        Num::Float(v) if !v.is_finite() => Err("ERR value is NaN or Infinity"),
        _ => Ok(()),
    }
}

/// `HINCRBYFLOAT`'s sum: `value` (absent = 0) plus `incr` (already
/// checked), as Redis stores it.
pub(crate) fn hash_add(value: Option<&[u8]>, incr: &[u8]) -> Result<Vec<u8>, &'static str> {
    let value = value.unwrap_or(b"0");
    if parse(value).is_none() {
        return Err("ERR hash value is not a float");
    }
    add(value, incr)
}

/// A number as Redis's `string2ld` accepts it.
enum Num {
    Dec(Dec),
    /// Valid but not representable as a small decimal (huge exponent,
    /// infinity).
    Float(f64),
}

/// `value + incr` as Redis would store it, or the error Redis gives.
fn add(value: &[u8], incr: &[u8]) -> Result<Vec<u8>, &'static str> {
    let a = parse(value).ok_or(NOT_A_FLOAT)?;
    let b = parse(incr).ok_or(NOT_A_FLOAT)?;
    if let (Num::Dec(x), Num::Dec(y)) = (&a, &b) {
        let sum = LongDouble::from_dec(*x).add(LongDouble::from_dec(*y));
        return Ok(trim(sum.to_fixed17()).into_bytes());
    }
    let f = |n: &Num| match n {
        Num::Dec(d) => to_f64(*d),
        Num::Float(v) => *v,
    };
    let sum = f(&a) + f(&b);
    if !sum.is_finite() {
        return Err(NAN_OR_INF);
    }
    Ok(trim(format!("{sum:.17}")).into_bytes())
}

fn to_f64(d: Dec) -> f64 {
    format!("{}e{}", d.mant, d.exp).parse().unwrap_or(f64::NAN)
}

fn parse(s: &[u8]) -> Option<Num> {
    if s.is_empty() || s.len() >= MAX_CHARS || s[0].is_ascii_whitespace() {
        return None;
    }
    let text = std::str::from_utf8(s).ok()?;
    if let Some(d) = parse_dec(s) {
        return Some(Num::Dec(d));
    }
    // strtold also takes `inf`, `infinity` and long exponents; NaN is refused.
    let v: f64 = text.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    let plain = text
        .bytes()
        .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
    let word = text.trim_start_matches(['+', '-']).to_ascii_lowercase();
    (plain || word == "inf" || word == "infinity").then_some(Num::Float(v))
}

/// `[+-]digits[.digits][(e|E)[+-]digits]` with at least one digit, when
/// it fits an `i128` mantissa and a small exponent.
fn parse_dec(s: &[u8]) -> Option<Dec> {
    let mut i = 0;
    let neg = match s.first()? {
        b'-' => {
            i += 1;
            true
        }
        b'+' => {
            i += 1;
            false
        }
        _ => false,
    };
    let mut mant: i128 = 0;
    let mut exp: i32 = 0;
    let mut digits = 0;
    let mut dot = false;
    while i < s.len() {
        match s[i] {
            b'0'..=b'9' => {
                digits += 1;
                mant = mant.checked_mul(10)?.checked_add((s[i] - b'0') as i128)?;
                if dot {
                    exp -= 1;
                }
            }
            b'.' if !dot => dot = true,
            _ => break,
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if i < s.len() {
        if s[i] != b'e' && s[i] != b'E' {
            return None;
        }
        i += 1;
        let eneg = match s.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let start = i;
        let mut e: i32 = 0;
        while i < s.len() && s[i].is_ascii_digit() {
            e = e.checked_mul(10)?.checked_add((s[i] - b'0') as i32)?;
            i += 1;
        }
        if i == start || i != s.len() {
            return None;
        }
        exp = exp.checked_add(if eneg { -e } else { e })?;
    }
    if exp.abs() > 60 {
        return None;
    }
    Some(normalize(Dec {
        mant: if neg { -mant } else { mant },
        exp,
    }))
}

/// Drops trailing zeros of the mantissa into the exponent.
fn normalize(mut d: Dec) -> Dec {
    if d.mant == 0 {
        return Dec { mant: 0, exp: 0 };
    }
    while d.mant % 10 == 0 {
        d.mant /= 10;
        d.exp += 1;
    }
    d
}

/// Trims trailing zeros after a decimal point (and the point), `-0` → `0`.
fn trim(mut s: String) -> String {
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    if s == "-0" {
        s = "0".to_string();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(a: &str, b: &str) -> String {
        match add(a.as_bytes(), b.as_bytes()) {
            Ok(v) => String::from_utf8(v).unwrap(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn matches_redis_long_double_output() {
        // Each expected value is what redis-server 7 answers.
        assert_eq!(sum("10.5", "0.1"), "10.6");
        assert_eq!(sum("0", "1"), "1");
        assert_eq!(sum("1", "0.25"), "1.25");
        assert_eq!(sum("1", "-1.1"), "-0.1");
        assert_eq!(sum("5.0e3", "2.0e2"), "5200");
        assert_eq!(sum("1.5", "-1.5"), "0");
        assert_eq!(sum("3.0", "0.00000000000000000001"), "3");
        assert_eq!(sum("17179869184", "1"), "17179869185");
        assert_eq!(sum("5009.5", "0.2"), "5009.70000000000000018");
        assert_eq!(sum("1.1", "2.2"), "3.3");
        assert_eq!(
            sum("3.3", "1e50"),
            "100000000000000000003583830118858923890798487404544"
        );
        assert_eq!(
            sum(
                "100000000000000000003583830118858923890798487404544",
                "-1e50"
            ),
            "0"
        );
        assert_eq!(sum("0.3", "3.3e-30"), "0.3");
        assert_eq!(
            sum("99999999999999999999999", "0.5"),
            "100000000000000000000000"
        );
        assert_eq!(
            sum("123456789012.5", "0.1"),
            "123456789012.60000000149011612"
        );
        assert_eq!(sum("+1", ".5"), "1.5");
        assert_eq!(sum("1", "5."), "6");
    }

    #[test]
    fn errors_like_redis() {
        assert_eq!(sum("abc", "1"), NOT_A_FLOAT);
        assert_eq!(sum("1", " 1"), NOT_A_FLOAT);
        assert_eq!(sum("1", "1 "), NOT_A_FLOAT);
        assert_eq!(sum("1", ""), NOT_A_FLOAT);
        assert_eq!(sum("1", "nan"), NOT_A_FLOAT);
        assert_eq!(sum("1", "inf"), NAN_OR_INF);
        assert_eq!(sum("1", "-infinity"), NAN_OR_INF);
        assert_eq!(sum("1e308", "1e308"), NAN_OR_INF);
    }
}
