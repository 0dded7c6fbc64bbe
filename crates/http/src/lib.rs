//! tiercache's HTTP micro-cache.
#![warn(missing_docs)]

pub mod policy;
