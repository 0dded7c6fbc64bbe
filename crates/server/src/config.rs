//! The server's settings.

use crate::resp::Limits;
use std::time::Duration;

/// How a RESP server behaves (SPEC defaults).
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Request and key size limits.
    pub limits: Limits,
    /// Most connections served at once; over it a client gets
    /// `-ERR max number of clients reached` and is closed.
    pub max_clients: usize,
    /// Close a connection idle this long; zero means never
    /// (`CONFIG SET timeout` changes it at run time).
    pub idle_timeout: Duration,
    /// When set, clients must `AUTH` with this password (user `default`)
    /// before any other command but `HELLO ... AUTH`, `QUIT` and `RESET`.
    pub requirepass: Option<String>,
    /// On shutdown, how long connections get to finish their batch and
    /// send its replies (a client that stops reading could otherwise hold
    /// shutdown forever). Their writes are committed either way.
    pub shutdown_grace: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            limits: Limits::default(),
            max_clients: 10_000,
            idle_timeout: Duration::ZERO,
            requirepass: None,
            shutdown_grace: Duration::from_secs(30),
        }
    }
}
