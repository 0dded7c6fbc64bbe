//! `COMMAND DOCS` data: Redis 7's documentation of each command tiercache
//! implements (summary, since, group, complexity, history, arguments), so
//! `redis-cli` shows its argument hints and tools that read the docs see
//! what they expect. The data is generated from a real redis-server
//! (`scripts/gen-command-docs.py`) into `docs_data.rs`.

use crate::resp::{reply, Proto};
use bytes::BytesMut;

/// A node of a documentation reply.
pub(super) enum Doc {
    /// A bulk string.
    S(&'static str),
    /// A simple string (argument flags).
    P(&'static str),
    /// An integer.
    I(i64),
    /// An array.
    A(&'static [Doc]),
    /// A set (an array in RESP2).
    T(&'static [Doc]),
    /// A map (a flat array of pairs in RESP2).
    M(&'static [(&'static str, Doc)]),
}

/// The documentation map of `name` (lower case), if there is one.
pub(super) fn lookup(name: &str) -> Option<&'static Doc> {
    super::docs_data::DOCS
        .binary_search_by(|(n, _)| (*n).cmp(name))
        .ok()
        .map(|i| &super::docs_data::DOCS[i].1)
}

/// Encodes `doc` in protocol `p`.
pub(super) fn encode(out: &mut BytesMut, doc: &Doc, p: Proto) {
    match doc {
        Doc::S(s) => reply::bulk(out, s.as_bytes()),
        Doc::P(s) => reply::simple(out, s),
        Doc::I(n) => reply::integer(out, *n),
        Doc::T(items) => {
            reply::set(out, items.len(), p);
            for item in *items {
                encode(out, item, p);
            }
        }
        Doc::A(items) => {
            reply::array(out, items.len());
            for item in *items {
                encode(out, item, p);
            }
        }
        Doc::M(pairs) => {
            reply::map(out, pairs.len(), p);
            for (key, value) in *pairs {
                reply::bulk(out, key.as_bytes());
                encode(out, value, p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_covers_every_command() {
        let names: Vec<&str> = super::super::docs_data::DOCS
            .iter()
            .map(|(n, _)| *n)
            .collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted, "binary search needs sorted, unique names");
        for spec in super::super::COMMANDS {
            assert!(lookup(spec.name).is_some(), "no docs for {}", spec.name);
        }
    }

    #[test]
    fn set_docs_encode_as_redis_does() {
        let mut out = BytesMut::new();
        encode(&mut out, lookup("set").unwrap(), Proto::Resp3);
        let text = String::from_utf8(out.to_vec()).unwrap();
        assert!(text.starts_with("%6\r\n$7\r\nsummary\r\n$29\r\nSet the string value of a key\r\n"));
        assert!(text.contains("$5\r\nsince\r\n$5\r\n1.0.0\r\n"));
        let mut out2 = BytesMut::new();
        encode(&mut out2, lookup("set").unwrap(), Proto::Resp2);
        assert!(
            out2.starts_with(b"*12\r\n"),
            "a map is a flat array in RESP2"
        );
    }
}
