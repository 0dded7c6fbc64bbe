use super::*;
use crate::packed::encode_items;
use crate::test_rng::Lcg;

fn list(n: usize) -> List {
    let mut l = List::default();
    for i in 0..n {
        l.push(End::Right, Bytes::from(i.to_string())).unwrap();
    }
    l
}

fn all(l: &List) -> Vec<Bytes> {
    l.to_items().unwrap().into_iter().collect()
}

#[test]
fn spans_follow_redis() {
    let l = list(5);
    assert_eq!(l.span(0, -1), 0..5);
    assert_eq!(l.span(-2, -1), 3..5);
    assert_eq!(l.span(-100, 1), 0..2);
    assert_eq!(l.span(3, 100), 3..5);
    assert_eq!(l.span(4, 3), 0..0);
    assert_eq!(l.span(5, 10), 0..0);
    assert_eq!(l.span(0, -6), 0..0);
    assert_eq!(list(0).span(0, -1), 0..0);
    assert_eq!(l.position(-1), Some(4));
    assert_eq!(l.position(5), None);
    assert_eq!(l.position(-6), None);
}

#[test]
fn round_trips_through_nodes() {
    let l = list(1000);
    let back = List::decode(&l.encode()).unwrap();
    assert_eq!(all(&back), all(&l));
    assert_eq!(back.len(), 1000);
    assert_eq!(back.get(0).unwrap().unwrap(), "0");
    assert_eq!(back.get(999).unwrap().unwrap(), "999");
    assert_eq!(back.get(1000).unwrap(), None);
    assert_eq!(
        back.range(126..131).unwrap(),
        ["126", "127", "128", "129", "130"]
    );
    assert!(List::decode(&List::default().encode()).unwrap().is_empty());
}

#[test]
fn lists_stored_in_the_older_layout_still_read() {
    let items: Vec<Bytes> = ["a", "b", "c"].into_iter().map(Bytes::from).collect();
    let mut old = List::decode(&encode_items(items.iter())).unwrap();
    assert_eq!(all(&old), items);
    old.push(End::Left, "z".into()).unwrap();
    assert_eq!(old.take_patch(), None, "no patch against the older layout");
    let now = List::decode(&old.encode()).unwrap();
    assert_eq!(now.range(0..4).unwrap(), ["z", "a", "b", "c"]);
}

#[test]
fn nodes_close_at_their_element_and_byte_limits() {
    let raw = list(chunked::NODE_ITEMS as usize + 1).encode();
    assert_eq!(u64::from_le_bytes(raw[9..17].try_into().unwrap()), 2);
    let mut big = List::default();
    big.push(End::Right, Bytes::from(vec![b'x'; 20_000]))
        .unwrap();
    big.push(End::Right, "small".into()).unwrap();
    big.push(End::Left, "head".into()).unwrap();
    let raw = big.encode();
    assert_eq!(u64::from_le_bytes(raw[9..17].try_into().unwrap()), 3);
    let back = List::decode(&raw).unwrap();
    assert_eq!(back.get(1).unwrap().unwrap().len(), 20_000);
    assert_eq!(back.range(2..3).unwrap(), ["small"]);
}

#[test]
fn a_patch_applied_to_the_bytes_before_gives_the_bytes_after() {
    let mut rng = Lcg(3);
    let mut bytes = List::default().encode();
    let mut model: VecDeque<Bytes> = VecDeque::new();
    for round in 0..500 {
        let mut l = List::decode(&bytes).unwrap();
        for _ in 0..1 + rng.next(6) {
            let end = if rng.next(2) == 0 {
                End::Left
            } else {
                End::Right
            };
            if rng.next(3) == 0 {
                let popped = l.pop(end).unwrap();
                let want = match end {
                    End::Left => model.pop_front(),
                    End::Right => model.pop_back(),
                };
                assert_eq!(popped, want);
            } else {
                let size = [1, 10, 100, 3000, 9000][rng.next(5) as usize];
                let item = Bytes::from(format!("{round}:{}", "y".repeat(size)));
                l.push(end, item.clone()).unwrap();
                match end {
                    End::Left => model.push_front(item),
                    End::Right => model.push_back(item),
                }
            }
        }
        let patch = l.take_patch();
        let after = l.encode();
        match patch {
            Some(patch) => {
                assert_eq!(
                    patch::apply(&bytes, &patch).unwrap(),
                    after,
                    "round {round}"
                )
            }
            None => assert_eq!(after, bytes, "round {round}"),
        }
        bytes = after;
        assert_eq!(
            all(&List::decode(&bytes).unwrap()),
            Vec::from(model.clone())
        );
    }
}

#[test]
fn damage_is_an_error_where_it_is_read() {
    let l = list(300);
    let raw = l.encode();
    let read_all = |b: &Bytes| List::decode(b).and_then(|l| l.to_items().map(|_| ()));
    assert!(read_all(&raw).is_ok());
    for cut in 0..raw.len() {
        assert!(read_all(&raw.slice(..cut)).is_err(), "cut at {cut}");
    }
    let mut huge = raw.to_vec();
    huge[9..17].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(List::decode(&Bytes::from(huge)).is_err());
    // A node whose count disagrees with its body.
    let mut lying = raw.to_vec();
    lying[17..25].copy_from_slice(&7u64.to_le_bytes());
    let l = List::decode(&Bytes::from(lying)).unwrap();
    assert!(l.to_items().is_err());
    // A patch that does not fit its base.
    let mut one = List::decode(&list(1).encode()).unwrap();
    one.pop(End::Left).unwrap();
    one.pop(End::Left).unwrap();
    let patch = patch::encode(&[patch::Op::Pop(End::Left, 2)]);
    assert!(patch::apply(&list(1).encode(), &patch).is_err());
    assert!(patch::apply(&raw, &Bytes::from_static(b"\x09\x00")).is_err());
}

#[test]
fn taking_every_node_out_from_both_ends_keeps_the_order() {
    // Three stored nodes, emptied alternately from each end, then refilled
    // at both ends; the list and its patch agree with a model throughout.
    let n = (chunked::NODE_ITEMS * 3) as usize;
    let base = list(n).encode();
    let mut l = List::decode(&base).unwrap();
    let mut model: VecDeque<Bytes> = all(&l).into();
    for i in 0..n {
        let end = if i % 2 == 0 { End::Left } else { End::Right };
        let want = match end {
            End::Left => model.pop_front(),
            End::Right => model.pop_back(),
        };
        assert_eq!(l.pop(end).unwrap(), want, "pop {i}");
    }
    assert!(l.is_empty());
    assert_eq!(l.pop(End::Left).unwrap(), None);
    for i in 0..300 {
        let item = Bytes::from(format!("new{i}"));
        if i % 3 == 0 {
            l.push(End::Left, item.clone()).unwrap();
            model.push_front(item);
        } else {
            l.push(End::Right, item.clone()).unwrap();
            model.push_back(item);
        }
    }
    assert_eq!(all(&l), Vec::from(model.clone()));
    assert_eq!(
        l.range(100..103).unwrap(),
        Vec::from(model).drain(100..103).collect::<Vec<_>>()
    );
    let patch = l.take_patch().unwrap();
    assert_eq!(patch::apply(&base, &patch).unwrap(), l.encode());
}
