//! Protocol front ends for the tiercache engine: a Redis-protocol (RESP2)
//! server whose every command runs against an [`Engine`] session.
//!
//! What it is not: no storage logic (that is `tiercache-engine`: tiers,
//! write modes, journals) and no SQL or store client code (that is
//! `tiercache-stores`). This crate turns bytes on a socket into engine
//! calls and engine results into bytes on the socket.
//!
//! Map:
//! - [`resp`]: the wire protocol without I/O — [`resp::RequestParser`], a
//!   one-pass, resumable request parser that yields argument ranges into the
//!   read buffer and enforces [`Limits`]; [`resp::reply`], reply encoding.
//! - [`connection`]: [`RespConnection`], one client: read, parse every
//!   buffered request, run them in one session, commit, write all replies
//!   in one write.
//! - [`cmd`]: one file per command, the dispatch table and `COMMAND` specs.
//! - [`listener`]: [`ListenAddr`], [`Listener`] and [`serve`]: accept loop,
//!   client cap, clean shutdown.
//! - [`shutdown`]: how connections learn that the server is stopping.
//! - [`config`]: [`ServerConfig`]; [`state`]: counters shared for `INFO`.
//!
//! Architecture invariant: a batch's replies are written only after its
//! session committed, so an acknowledged write-back write is durable.
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

pub mod cmd;
pub mod config;
pub mod connection;
pub mod glob;
pub mod listener;
mod longdouble;
pub mod resp;
pub mod shutdown;
pub mod state;

pub use config::ServerConfig;
pub use connection::RespConnection;
pub use listener::{serve, ListenAddr, Listener};
pub use resp::{Limits, ProtocolError, RequestParser};
pub use tiercache_engine::Engine;
