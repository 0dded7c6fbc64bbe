//! `RANDOMKEY`: a random live key, or null when there is none.
//!
//! The key space is ordered, not hashed, so a key is drawn by reading a
//! small window of keys after a random point (wrapping around to the
//! first keys) and picking one of them at random: every key can come out,
//! and a small key space comes out uniformly.

use super::{Args, Ctx, Flow};
use crate::resp::reply;
use bytes::Bytes;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::{SystemTime, UNIX_EPOCH};

/// Keys read around the random point.
const WINDOW: usize = 16;

pub async fn run(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let state = RandomState::new();
    let start = state.hash_one(seed).to_be_bytes();
    let mut keys: Vec<Bytes> = match ctx.session.scan_keys(Some(&start), b"", WINDOW).await {
        Ok(page) => page.keys,
        Err(e) => {
            ctx.engine_error(&e);
            return Flow::Continue;
        }
    };
    if keys.len() < WINDOW {
        match ctx.session.scan_keys(None, b"", WINDOW - keys.len()).await {
            Ok(page) => {
                for k in page.keys {
                    if !keys.contains(&k) {
                        keys.push(k);
                    }
                }
            }
            Err(e) => {
                ctx.engine_error(&e);
                return Flow::Continue;
            }
        }
    }
    if keys.is_empty() {
        ctx.null();
    } else {
        let pick = state.hash_one(seed.wrapping_add(1)) as usize % keys.len();
        reply::bulk(ctx.out, &keys[pick]);
    }
    Flow::Continue
}
