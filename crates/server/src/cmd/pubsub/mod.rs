//! Pub/sub commands: `SUBSCRIBE`/`PSUBSCRIBE`/`SSUBSCRIBE` and their
//! `UNSUBSCRIBE`s (`subscribe.rs`), `PUBLISH`/`SPUBLISH` (`publish.rs`),
//! `PUBSUB CHANNELS|NUMSUB|NUMPAT|SHARDCHANNELS|SHARDNUMSUB`
//! (`introspect.rs`). The registry and the mailboxes are in
//! [`crate::pubsub`].

mod introspect;
mod publish;
mod subscribe;

pub use introspect::run as pubsub;
pub use publish::run as publish;
pub use subscribe::{leave, subscribe, unsubscribe};

/// The command a RESP2 subscriber may not run, as Redis words it.
pub fn not_in_subscriber_context(name: &str) -> String {
    format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    )
}
