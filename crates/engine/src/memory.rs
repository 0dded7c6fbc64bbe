//! stub
/// stub
pub struct MemoryTier;
