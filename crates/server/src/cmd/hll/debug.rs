//! `PFDEBUG GETREG|DECODE|ENCODING|TODENSE key` and `PFSELFTEST`, Redis's
//! debugging commands for HLLs (its test suite uses them).
//!
//! `PFDEBUG` reads the key as `PFADD` would (a missing key is an error);
//! `GETREG` and `TODENSE` turn a sparse value dense and write it (expiry
//! kept), as Redis does. `PFSELFTEST` runs Redis's self test on a
//! blocking thread: registers written and read back, then ten million
//! elements added to a dense and a sparse HLL whose estimates must agree
//! and stay within six standard errors.

use super::super::{rewrite_string, update_string, Args, Ctx, Flow};
use crate::hll::{self, dense, sparse, Encoding, DENSE_SIZE, HDR_SIZE, REGISTERS};
use crate::resp::reply;
use tiercache_engine::Update;

/// What a `PFDEBUG` subcommand answers.
enum Answer {
    Registers(Vec<u8>),
    Decoded(String),
    Encoding(Encoding),
    Converted(bool),
}

pub async fn pfdebug(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let sub = args.get(1).to_ascii_lowercase();
    let r = update_string(ctx.session, args.get(2), |old| {
        let Some(e) = old else {
            return (
                Update::Keep,
                Err("ERR The specified key does not exist".into()),
            );
        };
        let Some(encoding) = hll::encoding_of(&e.value) else {
            return (Update::Keep, Err(hll::NOT_HLL.to_string()));
        };
        // GETREG and TODENSE convert a sparse value and keep it dense.
        let to_dense = || {
            let mut v = e.value.to_vec();
            match hll::to_dense(&mut v) {
                Ok(_) => Ok(v),
                Err(hll::Corrupt) => Err(hll::CORRUPT.to_string()),
            }
        };
        match &sub[..] {
            b"getreg" => match to_dense() {
                Ok(v) => {
                    let regs = hll::registers(&v);
                    let update = if encoding == Encoding::Sparse {
                        rewrite_string(old, v)
                    } else {
                        Update::Keep
                    };
                    (update, Ok(Answer::Registers(regs)))
                }
                Err(msg) => (Update::Keep, Err(msg)),
            },
            b"decode" if encoding != Encoding::Sparse => (
                Update::Keep,
                Err("ERR HLL encoding is not sparse".to_string()),
            ),
            b"decode" => (
                Update::Keep,
                Ok(Answer::Decoded(sparse::decode(&e.value[HDR_SIZE..]))),
            ),
            b"encoding" => (Update::Keep, Ok(Answer::Encoding(encoding))),
            b"todense" if encoding == Encoding::Dense => {
                (Update::Keep, Ok(Answer::Converted(false)))
            }
            b"todense" => match to_dense() {
                Ok(v) => (rewrite_string(old, v), Ok(Answer::Converted(true))),
                Err(msg) => (Update::Keep, Err(msg)),
            },
            _ => (
                Update::Keep,
                Err(format!("ERR Unknown PFDEBUG subcommand '{}'", args.text(1))),
            ),
        }
    })
    .await;
    match r {
        Ok(Ok(Answer::Registers(regs))) => {
            reply::array(ctx.out, regs.len());
            for r in regs {
                reply::integer(ctx.out, r as i64);
            }
        }
        Ok(Ok(Answer::Decoded(s))) => reply::bulk(ctx.out, s.as_bytes()),
        Ok(Ok(Answer::Encoding(e))) => reply::simple(ctx.out, e.name()),
        Ok(Ok(Answer::Converted(c))) => reply::integer(ctx.out, c as i64),
        Ok(Err(msg)) => ctx.error(&msg),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

pub async fn pfselftest(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let max_bytes = super::sparse_max_bytes(ctx);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
        | 1;
    let run = move || selftest(seed, max_bytes, 1000, 10_000_000);
    let r = tokio::task::spawn_blocking(run)
        .await
        .unwrap_or_else(|_| Err("ERR PFSELFTEST failed".to_string()));
    match r {
        Ok(()) => reply::ok(ctx.out),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// xorshift64*: the self test's random numbers (Redis uses `rand()`).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// `pfselftestCommand` with `cycles` register rounds and `elements`
/// additions; the error Redis would answer, if any.
fn selftest(seed: u64, max_bytes: usize, cycles: usize, elements: u64) -> Result<(), String> {
    let mut rng = Rng(seed);
    let mut regs = vec![0u8; DENSE_SIZE - HDR_SIZE];
    let mut bytes = vec![0u8; REGISTERS];
    // Test 1: registers keep their values and leave their neighbours.
    for _ in 0..cycles {
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (rng.next() & hll::REGISTER_MAX as u64) as u8;
            dense::put(&mut regs, i, *b);
        }
        for (i, &b) in bytes.iter().enumerate() {
            let got = dense::get(&regs, i);
            if got != b {
                return Err(format!(
                    "TESTFAILED Register {i} should be {b} but is {got}"
                ));
            }
        }
    }
    // Test 2: a dense and a sparse HLL agree, within the error bound.
    let mut dense_hll = hll::new_sparse();
    hll::to_dense(&mut dense_hll).map_err(|_| "TESTFAILED dense conversion".to_string())?;
    let mut sparse_hll = hll::new_sparse();
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let mut checkpoint = 1u64;
    let seed = rng.next();
    let corrupt = |_| "TESTFAILED corrupt HLL".to_string();
    for j in 1..=elements {
        let ele = (j ^ seed).to_le_bytes();
        hll::add(&mut dense_hll, &ele, max_bytes).map_err(corrupt)?;
        hll::add(&mut sparse_hll, &ele, max_bytes).map_err(corrupt)?;
        if j != checkpoint {
            continue;
        }
        if j < (max_bytes / 2) as u64 && sparse_hll[4] != Encoding::Sparse as u8 {
            return Err("TESTFAILED sparse encoding not used".to_string());
        }
        let card = hll::count(&dense_hll).map_err(corrupt)?;
        if card != hll::count(&sparse_hll).map_err(corrupt)? {
            return Err("TESTFAILED dense/sparse disagree".to_string());
        }
        let abserr = checkpoint.abs_diff(card);
        let mut maxerr = (relerr * 6.0 * checkpoint as f64).ceil() as u64;
        if j == 10 {
            maxerr = 1;
        }
        if abserr > maxerr {
            return Err(format!(
                "TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_self_test_passes() {
        for seed in [1, 7, 12345] {
            assert_eq!(selftest(seed, 3000, 3, 100_000), Ok(()));
        }
        // With promotion at once, the sparse side is dense from the start.
        assert_eq!(
            selftest(3, 0, 1, 1000),
            Ok(()),
            "a zero sparse limit still agrees"
        );
    }
}
