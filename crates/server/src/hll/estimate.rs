//! Redis 7.0's `hllCount` estimator: Otmar Ertl's improved raw estimator
//! ("New cardinality estimation algorithms for HyperLogLog sketches",
//! arXiv:1702.01284) over the histogram of register values, operation
//! for operation in `f64` so that the result is Redis's to the unit.

use super::{Q, REGISTERS};

/// `HLL_ALPHA_INF`: 0.5 / ln 2.
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// `hllSigma`.
pub fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let z_prime = z;
        z += x * y;
        y += y;
        if z_prime == z {
            return z;
        }
    }
}

/// `hllTau`.
pub fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let z_prime = z;
        y *= 0.5;
        // `pow(1 - x, 2)`, which compilers turn into this exact product.
        let d = 1.0 - x;
        z -= d * d * y;
        if z_prime == z {
            return z / 3.0;
        }
    }
}

/// The cardinality estimated from `histogram` (how many registers hold
/// each value), rounded half away from zero as `llroundl`.
pub fn cardinality(histogram: &[i64; 64]) -> u64 {
    let m = REGISTERS as f64;
    let q = Q as usize;
    let mut z = m * tau((m - histogram[q + 1] as f64) / m);
    for j in (1..=q).rev() {
        z += histogram[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(histogram[0] as f64 / m);
    (ALPHA_INF * m * m / z).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_is_zero_and_edges_are_finite() {
        let mut h = [0i64; 64];
        h[0] = REGISTERS as i64;
        assert_eq!(cardinality(&h), 0);
        assert_eq!(sigma(0.0), 0.0);
        assert_eq!(tau(0.0), 0.0);
        assert_eq!(tau(1.0), 0.0);
        // Every register at its largest value.
        let mut h = [0i64; 64];
        h[Q as usize + 1] = REGISTERS as i64;
        assert!(cardinality(&h) > 0);
    }

    #[test]
    fn small_counts_are_linear_counting() {
        // n registers at 1, the rest at 0: about m ln(m / (m - n)).
        for n in [1i64, 2, 10, 100, 1000] {
            let mut h = [0i64; 64];
            h[0] = REGISTERS as i64 - n;
            h[1] = n;
            let m = REGISTERS as f64;
            let lc = m * (m / (m - n as f64)).ln();
            let got = cardinality(&h) as f64;
            assert!((got - lc).abs() <= 1.0 + lc * 0.01, "n={n}: {got} vs {lc}");
        }
    }

    #[test]
    fn series_converge_to_their_closed_forms() {
        // sigma(x) = x + sum x^(2^k) 2^(k-1); tau(x) = (1 - x - sum ...)/3.
        for x in [0.1f64, 0.5, 0.9, 0.999] {
            let mut s = x;
            let (mut p, mut w) = (x, 1.0);
            for _ in 0..60 {
                p *= p;
                s += p * w;
                w *= 2.0;
            }
            assert!((sigma(x) - s).abs() <= s * 1e-12, "sigma({x})");
            assert!(tau(x) > 0.0 && tau(x) < (1.0 - x) / 3.0 + 1e-15, "tau({x})");
        }
    }
}
