//! RFC 9111 caching rules as pure functions: no I/O, no clocks read, no
//! state. Everything the proxy decides about storing, reusing, validating
//! and invalidating responses is decided here, so it can be unit-tested
//! against the RFC's text.
//!
//! - [`cache_control`]: `Cache-Control` (and `Pragma`) parsing, §5.2.
//! - [`freshness`]: freshness lifetime (§4.2.1), heuristics (§4.2.2), age
//!   (§4.2.3), and whether a stored response may answer a request (§4.2,
//!   §5.2.1, RFC 5861).
//! - [`storable`]: may a response be stored (§3, §3.5); hop-by-hop fields.
//! - [`vary`]: secondary keys (§4.1).
//! - [`validate`]: conditional requests and 304 handling (§4.3, §3.2).
//! - [`invalidate`]: invalidation after unsafe methods (§4.4).

pub mod cache_control;
pub mod freshness;
pub mod invalidate;
pub mod storable;
pub mod validate;
pub mod vary;

pub use cache_control::{RequestDirectives, ResponseDirectives};
pub use freshness::{AgeClock, Verdict};
pub use storable::NotStorable;
pub use vary::VarySpec;
