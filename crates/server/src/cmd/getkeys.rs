//! `COMMAND GETKEYS command [arg ...]`: which arguments of a command are
//! keys, as cluster clients and proxies ask before routing a request.
//!
//! Most commands' keys sit where the table's `(first, last, step)` says;
//! the `movablekeys` ones (`SORT`'s `STORE`, `ZUNIONSTORE`'s `numkeys`,
//! `XREAD`'s `STREAMS`, `MIGRATE`'s `KEYS`, `GEORADIUS`'s `STORE`) are
//! found by reading their arguments as Redis 7.0 does; a few containers
//! (`XGROUP CREATE`, `XINFO STREAM`, `OBJECT ENCODING`, `MEMORY USAGE`)
//! have their key after the subcommand.

use super::{parse_i64, Args, CommandSpec};

/// The reply's error, in Redis's words.
pub(super) type KeysError = &'static str;

/// Positions in `argv` (`argv[0]` is the command's name) of the keys of
/// `spec`'s command.
pub(super) fn key_positions(spec: &CommandSpec, argv: &[&[u8]]) -> Result<Vec<usize>, KeysError> {
    let argc = argv.len();
    let is = |i: usize, word: &str| {
        argv.get(i)
            .is_some_and(|a| a.eq_ignore_ascii_case(word.as_bytes()))
    };
    let movable = spec.flags.contains(&"movablekeys");
    let positions = match spec.name {
        _ if !movable && spec.first_key == 0 => return subcommand_key(spec.name, argv),
        _ if !movable => {
            let last = if spec.last_key < 0 {
                argc as i32 + spec.last_key
            } else {
                spec.last_key
            };
            (spec.first_key..=last.min(argc as i32 - 1))
                .step_by(spec.step.max(1) as usize)
                .map(|i| i as usize)
                .collect()
        }
        "sort" => {
            // The last `STORE`'s argument; `LIMIT`, `GET` and `BY` skip theirs.
            let mut keys = vec![1];
            let mut store = None;
            let mut i = 2;
            while i < argc {
                if is(i, "limit") {
                    i += 2;
                } else if is(i, "get") || is(i, "by") {
                    i += 1;
                } else if is(i, "store") && i + 1 < argc {
                    store = Some(i + 1);
                }
                i += 1;
            }
            keys.extend(store);
            keys
        }
        "sort_ro" => vec![1],
        "migrate" => {
            let mut keys = vec![3];
            let mut i = 6;
            while i < argc {
                if is(i, "auth") {
                    i += 1;
                } else if is(i, "auth2") {
                    i += 2;
                } else if is(i, "keys") {
                    keys = (i + 1..argc).collect();
                    break;
                }
                i += 1;
            }
            keys
        }
        "zunionstore" | "zinterstore" | "zdiffstore" => {
            let mut keys = vec![1];
            keys.extend(counted_keys(argv, 2)?);
            keys
        }
        "blmpop" | "bzmpop" => counted_keys(argv, 2)?,
        // Zero keys is no error for a script: an empty list; so is a
        // `numkeys` that is no count or too big (Redis 7.0 answers both
        // with an empty list).
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" => {
            let n = argv.get(2).and_then(|a| parse_i64(a)).unwrap_or(-1);
            if n < 0 || n as u64 > (argc - 3) as u64 {
                return Ok(Vec::new());
            }
            return Ok((3..3 + n as usize).collect());
        }
        "georadius" | "georadiusbymember" => {
            // Redis 7 reads these by their key specs: the key, then the
            // argument after the first `STORE` and after the first
            // `STOREDIST` (both, when both are there), searched from
            // argument 6 (5 for GEORADIUSBYMEMBER) to the one before last.
            let from = if spec.name == "georadius" { 6 } else { 5 };
            let mut keys = vec![1];
            for word in ["store", "storedist"] {
                keys.extend(
                    (from..argc.saturating_sub(1))
                        .find(|&i| is(i, word))
                        .map(|i| i + 1),
                );
            }
            keys
        }
        "xread" | "xreadgroup" => {
            // Redis 7 reads these by their key specs: the first `STREAMS`
            // from argument 1 (4 for XREADGROUP, after `GROUP g c`), then
            // half of what follows (rounded down) are keys.
            let from = if spec.name == "xread" { 1 } else { 4 };
            let streams = (from..argc).find(|&i| is(i, "streams")).ok_or(INVALID)?;
            let n = (argc - streams - 1) / 2;
            (streams + 1..=streams + n).collect()
        }
        // `numkeys` first: ZUNION, ZINTER, ZDIFF, ZINTERCARD, SINTERCARD,
        // LMPOP, ZMPOP.
        _ => counted_keys(argv, 1)?,
    };
    if positions.is_empty() {
        return Err(INVALID);
    }
    Ok(positions)
}

const INVALID: KeysError = "ERR Invalid arguments specified for command";

/// The keys after a `numkeys` argument at `at`.
fn counted_keys(argv: &[&[u8]], at: usize) -> Result<Vec<usize>, KeysError> {
    let n = argv.get(at).and_then(|a| parse_i64(a)).ok_or(INVALID)?;
    if n < 1 || n as u64 > (argv.len() - at - 1) as u64 {
        return Err(INVALID);
    }
    Ok((at + 1..=at + n as usize).collect())
}

/// The key of a container command's subcommand (`XGROUP CREATE key ...`),
/// for the containers whose subcommands take one.
fn subcommand_key(name: &str, argv: &[&[u8]]) -> Result<Vec<usize>, KeysError> {
    let subcommands: &[&str] = match name {
        "xgroup" => &[
            "create",
            "setid",
            "destroy",
            "createconsumer",
            "delconsumer",
        ],
        "xinfo" => &["stream", "groups", "consumers"],
        "object" => &["encoding", "freq", "idletime", "refcount"],
        "memory" => &["usage"],
        _ => return Err("ERR The command has no key arguments"),
    };
    let named = argv.get(1).is_some_and(|s| {
        subcommands
            .iter()
            .any(|w| s.eq_ignore_ascii_case(w.as_bytes()))
    });
    if named && argv.len() > 2 {
        Ok(vec![2])
    } else {
        Err(INVALID)
    }
}

/// The command and arguments of `COMMAND GETKEYS` (from argument 2).
pub(super) fn argv<'a>(args: &Args<'a>) -> Vec<&'a [u8]> {
    (2..args.len()).map(|i| args.get(i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::lookup;

    fn keys(line: &str) -> Result<Vec<String>, KeysError> {
        let argv: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        let spec = lookup(argv[0]).expect("a known command");
        let positions = key_positions(spec, &argv)?;
        Ok(positions
            .into_iter()
            .map(|i| String::from_utf8(argv[i].to_vec()).unwrap())
            .collect())
    }

    #[test]
    fn keys_are_found_where_redis_finds_them() {
        assert_eq!(keys("get k").unwrap(), ["k"]);
        assert_eq!(keys("mset a 1 b 2").unwrap(), ["a", "b"]);
        assert_eq!(keys("lcs k1 k2").unwrap(), ["k1", "k2"]);
        assert_eq!(keys("bitop and d a b").unwrap(), ["d", "a", "b"]);
        assert_eq!(keys("sort abc store def").unwrap(), ["abc", "def"]);
        assert_eq!(
            keys("sort abc store invalid store stillbad store def").unwrap(),
            ["abc", "def"]
        );
        assert_eq!(
            keys("sort abc by store get store limit 0 1").unwrap(),
            ["abc"]
        );
        assert_eq!(keys("sort_ro abc").unwrap(), ["abc"]);
        assert_eq!(
            keys("zunionstore dst 2 a b weights 1 2").unwrap(),
            ["dst", "a", "b"]
        );
        assert_eq!(keys("zinter 2 a b").unwrap(), ["a", "b"]);
        assert_eq!(keys("blmpop 0 2 a b left").unwrap(), ["a", "b"]);
        assert_eq!(
            keys("xread count 2 streams s1 s2 0 0").unwrap(),
            ["s1", "s2"]
        );
        assert_eq!(
            keys("xreadgroup group g c block 0 streams s >").unwrap(),
            ["s"]
        );
        assert_eq!(keys("migrate h 1 k 0 10").unwrap(), ["k"]);
        assert_eq!(
            keys("migrate h 1  0 10 auth2 u p keys a b").unwrap(),
            ["a", "b"]
        );
        assert_eq!(keys("xgroup create s g $").unwrap(), ["s"]);
        assert_eq!(keys("memory usage k").unwrap(), ["k"]);
        assert_eq!(keys("georadius k 0 0 1 km").unwrap(), ["k"]);
        assert_eq!(
            keys("georadius k 0 0 1 km store dst").unwrap(),
            ["k", "dst"]
        );
        assert_eq!(
            keys("georadius k 0 0 1 km store a store b storedist c").unwrap(),
            ["k", "a", "c"]
        );
        assert_eq!(
            keys("georadius k 0 0 1 km storedist store x").unwrap(),
            ["k", "x", "store"]
        );
        assert_eq!(keys("georadius k 0 0 1 km store").unwrap(), ["k"]);
        assert_eq!(
            keys("georadiusbymember k m 1 km storedist d").unwrap(),
            ["k", "d"]
        );
        assert_eq!(keys("georadiusbymember k m 1 km store").unwrap(), ["k"]);
        assert_eq!(
            keys("geosearchstore dst src frommember m byradius 1 km").unwrap(),
            ["dst", "src"]
        );
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert_eq!(keys("ping"), Err("ERR The command has no key arguments"));
        assert_eq!(
            keys("zunionstore dst 3 a b"),
            Err(INVALID),
            "numkeys past the end"
        );
        assert_eq!(keys("zinter x a"), Err(INVALID));
        assert_eq!(
            keys("xread streams s1 s2 0").unwrap(),
            ["s1"],
            "odd: rounded down"
        );
        assert_eq!(keys("xread streams s1"), Err(INVALID));
        assert_eq!(keys("xread count 1"), Err(INVALID), "no STREAMS");
        assert_eq!(keys("xgroup help"), Err(INVALID));
    }
}
