//! Streams in an RDB payload (`rdbSaveObject`/`rdbLoadObject` for
//! `OBJ_STREAM`): the radix tree's nodes, each a master ID and a listpack
//! of entries delta-encoded against it (`t_stream.c`), then the stream's
//! metadata and its consumer groups with their pending entries and
//! consumers.
//!
//! Read: the three versions (`STREAM_LISTPACKS` of Redis 5 and 6, `_2` of
//! 7.0, `_3` of 7.2, which adds each consumer's active time). Entries are
//! appended to a new [`Stream`], which groups them in nodes by its own
//! limits, so a restored stream's node count (`XINFO STREAM`'s
//! `radix-tree-keys`) is what these entries would make here, not
//! necessarily the writer's. Written: `STREAM_LISTPACKS_2` (Redis 7.0),
//! one node per stored node's worth of entries.

use super::blob::{self, ListpackWriter};
use super::read::{types, Read, Reader, BAD};
use super::write;
use crate::stream::{Consumer, Group, Item, Limits, Nack, Stream, StreamId, NODE_MAX_ENTRIES};
use bytes::Bytes;

/// The entry flags of a stream listpack (`STREAM_ITEM_FLAG_*`).
const DELETED: i64 = 1;
const SAME_FIELDS: i64 = 2;

/// A 16-byte stream ID: milliseconds and sequence, big-endian
/// (`streamEncodeID`).
fn raw_id(r: &mut Reader<'_>) -> Read<StreamId> {
    id_from(r.take(16)?)
}

fn id_from(raw: &[u8]) -> Read<StreamId> {
    if raw.len() != 16 {
        return Err(BAD);
    }
    let ms = u64::from_be_bytes(raw[..8].try_into().expect("8 bytes"));
    let seq = u64::from_be_bytes(raw[8..].try_into().expect("8 bytes"));
    Ok(StreamId::new(ms, seq))
}

fn encode_id(out: &mut Vec<u8>, id: StreamId) {
    out.extend_from_slice(&id.ms.to_be_bytes());
    out.extend_from_slice(&id.seq.to_be_bytes());
}

/// `rdbLoadMillisecondTime`: 8 bytes, little-endian.
fn ms_time(r: &mut Reader<'_>) -> Read<u64> {
    Ok(u64::from_le_bytes(r.take(8)?.try_into().map_err(|_| BAD)?))
}

fn int(b: &Bytes) -> Read<i64> {
    crate::resp::parse_i64(b).ok_or(BAD)
}

fn count(b: &Bytes) -> Read<usize> {
    usize::try_from(int(b)?).map_err(|_| BAD)
}

/// The live entries of one node's listpack, whose entries are relative to
/// `master`.
fn node_entries(master: StreamId, lp: &[u8], out: &mut Vec<Item>) -> Read<()> {
    let e = blob::listpack(lp).ok_or(BAD)?;
    let at = |i: usize| e.get(i).ok_or(BAD);
    // The master entry: live count, deleted count, the master fields, 0.
    let total = count(at(0)?)?.checked_add(count(at(1)?)?).ok_or(BAD)?;
    let master_fields = count(at(2)?)?;
    let fields_at = 3;
    let mut i = fields_at + master_fields;
    if int(at(i)?)? != 0 {
        return Err(BAD);
    }
    i += 1;
    for _ in 0..total {
        let flags = int(at(i)?)?;
        let ms = master.ms.wrapping_add(int(at(i + 1)?)? as u64);
        let seq = master.seq.wrapping_add(int(at(i + 2)?)? as u64);
        i += 3;
        let mut fields = Vec::new();
        if flags & SAME_FIELDS != 0 {
            for k in 0..master_fields {
                fields.push(at(fields_at + k)?.clone());
                fields.push(at(i + k)?.clone());
            }
            i += master_fields;
        } else {
            let n = count(at(i)?)?;
            let pairs = e.get(i + 1..i + 1 + 2 * n).ok_or(BAD)?;
            fields.extend_from_slice(pairs);
            i += 1 + 2 * n;
        }
        at(i)?; // lp-count
        i += 1;
        if flags & DELETED == 0 {
            out.push(Item {
                id: StreamId::new(ms, seq),
                fields,
            });
        }
    }
    if i != e.len() {
        return Err(BAD);
    }
    Ok(())
}

/// A stream of RDB type `ty`.
pub(super) fn read(r: &mut Reader<'_>, ty: u8) -> Read<Stream> {
    let mut entries = Vec::new();
    let mut previous: Option<StreamId> = None;
    for _ in 0..r.count_any()? {
        let master = id_from(&r.string()?)?;
        if previous.is_some_and(|p| p >= master) {
            return Err(BAD); // nodes in order, each once
        }
        previous = Some(master);
        let lp = r.string()?;
        node_entries(master, &lp, &mut entries)?;
    }
    let length = r.len()?;
    let last_id = StreamId::new(r.len()?, r.len()?);
    let (max_deleted, entries_added) = if ty == types::STREAM_LISTPACKS {
        (StreamId::MIN, length)
    } else {
        let _first = StreamId::new(r.len()?, r.len()?); // derived here
        (StreamId::new(r.len()?, r.len()?), r.len()?)
    };
    if length != entries.len() as u64 {
        return Err(BAD);
    }
    let mut stream = Stream::default();
    for item in entries {
        if item.id <= stream.last_id() || item.id > last_id {
            return Err(BAD);
        }
        stream
            .append(item.id, &item.fields, Limits::default())
            .map_err(|_| BAD)?;
    }
    stream.set_id(last_id, Some(entries_added), Some(max_deleted));

    for _ in 0..r.count_any()? {
        let name = r.string()?;
        let last = StreamId::new(r.len()?, r.len()?);
        let entries_read = if ty == types::STREAM_LISTPACKS {
            stream.estimate_entries_read(last).map(|n| n as i64)
        } else {
            // -1 (written as a 64-bit length) is "unknown".
            Some(r.len()? as i64).filter(|&n| n >= 0)
        };
        let mut group = Group::new(last, entries_read);
        let mut owners: Vec<StreamId> = Vec::new();
        for _ in 0..r.count_any()? {
            let id = raw_id(r)?;
            let delivery_time = ms_time(r)?;
            let delivery_count = r.len()?;
            let nack = Nack {
                consumer: Bytes::new(), // set by its consumer below
                delivery_time,
                delivery_count,
            };
            if group.pel.insert(id, nack).is_some() {
                return Err(BAD);
            }
            owners.push(id);
        }
        for _ in 0..r.count_any()? {
            let consumer = r.string()?;
            let seen_time = ms_time(r)?;
            if ty == types::STREAM_LISTPACKS_3 {
                ms_time(r)?; // active time (7.2): not kept here
            }
            let mut pel = std::collections::BTreeSet::new();
            for _ in 0..r.count_any()? {
                let id = raw_id(r)?;
                let nack = group.pel.get_mut(&id).ok_or(BAD)?;
                if !nack.consumer.is_empty() || !pel.insert(id) {
                    return Err(BAD); // owned twice
                }
                nack.consumer = consumer.clone();
            }
            if group
                .consumers
                .insert(consumer, Consumer { seen_time, pel })
                .is_some()
            {
                return Err(BAD);
            }
        }
        // Every pending entry has an owner (Redis checks it when it
        // sanitizes payloads; an entry without one could not be claimed).
        if owners.iter().any(|id| group.pel[id].consumer.is_empty()) {
            return Err(BAD);
        }
        let groups = stream.groups_mut().map_err(|_| BAD)?;
        if groups.insert(name, group).is_some() {
            return Err(BAD);
        }
    }
    Ok(stream)
}

/// Appends `s` as `STREAM_LISTPACKS_2` (after its type byte).
pub(super) fn write(out: &mut Vec<u8>, s: &Stream) -> Result<(), crate::packed::Corrupt> {
    let entries = s.range(StreamId::MIN, StreamId::MAX, usize::MAX)?;
    let nodes: Vec<&[Item]> = entries.chunks(NODE_MAX_ENTRIES as usize).collect();
    write::len(out, nodes.len() as u64);
    for node in nodes {
        let master = &node[0];
        let mut key = Vec::with_capacity(16);
        encode_id(&mut key, master.id);
        write::string(out, &key);
        write::string(out, &node_listpack(master, node));
    }
    write::len(out, s.len());
    for n in [
        s.last_id().ms,
        s.last_id().seq,
        s.first_id().ms,
        s.first_id().seq,
        s.max_deleted_id().ms,
        s.max_deleted_id().seq,
        s.entries_added(),
    ] {
        write::len(out, n);
    }
    let groups = s.groups()?;
    write::len(out, groups.len() as u64);
    for (name, g) in groups {
        write::string(out, name);
        write::len(out, g.last_id.ms);
        write::len(out, g.last_id.seq);
        write::len(out, g.entries_read.map_or(u64::MAX, |n| n as u64));
        write::len(out, g.pel.len() as u64);
        for (id, nack) in &g.pel {
            encode_id(out, *id);
            out.extend_from_slice(&nack.delivery_time.to_le_bytes());
            write::len(out, nack.delivery_count);
        }
        write::len(out, g.consumers.len() as u64);
        for (name, c) in &g.consumers {
            write::string(out, name);
            out.extend_from_slice(&c.seen_time.to_le_bytes());
            write::len(out, c.pel.len() as u64);
            for id in &c.pel {
                encode_id(out, *id);
            }
        }
    }
    Ok(())
}

/// One node as Redis lays it out (`streamAppendItem`): the master entry
/// (live and deleted counts, the first entry's field names, a 0), then
/// each entry: flags, ID deltas, its values alone when its fields are the
/// master's (`SAMEFIELDS`) or its count, fields and values, then how many
/// elements it took (`lp-count`).
fn node_listpack(master: &Item, node: &[Item]) -> Vec<u8> {
    let names: Vec<&Bytes> = master.fields.iter().step_by(2).collect();
    let mut lp = ListpackWriter::default();
    lp.int(node.len() as i64);
    lp.int(0);
    lp.int(names.len() as i64);
    for name in &names {
        lp.string(name);
    }
    lp.int(0);
    for item in node {
        let same = item.fields.len() == 2 * names.len()
            && item
                .fields
                .iter()
                .step_by(2)
                .zip(&names)
                .all(|(a, b)| a == *b);
        lp.int(if same { SAME_FIELDS } else { 0 });
        lp.int(item.id.ms.wrapping_sub(master.id.ms) as i64);
        lp.int(item.id.seq.wrapping_sub(master.id.seq) as i64);
        let n = item.fields.len() / 2;
        if same {
            for value in item.fields.iter().skip(1).step_by(2) {
                lp.string(value);
            }
            lp.int(n as i64 + 3);
        } else {
            lp.int(n as i64);
            for f in &item.fields {
                lp.string(f);
            }
            lp.int(2 * n as i64 + 4);
        }
    }
    lp.finish()
}
