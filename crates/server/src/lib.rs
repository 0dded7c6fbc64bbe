//! Protocol front ends for the tiercache engine: a Redis-protocol server
//! (RESP2, and RESP3 after `HELLO 3`) whose every command runs against an
//! [`Engine`] session. It answers the SPEC's string, hash and key-space
//! commands, lists, sets, sorted sets and streams, with Redis 7's options, reply types and error
//! wording, checked against a real `redis-server` by `tests/redis_diff.rs`.
//!
//! What it is not: no storage logic (that is `tiercache-engine`: tiers,
//! write modes, journals) and no SQL or store client code (that is
//! `tiercache-stores`). This crate turns bytes on a socket into engine
//! calls and engine results into bytes on the socket.
//!
//! Map:
//! - [`resp`]: the wire protocol without I/O — [`resp::RequestParser`], a
//!   one-pass, resumable request parser (multibulk and inline) that yields
//!   argument ranges into the read buffer and enforces [`Limits`];
//!   [`resp::reply`], reply encoding, per [`resp::Proto`] where RESP3
//!   differs (nulls, maps, sets, doubles, verbatim strings).
//! - [`connection`]: [`RespConnection`], one client: read, parse every
//!   buffered request, run them in one session, commit, write all replies
//!   in one write.
//! - [`cmd`]: one file per command (or small family), the dispatch table
//!   and `COMMAND` specs; arity, `NOAUTH` and key-size checks happen once,
//!   at dispatch.
//! - [`glob`]: Redis's `stringmatchlen` (`KEYS`, `SCAN MATCH`, `CONFIG GET`).
//! - [`hash`], [`set`], [`zset`]: the encodings of a Redis hash, set and
//!   sorted set inside one engine entry of kind `ValueKind::Hash`, `Set`,
//!   `ZSet`, over the shared layout of [`packed`] (one bounds-checked
//!   decoding pass); [`list`], a list in nodes (`ValueKind::List`: ends and
//!   ranges read without decoding the rest); [`stream`], a stream
//!   (`ValueKind::Stream`: entries in Redis's node structure, consumer
//!   groups); the engine and the stores carry them as bytes and never
//!   decode them. Lists and streams record their changes as patches for
//!   the write-back journal ([`CollectionPatcher`] applies them).
//! - [`listener`]: [`ListenAddr`], [`Listener`] and [`serve`]: accept loop,
//!   client cap, clean shutdown.
//! - [`shutdown`]: how connections learn that the server is stopping.
//! - [`admin`]: the admin HTTP listener (`/metrics`, `/healthz`).
//! - [`busy_poll`]: [`BusyPoll`], the opt-in task that keeps the thread
//!   polling the sockets for a short window after each request instead of
//!   sleeping (`[server] busy_poll`).
//! - [`config`]: [`ServerConfig`] (limits, clients, idle timeout,
//!   `requirepass`); [`state`]: what connections share — counters for
//!   `INFO`, the client registry (`CLIENT LIST`), open `SCAN` cursors, the
//!   password in force — and each connection's own state (protocol,
//!   authentication).
//!
//! `SCAN` lists the key space in byte order through
//! `Session::scan_keys`, so a cursor is a number standing for the last key
//! returned: every key present for the whole scan is returned exactly once.
//! `INCRBYFLOAT` reproduces Redis's x87 `long double` arithmetic and
//! printing (a private module), so its digits match Redis's.
//!
//! Architecture invariants: a batch's replies are written only after its
//! session committed, so an acknowledged write-back write is durable; when
//! a password is set, no command but `AUTH`, `HELLO`, `QUIT` and `RESET`
//! touches the engine before the connection authenticated.
//!
//! # Example
//!
//! ```no_run
//! use std::sync::Arc;
//! use tiercache_engine::{Engine, NamespaceConfig, WriteMode};
//! use tiercache_server::{serve, ListenAddr, Listener, ServerConfig};
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let engine = Arc::new(
//!     Engine::builder("./data").namespace(NamespaceConfig::new("default", WriteMode::Back)).build().await?,
//! );
//! let listener = Listener::bind(&"127.0.0.1:6380".parse::<ListenAddr>()?).await?;
//! serve(listener, engine.clone(), ServerConfig::default(), async {
//!     let _ = tokio::signal::ctrl_c().await;
//! })
//! .await?;
//! engine.shutdown().await?; // flush write-back data once no client can write
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub mod admin;
pub mod busy_poll;
pub mod cmd;
pub mod cmdstats;
pub mod config;
pub mod connection;
mod digest;
pub mod geohash;
pub mod glob;
pub mod hash;
pub mod hll;
pub mod list;
pub mod listener;
mod longdouble;
pub mod memcache;
pub mod monitor;
pub mod notify;
mod oplog;
pub mod packed;
mod patcher;
pub mod pubsub;
pub mod rdb;
mod read;
pub mod replication;
pub mod resp;
mod scan_index;
pub mod set;
pub mod shutdown;
mod slot;
pub mod slowlog;
pub mod state;
pub mod stream;
#[cfg(test)]
mod test_rng;
pub mod zset;

pub use busy_poll::BusyPoll;
pub use config::{DebugCommand, ServerConfig};
pub use connection::RespConnection;
pub use listener::{serve, serve_memcache, ListenAddr, Listener};
pub use memcache::McConnection;
pub use patcher::CollectionPatcher;
pub use resp::{Limits, ProtocolError, RequestParser};
pub use tiercache_engine::Engine;
