//! State shared by all connections of one server, and per connection.

use crate::config::ServerConfig;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Server-wide state: settings and counters for `INFO`.
#[derive(Debug)]
pub struct ServerState {
    /// The settings the server was started with.
    pub config: ServerConfig,
    /// When the server started, for `uptime_in_seconds`.
    pub started: Instant,
    /// The TCP port listened on (0 for a unix socket).
    pub port: u16,
    /// Connections open now.
    pub connected: AtomicU64,
    /// Commands run since start.
    pub commands: AtomicU64,
    /// The memcached front end's counters (`stats`); unused by RESP.
    pub memcache: crate::memcache::McStats,
    next_client_id: AtomicU64,
}

impl ServerState {
    /// Fresh state for a server on `port`.
    pub fn new(config: ServerConfig, port: u16) -> Self {
        ServerState {
            config,
            started: Instant::now(),
            port,
            connected: AtomicU64::new(0),
            commands: AtomicU64::new(0),
            memcache: Default::default(),
            next_client_id: AtomicU64::new(1),
        }
    }

    /// A unique id for a new connection (`CLIENT ID`).
    pub fn next_client_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Ordering::Relaxed)
    }
}

/// One connection's state.
#[derive(Debug, Default)]
pub struct ClientState {
    /// `CLIENT ID`.
    pub id: u64,
    /// `CLIENT SETNAME`.
    pub name: Option<Vec<u8>>,
}
