//! The engine's error type.

use crate::store::StoreError;

/// Everything an engine operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A store below the memory tier failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The write-back journal could not be written or read.
    #[error("write-back journal {path}: {source}")]
    Journal {
        /// The journal file or directory at fault.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `INCR`-style arithmetic on a value that is not a decimal integer.
    #[error("value is not an integer or out of range")]
    NotAnInteger,
    /// A string operation (`INCR`) on a value of another kind (a hash); the
    /// message is Redis's.
    #[error("WRONGTYPE Operation against a key holding the wrong kind of value")]
    WrongType,
    /// Arithmetic would overflow a signed 64-bit integer.
    #[error("increment or decrement would overflow")]
    Overflow,
    /// Write-back data waiting for its stores exceeds the memory budget and
    /// could not be flushed in time (the stores are down or too slow).
    #[error("write-back buffer full: {0}")]
    WriteBackFull(String),
    /// The engine is shutting down and accepts no more writes.
    #[error("engine is shutting down")]
    ShuttingDown,
    /// A configuration value the engine cannot work with.
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// Shorthand for engine results.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;
