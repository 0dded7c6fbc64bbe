//! `mc-load`: a memcached text-protocol load generator, the memcached
//! counterpart of `redis-benchmark` for issue 4's comparison.
//!
//! memaslap (Debian's `memcaslap`) reports latency only as a log2
//! histogram and cannot pipeline, so this tool exists: `C` connections on
//! one thread, each sending `P` requests per round trip (like
//! `redis-benchmark -P`), for a fixed time; every request's latency (its
//! batch's round trip, as redis-benchmark counts it) goes into an
//! HdrHistogram. Output: one CSV line `test,rps,p50_ms,p99_ms`.
//!
//! `get` first stores every key once (so gets hit); `--no-preload` skips
//! that, for a run against a server already holding the keys (a profile
//! that should count only the gets).
//!
//! Values are `x` repeated, as redis-benchmark's: every SET of a key
//! rewrites the value it holds. `--vary-values` makes each SET's value
//! random letters instead, so that nearly every SET changes its key (a
//! server that skips writing unchanged values to its store gets no help).
//!
//! ```text
//! mc-load --addr 127.0.0.1:11211 --test set --connections 50 --pipeline 16 --seconds 5
//! ```

use hdrhistogram::Histogram;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Args {
    addr: String,
    test: String,
    connections: usize,
    pipeline: usize,
    seconds: f64,
    keys: u64,
    value_size: usize,
    preload: bool,
    vary_values: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        addr: "127.0.0.1:11211".into(),
        test: "get".into(),
        connections: 50,
        pipeline: 1,
        seconds: 5.0,
        keys: 100_000,
        value_size: 3,
        preload: true,
        vary_values: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--addr" => a.addr = value()?,
            "--test" => a.test = value()?,
            "--connections" => a.connections = value()?.parse().map_err(|e| format!("{e}"))?,
            "--pipeline" => a.pipeline = value()?.parse().map_err(|e| format!("{e}"))?,
            "--seconds" => a.seconds = value()?.parse().map_err(|e| format!("{e}"))?,
            "--keys" => a.keys = value()?.parse().map_err(|e| format!("{e}"))?,
            "--value-size" => a.value_size = value()?.parse().map_err(|e| format!("{e}"))?,
            "--no-preload" => a.preload = false,
            "--vary-values" => a.vary_values = true,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if !matches!(a.test.as_str(), "get" | "set") {
        return Err(format!("--test must be get or set, not {}", a.test));
    }
    if a.connections == 0 || a.pipeline == 0 || a.keys == 0 {
        return Err("--connections, --pipeline and --keys must be positive".into());
    }
    Ok(a)
}

/// A tiny xorshift so every connection picks keys without a shared RNG.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// How many complete replies `buf` holds (`STORED`, `END`, or a `VALUE`
/// block followed by `END`), and the bytes they span.
fn complete_replies(buf: &[u8], test: &str) -> (usize, usize) {
    let mut n = 0;
    let mut pos = 0;
    loop {
        let Some(eol) = buf[pos..].windows(2).position(|w| w == b"\r\n") else {
            return (n, pos);
        };
        let line = &buf[pos..pos + eol];
        if test == "get" && line.starts_with(b"VALUE ") {
            let len: usize = std::str::from_utf8(line.rsplit(|&b| b == b' ').next().unwrap())
                .ok()
                .and_then(|s| s.parse().ok())
                .expect("VALUE line with a length");
            // data, \r\n, then END\r\n
            let end = pos + eol + 2 + len + 2 + 5;
            if buf.len() < end {
                return (n, pos);
            }
            assert_eq!(&buf[end - 5..end], b"END\r\n", "reply out of sync");
            pos = end;
        } else {
            let ok = if test == "get" {
                &b"END"[..]
            } else {
                &b"STORED"[..]
            };
            assert_eq!(
                line,
                ok,
                "unexpected reply {:?}",
                String::from_utf8_lossy(line)
            );
            pos += eol + 2;
        }
        n += 1;
    }
}

/// Overwrites `value` with random lowercase letters (`--vary-values`): a
/// SET then changes what its key holds, so a durable server must store it.
fn fill_random_letters(value: &mut [u8], rng: &mut Rng) {
    let mut r = rng.next();
    for b in value.iter_mut() {
        if r < 26 {
            r = rng.next();
        }
        *b = b'a' + (r % 26) as u8;
        r /= 26;
    }
}

async fn connection(args: &Args, seed: u64, deadline: Instant) -> std::io::Result<Histogram<u64>> {
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram bounds");
    let mut stream = TcpStream::connect(&args.addr).await?;
    stream.set_nodelay(true)?;
    let mut value = vec![b'x'; args.value_size];
    let mut rng = Rng(seed | 1);
    let mut out = Vec::new();
    let mut buf = Vec::with_capacity(64 << 10);
    let mut chunk = vec![0u8; 64 << 10];
    while Instant::now() < deadline {
        out.clear();
        for _ in 0..args.pipeline {
            let key = rng.next() % args.keys;
            if args.test == "set" {
                if args.vary_values {
                    fill_random_letters(&mut value, &mut rng);
                }
                out.extend_from_slice(
                    format!("set key:{key:012} 0 0 {}\r\n", value.len()).as_bytes(),
                );
                out.extend_from_slice(&value);
                out.extend_from_slice(b"\r\n");
            } else {
                out.extend_from_slice(format!("get key:{key:012}\r\n").as_bytes());
            }
        }
        let started = Instant::now();
        stream.write_all(&out).await?;
        let mut got = 0;
        while got < args.pipeline {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Err(std::io::Error::other("server closed the connection"));
            }
            buf.extend_from_slice(&chunk[..n]);
            let (replies, used) = complete_replies(&buf, &args.test);
            got += replies;
            buf.drain(..used);
        }
        let micros = started.elapsed().as_micros().max(1) as u64;
        hist.record_n(micros, args.pipeline as u64)
            .expect("latency in bounds");
    }
    Ok(hist)
}

/// Stores every key once so `get` hits (as redis-benchmark's GET after SET).
async fn preload(args: &Args) -> std::io::Result<()> {
    let mut stream = TcpStream::connect(&args.addr).await?;
    let value = vec![b'x'; args.value_size];
    let mut out = Vec::new();
    for key in 0..args.keys {
        out.extend_from_slice(
            format!("set key:{key:012} 0 0 {} noreply\r\n", value.len()).as_bytes(),
        );
        out.extend_from_slice(&value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"version\r\n");
    stream.write_all(&out).await?;
    let mut reply = Vec::new();
    let mut chunk = [0u8; 256];
    while !reply.ends_with(b"\r\n") {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::Error::other("closed during preload"));
        }
        reply.extend_from_slice(&chunk[..n]);
    }
    if !reply.starts_with(b"VERSION") {
        return Err(std::io::Error::other(format!(
            "preload failed: {}",
            String::from_utf8_lossy(&reply)
        )));
    }
    Ok(())
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mc-load: {e}");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let result = rt.block_on(async {
        if args.test == "get" && args.preload {
            preload(&args).await?;
        }
        let started = Instant::now();
        let deadline = started + Duration::from_secs_f64(args.seconds);
        let tasks: Vec<_> = (0..args.connections)
            .map(|i| {
                connection(
                    &args,
                    0x9e37_79b9_7f4a_7c15 ^ ((i as u64 + 1) * 0x1000_0001),
                    deadline,
                )
            })
            .collect();
        let hists = futures_join(tasks).await;
        let elapsed = started.elapsed().as_secs_f64();
        let mut total = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
        for h in hists {
            total.add(h?).expect("same bounds");
        }
        Ok::<_, std::io::Error>((total, elapsed))
    });
    match result {
        Ok((h, elapsed)) => println!(
            "{},{:.0},{:.3},{:.3}",
            args.test.to_uppercase(),
            h.len() as f64 / elapsed,
            h.value_at_quantile(0.50) as f64 / 1000.0,
            h.value_at_quantile(0.99) as f64 / 1000.0
        ),
        Err(e) => {
            eprintln!("mc-load: {e}");
            std::process::exit(1);
        }
    }
}

/// Runs every future concurrently on this thread and collects the results
/// in order.
async fn futures_join<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut pinned: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = pinned.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in pinned.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter()
        .map(|o| o.expect("polled to completion"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varied_values_are_letters_and_differ_from_set_to_set() {
        let mut rng = Rng(7);
        let mut value = vec![b'x'; 3];
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1_000 {
            fill_random_letters(&mut value, &mut rng);
            assert!(value.iter().all(u8::is_ascii_lowercase), "{value:?}");
            seen.insert(value.clone());
        }
        // 17,576 three-letter values: 1,000 draws repeat a few at most.
        assert!(seen.len() > 950, "{} distinct values of 1,000", seen.len());
    }

    #[test]
    fn a_long_varied_value_is_letters_throughout() {
        let mut rng = Rng(11);
        let mut value = vec![b'x'; 4_096];
        fill_random_letters(&mut value, &mut rng);
        assert!(value.iter().all(u8::is_ascii_lowercase));
        let letters: std::collections::HashSet<u8> = value.iter().copied().collect();
        assert_eq!(letters.len(), 26, "every letter turns up in 4 KiB");
    }
}
