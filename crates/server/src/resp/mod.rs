//! The Redis wire protocol (RESP2 and RESP3): request parsing and reply
//! encoding, with no I/O, so both can be tested and fuzzed alone.
//! Requests are the same in both protocols; only replies differ.

pub mod parse;
pub mod reply;

pub use parse::{parse_i64, Limits, ProtocolError, RequestParser};
pub use reply::Proto;
