//! [`MemcachedStore`]: entries on one or more memcached servers, keys
//! spread by a consistent hash.
//!
//! # Wire protocol
//!
//! The store speaks memcached's *meta* text protocol (memcached ≥ 1.6) with
//! a small client of its own. The async crates looked at (`async-memcached`,
//! `memcache-async`) hold one connection per `&mut` client with no pooling,
//! reconnection or timeouts, and none sends a whole batch as one pipeline
//! of quiet meta commands; that pipeline is most of what this store is:
//!
//! - get: `mg <key> v f O<i> q` per key, then `mn`; misses are silent
//!   (`q`), each hit comes back as `VA <len> f<flags> O<i>` with its value,
//!   the opaque `O<i>` naming the input slot, and `MN` ends the batch.
//! - set: `ms <key> <len> F<flags> T<ttl> q` + data; delete: `md <key> q`;
//!   quiet mode answers only failures (and `NF` for an absent key's
//!   delete), so a batch is one write and one `MN`.
//! - The request is written while the replies are read (the two halves of
//!   the socket run concurrently), so a large batch never deadlocks on full
//!   socket buffers.
//!
//! # Keys
//!
//! memcached takes keys of 1 to 250 bytes without spaces or control
//! characters. A key is sent:
//! - as is when it is 1..=250 bytes of printable ASCII (`!`..`~`), so other
//!   memcached clients see the same key;
//! - else base64-encoded with the meta `b` flag when it is 1..=186 bytes
//!   (≤ 250 base64 characters): memcached decodes it and stores the exact
//!   binary key (spaces, `\r\n`, `\0` included);
//! - else (the empty key, longer binary keys, keys over 250 bytes) as
//!   `tc:h:` + 32 hex digits of a 128-bit hash of the key, with the full key
//!   stored in the value header and compared on read: two keys whose hashes
//!   collide evict each other but never read each other's value.
//!
//! # Values
//!
//! memcached's expiry has one-second resolution (and is relative up to 30
//! days, absolute Unix time beyond), so every value carries a small header
//! with the exact expiry; reads filter on it, and the memcached expiry is
//! rounded up (plus one second of clock slack) so memcached never drops an
//! entry before its time. Flags are memcached's own item flags.
//!
//! ```text
//! header byte: bit 0 = expiry follows, bit 1 = key follows,
//!              bit 2 = kind follows, other bits 0
//! [expires_at: u64 big endian, Unix ms]
//! [key length: u32 big endian][key bytes]            (hashed keys only)
//! [kind: u8, ValueKind::code]                        (not a string only)
//! value bytes
//! ```
//!
//! The value kind ([`ValueKind`]; a Redis hash is opaque bytes here) rides in
//! this header rather than in the Redis store's envelope
//! (`redis::codec::encode_kind`): the header is already there, so a
//! bit costs nothing for strings and needs no escaping, and memcached
//! carries the flags natively, which the envelope would duplicate. Builds
//! older than kinds see an unknown header bit and read a hash as a miss,
//! never as a string; an unknown kind code reads as a miss too.
//!
//! A value without expiry costs one byte. The header makes values written
//! by other clients unreadable through this store (it reads only what it
//! wrote).
//!
//! # Servers
//!
//! Keys are placed on `servers` with a ketama-like ring: each server gets
//! 160 points, point `i` of `host:port` at `h("host:port-i")`, and a key
//! goes to the first point at or after `h(key)`, wrapping; `h` is 64-bit
//! FNV-1a followed by the MurmurHash3 finaliser. Adding or removing a server
//! moves only about 1/n of the keys. (The points are not libmemcached's
//! MD5 ketama: other clients place keys differently.) A batch is split per
//! server and the servers are asked in parallel; answers are merged back
//! in input order.
//!
//! Each server has [`CONNECTIONS_PER_SERVER`] connections, made on first use;
//! a connection that fails or times out is closed (its replies may be
//! half-read), and the next use connects again. Every operation has the
//! store's timeout ([`DEFAULT_TIMEOUT`] unless configured).
//!
//! memcached cannot list its keys: [`Store::count`], [`Store::scan_keys`] and
//! [`Store::key_stats`] return an error saying so. [`Store::clear`] is
//! `flush_all` on every server.

use async_trait::async_trait;
use bytes::{BufMut, Bytes, BytesMut};
use futures_util::future::try_join_all;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tiercache_engine::{now_ms, Entry, Mutation, Store, StoreError, ValueKind};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::Mutex;

/// Operation timeout when none is configured.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// Connections kept to each server.
pub const CONNECTIONS_PER_SERVER: usize = 4;

/// Points per server on the hash ring.
const POINTS_PER_SERVER: usize = 160;

/// Longest key memcached takes.
const MAX_KEY: usize = 250;

/// Longest binary key whose base64 form fits in [`MAX_KEY`].
const MAX_BINARY_KEY: usize = MAX_KEY / 4 * 3;

/// memcached's limit between relative and absolute expiry times.
const RELATIVE_LIMIT_SECS: u64 = 30 * 24 * 3600;

/// Prefix of hashed keys.
const HASHED_PREFIX: &str = "tc:h:";

const HAS_EXPIRY: u8 = 1;
const HAS_KEY: u8 = 2;
/// Header bit: a value-kind byte follows (entries that are not strings).
const HAS_KIND: u8 = 4;

/// A [`Store`] over memcached servers. See the [module docs](self).
///
/// ```no_run
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use tiercache_engine::{Entry, Store};
/// use tiercache_stores::MemcachedStore;
/// let servers = vec!["127.0.0.1:11211".to_string(), "127.0.0.1:11212".to_string()];
/// let store = MemcachedStore::open("mc", &servers, None).unwrap();
/// store.set_many(&[("k".into(), Entry::with_flags("v", None, 3))]).await.unwrap();
/// assert_eq!(store.get_many(&["k".into()]).await.unwrap()[0].as_ref().unwrap().flags, 3);
/// # });
/// ```
pub struct MemcachedStore {
    name: String,
    servers: Vec<Server>,
    ring: Vec<(u64, usize)>,
    timeout: Duration,
}

struct Server {
    addr: String,
    conns: Vec<Mutex<Option<Conn>>>,
    next: AtomicUsize,
}

type Conn = TcpStream;

/// How a key travels on the wire.
struct WireKey {
    token: Vec<u8>,
    base64: bool,
    /// The full key, kept in the value header (hashed keys).
    hashed: bool,
}

fn wire_key(key: &[u8]) -> WireKey {
    if !key.is_empty() && key.len() <= MAX_KEY && key.iter().all(|b| (0x21..=0x7e).contains(b)) {
        WireKey {
            token: key.to_vec(),
            base64: false,
            hashed: false,
        }
    } else if !key.is_empty() && key.len() <= MAX_BINARY_KEY {
        WireKey {
            token: base64(key).into_bytes(),
            base64: true,
            hashed: false,
        }
    } else {
        let (a, b) = hash128(key);
        WireKey {
            token: format!("{HASHED_PREFIX}{a:016x}{b:016x}").into_bytes(),
            base64: false,
            hashed: true,
        }
    }
}

fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = (chunk[0] as u32) << 16
            | (*chunk.get(1).unwrap_or(&0) as u32) << 8
            | *chunk.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// 64-bit FNV-1a with the MurmurHash3 finaliser: stable across builds and
/// platforms (the ring and hashed keys depend on it).
fn hash64(data: &[u8], seed: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for &b in data {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

fn hash128(data: &[u8]) -> (u64, u64) {
    (hash64(data, 0), hash64(data, 0x9e37_79b9_7f4a_7c15))
}

/// The ring: [`POINTS_PER_SERVER`] points per server, sorted.
fn build_ring(servers: &[String]) -> Vec<(u64, usize)> {
    let mut ring: Vec<(u64, usize)> = servers
        .iter()
        .enumerate()
        .flat_map(|(s, addr)| {
            (0..POINTS_PER_SERVER).map(move |i| (hash64(format!("{addr}-{i}").as_bytes(), 0), s))
        })
        .collect();
    ring.sort_unstable();
    ring
}

fn server_for(ring: &[(u64, usize)], key: &[u8]) -> usize {
    let h = hash64(key, 0);
    let i = ring.partition_point(|&(p, _)| p < h);
    ring[if i == ring.len() { 0 } else { i }].1
}

/// The memcached expiry (`T` flag) for an absolute expiry in ms, rounded up
/// with a second of slack; `None` when the entry never expires.
fn exptime(expires_at: Option<u64>, now: u64) -> Option<u64> {
    let t = expires_at?;
    let remaining = t.saturating_sub(now).div_ceil(1000) + 1;
    Some(if remaining <= RELATIVE_LIMIT_SECS {
        remaining
    } else {
        t.div_ceil(1000) + 1
    })
}

fn encode_value(key: &[u8], wire: &WireKey, entry: &Entry) -> Bytes {
    let mut out = BytesMut::with_capacity(1 + 8 + entry.value.len());
    let mut header = 0;
    if entry.expires_at.is_some() {
        header |= HAS_EXPIRY;
    }
    if wire.hashed {
        header |= HAS_KEY;
    }
    if entry.kind != ValueKind::String {
        header |= HAS_KIND;
    }
    out.put_u8(header);
    if let Some(t) = entry.expires_at {
        out.put_u64(t);
    }
    if wire.hashed {
        out.put_u32(key.len() as u32);
        out.put_slice(key);
    }
    if entry.kind != ValueKind::String {
        out.put_u8(entry.kind.code());
    }
    out.put_slice(&entry.value);
    out.freeze()
}

/// The entry in a stored value, if it is one of ours for `key` (the key
/// check only applies to hashed keys).
fn decode_value(key: &[u8], wire: &WireKey, mut raw: Bytes, flags: u32) -> Option<Entry> {
    let header = *raw.first()?;
    if header & !(HAS_EXPIRY | HAS_KEY | HAS_KIND) != 0 {
        return None;
    }
    let mut at = 1;
    let mut expires_at = None;
    if header & HAS_EXPIRY != 0 {
        let b = raw.get(at..at + 8)?;
        expires_at = Some(u64::from_be_bytes(b.try_into().ok()?));
        at += 8;
    }
    if header & HAS_KEY != 0 {
        let len = u32::from_be_bytes(raw.get(at..at + 4)?.try_into().ok()?) as usize;
        at += 4;
        if raw.get(at..at + len)? != key {
            return None;
        }
        at += len;
    } else if wire.hashed {
        return None;
    }
    let mut kind = ValueKind::String;
    if header & HAS_KIND != 0 {
        kind = ValueKind::from_code(*raw.get(at)?)?;
        at += 1;
    }
    raw = raw.slice(at..);
    Some(Entry::with_kind(raw, expires_at, flags, kind))
}

fn proto_error(what: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.into())
}

/// Reads one `\r\n`-terminated line (without it).
async fn read_line<R: AsyncBufReadExt + Unpin>(
    r: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<()> {
    line.clear();
    let n = r.read_until(b'\n', line).await?;
    if n == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed by the server",
        ));
    }
    if !line.ends_with(b"\r\n") {
        return Err(proto_error("truncated reply line"));
    }
    line.truncate(line.len() - 2);
    Ok(())
}

/// A reply line that is an error.
fn error_line(line: &[u8]) -> std::io::Error {
    proto_error(format!(
        "server replied {:?}",
        String::from_utf8_lossy(line)
    ))
}

impl MemcachedStore {
    /// A store over `servers` (`host:port`). Does not connect: the first
    /// operation on each server does.
    pub fn open(
        name: &str,
        servers: &[String],
        timeout: Option<Duration>,
    ) -> Result<MemcachedStore, StoreError> {
        if servers.is_empty() {
            return Err(StoreError::new(name, "memcached: no servers"));
        }
        Ok(MemcachedStore {
            name: name.to_string(),
            servers: servers
                .iter()
                .map(|addr| Server {
                    addr: addr.clone(),
                    conns: (0..CONNECTIONS_PER_SERVER)
                        .map(|_| Mutex::new(None))
                        .collect(),
                    next: AtomicUsize::new(0),
                })
                .collect(),
            ring: build_ring(servers),
            timeout: timeout.unwrap_or(DEFAULT_TIMEOUT),
        })
    }

    /// The index in `servers` of the server holding `key`.
    pub fn server_of(&self, key: &[u8]) -> usize {
        server_for(&self.ring, key)
    }

    /// Sends `request` to server `s` and reads the replies with `read`, on
    /// one pooled connection, under the store's timeout. A connection that
    /// fails or times out is dropped.
    async fn exchange(
        &self,
        s: usize,
        what: &str,
        request: &[u8],
        expect: Expect,
    ) -> Result<Vec<Hit>, StoreError> {
        let server = &self.servers[s];
        let err = |cause: &dyn std::fmt::Display| {
            StoreError::new(
                &self.name,
                format!("memcached {}: {what}: {cause}", server.addr),
            )
        };
        let op = async {
            let i = server.next.fetch_add(1, Ordering::Relaxed) % server.conns.len();
            let mut slot = server.conns[i].lock().await;
            let mut conn = match slot.take() {
                Some(c) => c,
                None => {
                    let c = TcpStream::connect(&server.addr).await?;
                    c.set_nodelay(true)?;
                    c
                }
            };
            let (rd, mut wr) = conn.split();
            let mut rd = BufReader::new(rd);
            let write = async {
                wr.write_all(request).await?;
                wr.flush().await
            };
            let (written, result) = tokio::join!(write, read_replies(&mut rd, expect));
            written?;
            let value = result?;
            if !rd.buffer().is_empty() {
                return Err(proto_error("unexpected bytes after the replies"));
            }
            // Only a connection whose exchange completed goes back.
            *slot = Some(conn);
            Ok::<_, std::io::Error>(value)
        };
        match tokio::time::timeout(self.timeout, op).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(err(&e)),
            Err(_) => Err(err(&format!(
                "timed out after {} ms",
                self.timeout.as_millis()
            ))),
        }
    }

    /// Indices of `keys` grouped by server.
    fn by_server<'k>(&self, keys: impl Iterator<Item = &'k [u8]>) -> Vec<Vec<usize>> {
        let mut groups = vec![Vec::new(); self.servers.len()];
        for (i, k) in keys.enumerate() {
            groups[self.server_of(k)].push(i);
        }
        groups
    }

    async fn write_batch(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        let now = now_ms();
        let groups = self.by_server(batch.iter().map(|m| &m.key()[..]));
        let requests = groups
            .iter()
            .enumerate()
            .filter(|(_, g)| !g.is_empty())
            .map(|(s, group)| {
                let mut req = Vec::new();
                for &i in group {
                    let key = batch[i].key();
                    let wire = wire_key(key);
                    match &batch[i] {
                        Mutation::Set(_, e) if !e.is_expired_at(now) => {
                            let data = encode_value(key, &wire, e);
                            req.extend_from_slice(b"ms ");
                            req.extend_from_slice(&wire.token);
                            req.extend_from_slice(
                                format!(" {} F{}", data.len(), e.flags).as_bytes(),
                            );
                            if let Some(t) = exptime(e.expires_at, now) {
                                req.extend_from_slice(format!(" T{t}").as_bytes());
                            }
                            if wire.base64 {
                                req.extend_from_slice(b" b");
                            }
                            req.extend_from_slice(b" q\r\n");
                            req.extend_from_slice(&data);
                            req.extend_from_slice(b"\r\n");
                        }
                        // Deletes, and sets already past their expiry.
                        _ => {
                            req.extend_from_slice(b"md ");
                            req.extend_from_slice(&wire.token);
                            if wire.base64 {
                                req.extend_from_slice(b" b");
                            }
                            req.extend_from_slice(b" q\r\n");
                        }
                    }
                }
                req.extend_from_slice(b"mn\r\n");
                async move { self.exchange(s, "write", &req, Expect::QuietEnd).await }
            });
        try_join_all(requests).await?;
        Ok(())
    }
}

/// What a batch's replies look like.
enum Expect {
    /// Quiet writes: any line before `MN` is a failure.
    QuietEnd,
    /// Quiet gets of this many keys: `VA <len> f<flags> O<i>` + data per
    /// hit, then `MN`.
    Hits(usize),
    /// `flush_all`: `OK`.
    Ok,
}

/// A hit: input slot within the server's group, flags, stored bytes.
type Hit = (usize, u32, Bytes);

async fn read_replies<R: AsyncBufReadExt + Unpin>(
    rd: &mut R,
    expect: Expect,
) -> std::io::Result<Vec<Hit>> {
    let mut hits = Vec::new();
    let mut line = Vec::new();
    let n = match expect {
        Expect::Ok => {
            read_line(rd, &mut line).await?;
            return if line == b"OK" {
                Ok(hits)
            } else {
                Err(error_line(&line))
            };
        }
        Expect::QuietEnd => 0,
        Expect::Hits(n) => n,
    };
    loop {
        read_line(rd, &mut line).await?;
        if line == b"MN" {
            return Ok(hits);
        }
        if n == 0 {
            // Quiet `md` still reports a miss (`NF`): deleting an absent
            // key is fine.
            if line == b"NF" || line == b"HD" {
                continue;
            }
            return Err(error_line(&line));
        }
        let text = std::str::from_utf8(&line).map_err(|_| error_line(&line))?;
        let mut tokens = text.split(' ');
        if tokens.next() != Some("VA") {
            return Err(error_line(&line));
        }
        let len: usize = tokens
            .next()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| error_line(&line))?;
        let (mut flags, mut slot) = (0u32, None);
        for t in tokens {
            match t.as_bytes().first() {
                Some(b'f') => flags = t[1..].parse().map_err(|_| error_line(&line))?,
                Some(b'O') => slot = t[1..].parse::<usize>().ok(),
                _ => {}
            }
        }
        let slot = slot.filter(|&s| s < n).ok_or_else(|| error_line(&line))?;
        let mut data = vec![0u8; len + 2];
        rd.read_exact(&mut data).await?;
        if !data.ends_with(b"\r\n") {
            return Err(proto_error("value not followed by CRLF"));
        }
        data.truncate(len);
        hits.push((slot, flags, Bytes::from(data)));
    }
}

#[async_trait]
impl Store for MemcachedStore {
    fn name(&self) -> &str {
        &self.name
    }

    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        let mut out = vec![None; keys.len()];
        if keys.is_empty() {
            return Ok(out);
        }
        let wires: Vec<WireKey> = keys.iter().map(|k| wire_key(k)).collect();
        let groups = self.by_server(keys.iter().map(|k| &k[..]));
        let requests = groups
            .iter()
            .enumerate()
            .filter(|(_, g)| !g.is_empty())
            .map(|(s, group)| {
                let mut req = Vec::new();
                for (slot, &i) in group.iter().enumerate() {
                    req.extend_from_slice(b"mg ");
                    req.extend_from_slice(&wires[i].token);
                    req.extend_from_slice(format!(" v f O{slot} q").as_bytes());
                    if wires[i].base64 {
                        req.extend_from_slice(b" b");
                    }
                    req.extend_from_slice(b"\r\n");
                }
                req.extend_from_slice(b"mn\r\n");
                async move {
                    let hits = self
                        .exchange(s, "get", &req, Expect::Hits(group.len()))
                        .await?;
                    Ok::<_, StoreError>((group, hits))
                }
            });
        let answers = try_join_all(requests).await?;
        let now = now_ms();
        for (group, hits) in answers {
            for (slot, flags, raw) in hits {
                let i = group[slot];
                if let Some(e) = decode_value(&keys[i], &wires[i], raw, flags) {
                    if !e.is_expired_at(now) {
                        out[i] = Some(e);
                    }
                }
            }
        }
        Ok(out)
    }

    async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        let batch: Vec<Mutation> = Mutation::sets(entries);
        self.write_batch(&batch).await
    }

    async fn delete_many(&self, keys: &[Bytes]) -> Result<(), StoreError> {
        let batch: Vec<Mutation> = Mutation::deletes(keys);
        self.write_batch(&batch).await
    }

    /// One pipeline per server (memcached has no transactions).
    async fn apply(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        self.write_batch(batch).await
    }

    async fn count(&self) -> Result<u64, StoreError> {
        Err(StoreError::new(
            &self.name,
            "memcached cannot count or list its keys (no SCAN); use another system of record for DBSIZE/SCAN/KEYS",
        ))
    }

    /// `flush_all` on every server.
    async fn clear(&self) -> Result<(), StoreError> {
        let all = (0..self.servers.len())
            .map(|s| self.exchange(s, "flush_all", b"flush_all\r\n", Expect::Ok));
        try_join_all(all).await?;
        Ok(())
    }

    async fn scan_keys(
        &self,
        _start: std::ops::Bound<&[u8]>,
        _prefix: &[u8],
        _limit: usize,
        _now_ms: u64,
    ) -> Result<Vec<Bytes>, StoreError> {
        Err(StoreError::new(
            &self.name,
            "memcached cannot list its keys (needed by SCAN and KEYS); use another system of record",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_on_the_wire() {
        let k = wire_key(b"user:1");
        assert_eq!(
            (k.token, k.base64, k.hashed),
            (b"user:1".to_vec(), false, false)
        );
        let k = wire_key(b"a b\r\n\0");
        assert_eq!(k.token, base64(b"a b\r\n\0").into_bytes());
        assert!(k.base64 && !k.hashed);
        assert!(wire_key(&[b'x'; 250]).token.len() == 250);
        let long = wire_key(&[b'x'; 251]);
        assert!(long.hashed && long.token.starts_with(b"tc:h:") && long.token.len() == 37);
        assert!(wire_key(&[0u8; 186]).base64);
        assert!(base64(&[0u8; 186]).len() <= MAX_KEY);
        assert!(wire_key(&[0u8; 187]).hashed);
        assert!(wire_key(b"").hashed);
    }

    #[test]
    fn base64_matches_rfc4648() {
        for (raw, enc) in [
            (&b""[..], ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"fooba", "Zm9vYmE="),
            (b"foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(raw), enc);
        }
    }

    #[test]
    fn values_round_trip_and_check_hashed_keys() {
        let long = vec![7u8; 300];
        let wire = wire_key(&long);
        let e = Entry::with_flags("v", Some(123), 9);
        let enc = encode_value(&long, &wire, &e);
        assert_eq!(decode_value(&long, &wire, enc.clone(), 9), Some(e));
        let mut other = long.clone();
        other[0] = 8;
        assert_eq!(
            decode_value(&other, &wire, enc, 9),
            None,
            "hash collision reads as a miss"
        );
        let plain = wire_key(b"k");
        let e = Entry::new("");
        let enc = encode_value(b"k", &plain, &e);
        assert_eq!(&enc[..], &[0]);
        assert_eq!(decode_value(b"k", &plain, enc.clone(), 0), Some(e));
        let h = Entry::with_kind("f", Some(5), 2, ValueKind::Hash);
        let hash_enc = encode_value(&long, &wire, &h);
        assert_eq!(decode_value(&long, &wire, hash_enc, 2), Some(h));
        let unknown_kind = Bytes::from_static(b"\x04\x09v");
        assert_eq!(decode_value(b"k", &plain, unknown_kind, 0), None);
        // A plain entry found under a hashed name is not ours.
        assert_eq!(decode_value(&long, &wire, enc, 0), None);
        assert_eq!(
            decode_value(b"k", &plain, Bytes::from_static(b"\x80x"), 0),
            None
        );
    }

    #[test]
    fn expiry_times() {
        let now = 1_000_000_000_000;
        assert_eq!(exptime(None, now), None);
        assert_eq!(exptime(Some(now + 1), now), Some(2));
        assert_eq!(exptime(Some(now + 1000), now), Some(2));
        assert_eq!(exptime(Some(now + 1001), now), Some(3));
        let far = now + 31 * 24 * 3600 * 1000 + 1;
        assert_eq!(exptime(Some(far), now), Some(far.div_ceil(1000) + 1));
    }

    #[test]
    fn ring_is_stable_and_balanced() {
        const PINNED: u64 = 4_098_048_589_259_694_704;
        let servers: Vec<String> = (0..3).map(|i| format!("10.0.0.{i}:11211")).collect();
        let ring = build_ring(&servers);
        assert_eq!(ring.len(), 3 * POINTS_PER_SERVER);
        let mut counts = [0usize; 3];
        for i in 0..30_000 {
            counts[server_for(&ring, format!("key:{i}").as_bytes())] += 1;
        }
        for c in counts {
            assert!((7_000..13_000).contains(&c), "{counts:?}");
        }
        // Pinned: the placement must not change between builds.
        assert_eq!(hash64(b"key:1", 0), hash64(b"key:1", 0));
        assert_eq!(hash64(b"key:1", 0), PINNED);
        // Removing a server moves only its keys.
        let ring2 = build_ring(&servers[..2]);
        for i in 0..1000 {
            let k = format!("key:{i}");
            let before = server_for(&ring, k.as_bytes());
            if before < 2 {
                assert_eq!(server_for(&ring2, k.as_bytes()), before);
            }
        }
    }
}
