//! Throwaway backend servers for tiercache's tests and its benchmark lab:
//! each on a free port in its own temporary directory, stopped (killed and
//! reaped) when dropped: `redis-server`, `memcached`, a temporary PostgreSQL
//! cluster ([`Postgres`]) and a temporary MariaDB ([`Mariadb`]).
//!
//! Tests use it as a dev-dependency; the only product code that links it is
//! `tiercache bench` (`tiercache-lab`), which starts the servers it compares
//! against. The caches and stores never do. It never talks to a server
//! someone else started.
//!
//! Each server type has a silent `installed()` check; the lab uses it to
//! show `not installed` rather than skipping loudly.
//!
//! A missing server binary is reported loudly and the caller skips, unless
//! `TIERCACHE_REQUIRE_BACKENDS=1` (set by `.ci/run`), when it panics: CI
//! must never skip silently. Every `start` returns `None` in the skip case.
//!
//! ```no_run
//! use tiercache_testkit::RedisServer;
//! let Some(redis) = RedisServer::start(&[]) else { return };
//! println!("redis on {}", redis.addr());
//! ```

#![warn(missing_docs)]

mod mariadb;
mod memcached;
mod postgres;
mod process;
mod redis;
mod redis_cluster;

pub use mariadb::{Mariadb, MARIADB_DATABASE, MARIADB_PASSWORD, MARIADB_USER};
pub use memcached::Memcached;
pub use postgres::{Postgres, POSTGRES_PASSWORD};
pub use process::{
    backends_required, find_tool, free_port, require_tool, require_tool_in, skip_or_panic,
    wait_for_port,
};
pub use redis::RedisServer;
pub use redis_cluster::RedisCluster;
