//! The Redis wire protocol (RESP2): request parsing and reply encoding, with
//! no I/O, so both can be tested and fuzzed alone.

pub mod parse;
pub mod reply;

pub use parse::{parse_i64, Limits, ProtocolError, RequestParser};
