//! The HTTP load generator of the `pages` and `microcache` scenarios: what
//! `ab -c C -t T` does in the seeds, with keep-alive.
//!
//! `C` connections, each sending one `GET` at a time for a fixed duration,
//! the path chosen per request ([`Choose`]: one path, or Zipf-popular over
//! many). Every response is checked in full: status 200, a body byte for
//! byte equal to the one the scenario expects for that path. Latency of each
//! successful request goes into an `hdrhistogram` (µs); anything else (an
//! error status, a wrong or short body, a broken connection) is a failed
//! request, counted like `ab`'s "Failed requests", and the scenario turns
//! any failure into an error ([`LoadResult::check`]).
//!
//! The client is a minimal HTTP/1.1 client over tokio's `TcpStream`
//! (`httparse` for the response head; `Content-Length`, chunked and
//! read-to-close bodies), running on its own single-threaded runtime on its
//! own thread, like `ab`'s one event loop: it shares the machine's cores with
//! the servers it measures, so it must be cheap. Measured against hyper's
//! client connection (`hyper::client::conn::http1`, same runtime) on this
//! 2-core machine, release build, 12 connections fetching 6.6 KB bodies
//! from an in-process hyper server for 3 s, three rounds: the same
//! throughput (~95k req/s, server-bound), but 16.2 µs of process CPU
//! (server + client) per request with this client against 19.0 µs with
//! hyper's: it leaves more of the shared cores to the servers measured.

use bytes::Bytes;
use hdrhistogram::Histogram;
use indicatif::ProgressBar;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One path the load asks for and the body it must get back.
#[derive(Clone, Debug)]
pub struct Resource {
    /// The request target, e.g. `/page/17`.
    pub path: String,
    /// The exact body a correct server returns.
    pub expected: Bytes,
}

/// How each request picks its resource.
#[derive(Clone, Copy, Debug)]
pub enum Choose {
    /// Always the first.
    First,
    /// Zipf-distributed over all, rank 1 (the first) most popular, with
    /// exponent `s` (seed 004: a few popular posts take most reads).
    Zipf {
        /// Exponent; 1.0 is the classic Zipf's law.
        s: f64,
    },
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Load {
    /// Concurrent keep-alive connections (`ab -c`).
    pub connections: usize,
    /// How long to send requests (`ab -t`).
    pub duration: Duration,
    /// Seed of the resource choice, so runs ask for the same sequence.
    pub seed: u64,
}

/// What a load run measured.
pub struct LoadResult {
    /// Requests answered correctly.
    pub ok: u64,
    /// Requests that failed (error status, wrong or short body, I/O error).
    pub failed: u64,
    /// What the first failure was.
    pub first_failure: Option<String>,
    /// Wall time from the first request sent to the last response read.
    pub elapsed: Duration,
    /// Latency of the correct requests, µs.
    pub hist: Histogram<u64>,
    /// Body bytes received in correct responses (`ab`'s "HTML transferred").
    pub body_bytes: u64,
    /// How many times each resource was asked for and answered correctly.
    pub per_resource: Vec<u64>,
}

impl LoadResult {
    /// Correct requests per second (`ab`'s "Requests per second").
    pub fn req_per_sec(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// An error naming `setup` when any request failed or none succeeded:
    /// a setup that returns wrong data must never be reported as fast.
    pub fn check(&self, setup: &str) -> Result<(), String> {
        if self.failed > 0 {
            return Err(format!(
                "{setup}: {} of {} requests failed; first: {}",
                self.failed,
                self.failed + self.ok,
                self.first_failure.as_deref().unwrap_or("?")
            ));
        }
        if self.ok == 0 {
            return Err(format!("{setup}: no request completed"));
        }
        Ok(())
    }
}

/// Runs `load` against `addr` on a thread of its own and returns when the
/// duration is over and every connection has read its last response.
/// `progress`, when given, advances once per 100 ms of the duration from
/// its current position.
pub fn run_load(
    addr: SocketAddr,
    resources: Arc<Vec<Resource>>,
    choose: Choose,
    load: &Load,
    progress: Option<ProgressBar>,
) -> io::Result<LoadResult> {
    if resources.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no resources"));
    }
    let load = load.clone();
    std::thread::Builder::new()
        .name("tiercache-lab-load".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            Ok(rt.block_on(drive(addr, resources, choose, load, progress)))
        })?
        .join()
        .map_err(|_| io::Error::other("the load generator thread panicked"))?
}

async fn drive(
    addr: SocketAddr,
    resources: Arc<Vec<Resource>>,
    choose: Choose,
    load: Load,
    progress: Option<ProgressBar>,
) -> LoadResult {
    let requests: Arc<Vec<Vec<u8>>> = Arc::new(
        resources
            .iter()
            .map(|r| {
                format!(
                    "GET {} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: tiercache-bench\r\nAccept: */*\r\n\r\n",
                    r.path
                )
                .into_bytes()
            })
            .collect(),
    );
    let started = Instant::now();
    let deadline = started + load.duration;
    let ticker = progress.map(|bar| {
        // Continues from where the bar stands (a warm-up may precede).
        let base = bar.position();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            loop {
                tick.tick().await;
                let done = base + started.elapsed().as_millis() as u64 / 100;
                bar.set_position(done.min(bar.length().unwrap_or(done)));
            }
        })
    });
    let mut tasks = Vec::with_capacity(load.connections);
    for c in 0..load.connections {
        let picker = Picker::new(
            choose,
            resources.len(),
            load.seed ^ ((c as u64 + 1) * 0x9E37),
        );
        tasks.push(tokio::spawn(connection(
            addr,
            resources.clone(),
            requests.clone(),
            picker,
            deadline,
        )));
    }
    let mut total = Tally::new(resources.len());
    for t in tasks {
        match t.await {
            Ok(tally) => total.merge(tally),
            Err(e) => total.fail(format!("a connection task failed: {e}")),
        }
    }
    let elapsed = started.elapsed();
    if let Some(t) = ticker {
        t.abort();
    }
    LoadResult {
        ok: total.ok,
        failed: total.failed,
        first_failure: total.first_failure,
        elapsed,
        hist: total.hist,
        body_bytes: total.body_bytes,
        per_resource: total.per_resource,
    }
}

/// Picks a resource per request.
struct Picker {
    rng: StdRng,
    zipf: Option<Zipf<f64>>,
}

impl Picker {
    fn new(choose: Choose, n: usize, seed: u64) -> Picker {
        let zipf = match choose {
            Choose::First => None,
            Choose::Zipf { s } => Some(Zipf::new(n as u64, s).expect("n ≥ 1 and s > 0")),
        };
        Picker {
            rng: StdRng::seed_from_u64(seed),
            zipf,
        }
    }

    fn pick(&mut self) -> usize {
        match &self.zipf {
            None => 0,
            // Zipf samples ranks 1..=n.
            Some(z) => (z.sample(&mut self.rng) as usize).saturating_sub(1),
        }
    }
}

/// One connection's counts, merged at the end.
struct Tally {
    ok: u64,
    failed: u64,
    first_failure: Option<String>,
    hist: Histogram<u64>,
    body_bytes: u64,
    per_resource: Vec<u64>,
}

impl Tally {
    fn new(resources: usize) -> Tally {
        Tally {
            ok: 0,
            failed: 0,
            first_failure: None,
            // 1 µs .. 10 min, 3 significant digits.
            hist: Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid bounds"),
            body_bytes: 0,
            per_resource: vec![0; resources],
        }
    }

    fn fail(&mut self, why: String) {
        self.failed += 1;
        self.first_failure.get_or_insert(why);
    }

    fn merge(&mut self, other: Tally) {
        self.ok += other.ok;
        self.failed += other.failed;
        if self.first_failure.is_none() {
            self.first_failure = other.first_failure;
        }
        self.hist.add(&other.hist).expect("same bounds");
        self.body_bytes += other.body_bytes;
        for (a, b) in self.per_resource.iter_mut().zip(other.per_resource) {
            *a += b;
        }
    }
}

async fn connection(
    addr: SocketAddr,
    resources: Arc<Vec<Resource>>,
    requests: Arc<Vec<Vec<u8>>>,
    mut picker: Picker,
    deadline: Instant,
) -> Tally {
    let mut tally = Tally::new(resources.len());
    let mut conn: Option<Conn> = None;
    let mut body = Vec::new();
    while Instant::now() < deadline {
        let i = picker.pick();
        let started = Instant::now();
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match Conn::connect(addr).await {
                Ok(c) => conn.insert(c),
                Err(e) => {
                    tally.fail(format!("connect {addr}: {e}"));
                    // Do not spin on a dead server.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        match c.exchange(&requests[i], &mut body).await {
            Ok(head) => {
                let expected = &resources[i].expected;
                if head.status != 200 {
                    tally.fail(format!(
                        "GET {}: status {} (body {:?})",
                        resources[i].path,
                        head.status,
                        String::from_utf8_lossy(&body[..body.len().min(200)])
                    ));
                } else if body[..] != expected[..] {
                    tally.fail(format!(
                        "GET {}: wrong body ({} bytes, expected {}{})",
                        resources[i].path,
                        body.len(),
                        expected.len(),
                        if body.len() == expected.len() {
                            ", same length, different content"
                        } else {
                            ""
                        }
                    ));
                } else {
                    let us = started.elapsed().as_micros() as u64;
                    tally.hist.saturating_record(us.max(1));
                    tally.ok += 1;
                    tally.body_bytes += body.len() as u64;
                    tally.per_resource[i] += 1;
                }
                if head.close {
                    conn = None;
                }
            }
            Err(e) => {
                tally.fail(format!("GET {}: {e}", resources[i].path));
                conn = None;
            }
        }
    }
    tally
}

/// What the client needs of a response head.
struct Head {
    status: u16,
    close: bool,
}

enum BodyKind {
    Length(usize),
    Chunked,
    UntilClose,
    None,
}

/// A keep-alive connection with its read buffer (`buf[pos..end]` unread).
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
}

fn bad(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

impl Conn {
    async fn connect(addr: SocketAddr) -> io::Result<Conn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: vec![0; 64 << 10],
            pos: 0,
            end: 0,
        })
    }

    /// Reads more into the buffer (compacting or growing it first); an
    /// error at end of stream.
    async fn fill(&mut self) -> io::Result<()> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        let n = self.stream.read(&mut self.buf[self.end..]).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed mid-response",
            ));
        }
        self.end += n;
        Ok(())
    }

    /// Sends `request` and reads the response, its body into `body`.
    async fn exchange(&mut self, request: &[u8], body: &mut Vec<u8>) -> io::Result<Head> {
        self.stream.write_all(request).await?;
        body.clear();
        let (head, kind) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut resp = httparse::Response::new(&mut headers);
            match resp
                .parse(&self.buf[self.pos..self.end])
                .map_err(|e| bad(format!("bad response head: {e}")))?
            {
                httparse::Status::Complete(len) => {
                    let parsed = parse_head(&resp)?;
                    self.pos += len;
                    break parsed;
                }
                httparse::Status::Partial => {
                    if self.end - self.pos > 64 << 10 {
                        return Err(bad("response head over 64 KiB"));
                    }
                    self.fill().await?;
                }
            }
        };
        match kind {
            BodyKind::None => {}
            BodyKind::Length(n) => self.read_exact_into(n, body).await?,
            BodyKind::Chunked => self.read_chunked(body).await?,
            BodyKind::UntilClose => loop {
                body.extend_from_slice(&self.buf[self.pos..self.end]);
                self.pos = self.end;
                match self.fill().await {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                    Err(e) => return Err(e),
                }
            },
        }
        Ok(head)
    }

    /// Appends exactly `n` bytes to `out`: what is buffered, then straight
    /// from the socket (large bodies skip the buffer).
    async fn read_exact_into(&mut self, n: usize, out: &mut Vec<u8>) -> io::Result<()> {
        let buffered = n.min(self.end - self.pos);
        out.extend_from_slice(&self.buf[self.pos..self.pos + buffered]);
        self.pos += buffered;
        let rest = n - buffered;
        if rest > 0 {
            let at = out.len();
            out.resize(at + rest, 0);
            self.stream.read_exact(&mut out[at..]).await.map_err(|e| {
                if e.kind() == io::ErrorKind::UnexpectedEof {
                    bad(format!("short body: connection closed before {n} bytes"))
                } else {
                    e
                }
            })?;
        }
        Ok(())
    }

    /// One `\r\n`-terminated line, without it.
    async fn read_line(&mut self) -> io::Result<String> {
        loop {
            if let Some(i) = self.buf[self.pos..self.end]
                .windows(2)
                .position(|w| w == b"\r\n")
            {
                let line = String::from_utf8_lossy(&self.buf[self.pos..self.pos + i]).into_owned();
                self.pos += i + 2;
                return Ok(line);
            }
            if self.end - self.pos > 8192 {
                return Err(bad("chunk line over 8 KiB"));
            }
            self.fill().await?;
        }
    }

    async fn read_chunked(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        loop {
            let line = self.read_line().await?;
            let size = line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size, 16)
                .map_err(|_| bad(format!("bad chunk size {line:?}")))?;
            if size == 0 {
                // Trailer fields, then the empty line.
                while !self.read_line().await?.is_empty() {}
                return Ok(());
            }
            self.read_exact_into(size, out).await?;
            if !self.read_line().await?.is_empty() {
                return Err(bad("chunk not followed by CRLF"));
            }
        }
    }
}

fn parse_head(resp: &httparse::Response<'_, '_>) -> io::Result<(Head, BodyKind)> {
    let status = resp.code.ok_or_else(|| bad("no status"))?;
    let mut close = resp.version == Some(0);
    let mut length = None;
    let mut chunked = false;
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let v = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .ok_or_else(|| bad("bad Content-Length"))?;
            length = Some(v);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = String::from_utf8_lossy(h.value)
                .to_ascii_lowercase()
                .contains("chunked");
        } else if h.name.eq_ignore_ascii_case("connection") {
            let v = String::from_utf8_lossy(h.value).to_ascii_lowercase();
            if v.contains("close") {
                close = true;
            } else if v.contains("keep-alive") {
                close = false;
            }
        }
    }
    let kind = if status == 204 || status == 304 || (100..200).contains(&status) {
        BodyKind::None
    } else if chunked {
        BodyKind::Chunked
    } else if let Some(n) = length {
        BodyKind::Length(n)
    } else {
        close = true;
        BodyKind::UntilClose
    };
    Ok((Head { status, close }, kind))
}

/// One `GET path` on a new connection to `addr`: the status and the body
/// (for an app that fetches from its origin on a cache miss).
pub async fn fetch(addr: SocketAddr, path: &str) -> io::Result<(u16, Vec<u8>)> {
    let mut conn = Conn::connect(addr).await?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: tiercache-bench\r\nConnection: close\r\n\r\n"
    );
    let mut body = Vec::new();
    let head = conn.exchange(request.as_bytes(), &mut body).await?;
    Ok((head.status, body))
}

/// Deterministic pseudo-random bytes picked from `alphabet`, for page and
/// document bodies (a fixed seed: every run serves the same content).
pub fn filler(seed: u64, len: usize, alphabet: &[u8]) -> String {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..len)
        .map(|_| alphabet[rng.gen_range(0..alphabet.len())] as char)
        .collect()
}
