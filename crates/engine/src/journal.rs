//! stub
/// stub
pub struct WriteBackJournal;
/// When journal appends reach the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FsyncPolicy {
    /// fsync before every acknowledgement.
    Always,
    /// write(2) before acknowledging, fsync once a second.
    #[default]
    EverySec,
    /// write(2) before acknowledging; the OS decides when to sync.
    No,
}
