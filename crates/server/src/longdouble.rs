//! Just enough of the x87 80-bit `long double` (64-bit mantissa, round to
//! nearest even) to answer `INCRBYFLOAT` exactly as Redis does: Redis parses
//! both numbers with `strtold`, adds them in `long double` and prints the
//! sum with `%.17Lf`. Here the decimal inputs are rounded to the nearest
//! 64-bit-mantissa binary value, added with one rounding, and printed with
//! an exact decimal expansion, using a small unsigned big integer.
//!
//! Only finite decimals with a mantissa below 2^127 and an exponent within
//! ±60 are handled (no subnormals or overflow can occur there); callers
//! fall back to `f64` beyond.

use std::cmp::Ordering;

/// A finite decimal `mant × 10^exp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dec {
    /// Signed mantissa.
    pub mant: i128,
    /// Power of ten.
    pub exp: i32,
}

/// `(-1)^neg × mant × 2^exp`, `mant` normalised (bit 63 set) or zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LongDouble {
    neg: bool,
    mant: u64,
    exp: i32,
}

/// Little-endian base-2^32 unsigned integer.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Big(Vec<u32>);

impl Big {
    fn from_u128(mut v: u128) -> Big {
        let mut d = Vec::new();
        while v > 0 {
            d.push(v as u32);
            v >>= 32;
        }
        Big(d)
    }

    fn trim(mut self) -> Big {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
        self
    }

    fn is_zero(&self) -> bool {
        self.0.iter().all(|&d| d == 0)
    }

    fn bits(&self) -> usize {
        match self.0.iter().rposition(|&d| d != 0) {
            None => 0,
            Some(i) => i * 32 + 32 - self.0[i].leading_zeros() as usize,
        }
    }

    fn bit(&self, i: usize) -> bool {
        self.0.get(i / 32).is_some_and(|d| d >> (i % 32) & 1 == 1)
    }

    fn mul_small(&mut self, m: u32) {
        let mut carry = 0u64;
        for d in &mut self.0 {
            let v = *d as u64 * m as u64 + carry;
            *d = v as u32;
            carry = v >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
    }

    fn mul_pow10(&mut self, mut k: u32) {
        while k >= 9 {
            self.mul_small(1_000_000_000);
            k -= 9;
        }
        self.mul_small(10u32.pow(k));
    }

    /// Divides in place; returns the remainder.
    fn div_small(&mut self, d: u32) -> u32 {
        let mut rem = 0u64;
        for x in self.0.iter_mut().rev() {
            let v = (rem << 32) | *x as u64;
            *x = (v / d as u64) as u32;
            rem = v % d as u64;
        }
        rem as u32
    }

    fn shl(&self, n: usize) -> Big {
        let (words, bits) = (n / 32, n % 32);
        let mut d = vec![0u32; words];
        let mut carry = 0u32;
        for &x in &self.0 {
            d.push(if bits == 0 { x } else { (x << bits) | carry });
            carry = if bits == 0 { 0 } else { x >> (32 - bits) };
        }
        if carry > 0 {
            d.push(carry);
        }
        Big(d).trim()
    }

    /// `self >> n`, and whether any bit shifted out was set.
    fn shr(&self, n: usize) -> (Big, bool) {
        let sticky = (0..n.min(self.bits())).any(|i| self.bit(i));
        let (words, bits) = (n / 32, n % 32);
        if words >= self.0.len() {
            return (Big(Vec::new()), sticky);
        }
        let src = &self.0[words..];
        let d = (0..src.len())
            .map(|i| {
                let lo = src[i] >> bits;
                let hi = if bits == 0 {
                    0
                } else {
                    src.get(i + 1).map_or(0, |&h| h << (32 - bits))
                };
                lo | hi
            })
            .collect();
        (Big(d).trim(), sticky)
    }

    /// The low `n` bits.
    fn low(&self, n: usize) -> Big {
        let mut d: Vec<u32> = self.0.iter().take(n.div_ceil(32)).copied().collect();
        if n % 32 != 0 {
            if let Some(last) = d.get_mut(n / 32) {
                *last &= (1u32 << (n % 32)) - 1;
            }
        }
        Big(d).trim()
    }

    fn cmp(&self, o: &Big) -> Ordering {
        let (a, b) = (self.clone().trim(), o.clone().trim());
        a.0.len()
            .cmp(&b.0.len())
            .then_with(|| a.0.iter().rev().cmp(b.0.iter().rev()))
    }

    fn add(&self, o: &Big) -> Big {
        let n = self.0.len().max(o.0.len());
        let mut d = Vec::with_capacity(n + 1);
        let mut carry = 0u64;
        for i in 0..n {
            let v = *self.0.get(i).unwrap_or(&0) as u64 + *o.0.get(i).unwrap_or(&0) as u64 + carry;
            d.push(v as u32);
            carry = v >> 32;
        }
        d.push(carry as u32);
        Big(d).trim()
    }

    /// `self - o`, for `self >= o`.
    fn sub(&self, o: &Big) -> Big {
        let mut d = Vec::with_capacity(self.0.len());
        let mut borrow = 0i64;
        for i in 0..self.0.len() {
            let v = self.0[i] as i64 - *o.0.get(i).unwrap_or(&0) as i64 - borrow;
            borrow = (v < 0) as i64;
            d.push((v + (borrow << 32)) as u32);
        }
        Big(d).trim()
    }

    fn to_u64(&self) -> u64 {
        self.0
            .iter()
            .take(2)
            .rev()
            .fold(0u64, |acc, &d| (acc << 32) | d as u64)
    }

    fn to_decimal(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        let mut n = self.clone();
        let mut chunks = Vec::new();
        while !n.is_zero() {
            chunks.push(n.div_small(1_000_000_000));
            n = n.trim();
        }
        let mut s = chunks.pop().unwrap_or(0).to_string();
        for c in chunks.iter().rev() {
            s.push_str(&format!("{c:09}"));
        }
        s
    }
}

/// Rounds `n × 2^exp` (plus a sticky "something below" bit) to a 64-bit
/// mantissa, to nearest even.
fn round(neg: bool, n: &Big, exp: i32, sticky: bool) -> LongDouble {
    let len = n.bits();
    if len == 0 {
        return LongDouble {
            neg,
            mant: 0,
            exp: 0,
        };
    }
    if len <= 64 {
        let shift = 64 - len;
        return LongDouble {
            neg,
            mant: n.to_u64() << shift,
            exp: exp - shift as i32,
        };
    }
    let shift = len - 64;
    let (keep, _) = n.shr(shift);
    let half = n.bit(shift - 1);
    let below = sticky || (shift >= 2 && !n.low(shift - 1).is_zero());
    let mut mant = keep.to_u64();
    let mut exp = exp + shift as i32;
    if half && (below || mant & 1 == 1) {
        mant = mant.wrapping_add(1);
        if mant == 0 {
            mant = 1 << 63;
            exp += 1;
        }
    }
    LongDouble { neg, mant, exp }
}

impl LongDouble {
    /// The nearest `long double` to a decimal (what `strtold` returns).
    pub fn from_dec(d: Dec) -> LongDouble {
        let neg = d.mant < 0;
        let m = Big::from_u128(d.mant.unsigned_abs());
        if d.exp >= 0 {
            let mut n = m;
            n.mul_pow10(d.exp as u32);
            return round(neg, &n, 0, false);
        }
        // m / 10^k, computed as (m << s) / 10^k with at least 66 quotient bits.
        let k = (-d.exp) as u32;
        let mut p = Big::from_u128(1);
        p.mul_pow10(k);
        let s = (68 + p.bits()).saturating_sub(m.bits());
        let mut q = m.shl(s);
        let mut sticky = false;
        for _ in 0..k {
            sticky |= q.div_small(10) != 0;
        }
        round(neg, &q.trim(), -(s as i32), sticky)
    }

    /// `self + o` with one rounding, as the FPU does.
    pub fn add(self, o: LongDouble) -> LongDouble {
        if self.mant == 0 {
            return o;
        }
        if o.mant == 0 {
            return self;
        }
        let emin = self.exp.min(o.exp);
        let a = Big::from_u128(self.mant as u128).shl((self.exp - emin) as usize);
        let b = Big::from_u128(o.mant as u128).shl((o.exp - emin) as usize);
        if self.neg == o.neg {
            return round(self.neg, &a.add(&b), emin, false);
        }
        match a.cmp(&b) {
            Ordering::Equal => LongDouble {
                neg: false,
                mant: 0,
                exp: 0,
            },
            Ordering::Greater => round(self.neg, &a.sub(&b), emin, false),
            Ordering::Less => round(o.neg, &b.sub(&a), emin, false),
        }
    }

    /// `printf("%.17Lf")`: the exact value rounded to 17 decimals (ties to
    /// even).
    pub fn to_fixed17(self) -> String {
        let m = Big::from_u128(self.mant as u128);
        let (int, frac) = if self.exp >= 0 {
            (m.shl(self.exp as usize), 0u64)
        } else {
            let sh = (-self.exp) as usize;
            let (mut int, _) = m.shr(sh);
            let mut d = m.low(sh);
            d.mul_pow10(17);
            let (q, _) = d.shr(sh);
            let rem = d.low(sh);
            let half = Big::from_u128(1).shl(sh - 1);
            let mut q = q.to_u64();
            match rem.cmp(&half) {
                Ordering::Greater => q += 1,
                Ordering::Equal if q & 1 == 1 => q += 1,
                _ => {}
            }
            if q == 100_000_000_000_000_000 {
                q = 0;
                int = int.add(&Big::from_u128(1));
            }
            (int, q)
        };
        format!(
            "{}{}.{frac:017}",
            if self.neg { "-" } else { "" },
            int.to_decimal()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ld(mant: i128, exp: i32) -> LongDouble {
        LongDouble::from_dec(Dec { mant, exp })
    }

    #[test]
    fn exact_values_print_exactly() {
        assert_eq!(ld(105, -1).to_fixed17(), "10.50000000000000000");
        assert_eq!(ld(5, 3).to_fixed17(), "5000.00000000000000000");
        assert_eq!(ld(-25, -2).to_fixed17(), "-0.25000000000000000");
        assert_eq!(ld(0, 0).to_fixed17(), "0.00000000000000000");
    }

    #[test]
    fn sums_as_the_x87_fpu_gives_them() {
        // Values printed by redis-server 7 (x86-64) for INCRBYFLOAT.
        assert_eq!(
            ld(50095, -1).add(ld(2, -1)).to_fixed17(),
            "5009.70000000000000018"
        );
        assert_eq!(
            ld(105, -1).add(ld(1, -1)).to_fixed17(),
            "10.60000000000000000"
        );
        assert_eq!(
            ld(1, 0).add(ld(-11, -1)).to_fixed17(),
            "-0.10000000000000000"
        );
    }
}
