//! How many nodes Redis's radix tree (`rax.c`) would use to index a
//! stream's nodes, for `XINFO STREAM`'s `radix-tree-nodes`.
//!
//! Keys are the nodes' first IDs as 16 big-endian bytes. This counts the
//! fully compressed tree: a node per run of bytes the keys under it share
//! (a compressed node), a node per place where they part (one child per
//! byte), and a leaf per key. Redis builds exactly that while keys are
//! only added in order, as a stream adds them; after deletions its tree
//! may hold a node more than the compressed form.

use super::StreamId;

fn key(id: StreamId) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&id.ms.to_be_bytes());
    k[8..].copy_from_slice(&id.seq.to_be_bytes());
    k
}

/// The node count for these keys (sorted, distinct); 1 (the empty root)
/// for none.
pub fn node_count(ids: impl Iterator<Item = StreamId>) -> usize {
    let keys: Vec<[u8; 16]> = ids.map(key).collect();
    if keys.is_empty() {
        return 1;
    }
    count(&keys, 0)
}

/// Nodes below depth `d` for `keys`, which share their first `d` bytes.
fn count(keys: &[[u8; 16]], d: usize) -> usize {
    if keys.len() == 1 {
        // The rest of the key (if any) as one node, then the leaf.
        return if d == 16 { 1 } else { 2 };
    }
    // Keys are distinct, so they part before byte 16.
    let (first, last) = (&keys[0], &keys[keys.len() - 1]);
    let part = (d..16)
        .find(|&i| first[i] != last[i])
        .expect("distinct keys");
    let shared = usize::from(part > d);
    let mut nodes = shared + 1;
    let mut lo = 0;
    while lo < keys.len() {
        let byte = keys[lo][part];
        let hi = lo + keys[lo..].partition_point(|k| k[part] == byte);
        nodes += count(&keys[lo..hi], part + 1);
        lo = hi;
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_as_rax_builds_in_order() {
        assert_eq!(node_count(std::iter::empty()), 1);
        assert_eq!(node_count([StreamId::new(5, 0)].into_iter()), 2);
        // Two keys parting at the last byte: shared run, branch, 2 leaves.
        let two = [StreamId::new(5, 0), StreamId::new(5, 1)];
        assert_eq!(node_count(two.into_iter()), 4);
    }
}
