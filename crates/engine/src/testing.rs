//! Stores for tests and examples: an in-memory store and one that fails on demand.
