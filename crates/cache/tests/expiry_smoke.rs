use tiercache_cache::{Cache, Measure};

struct M;
impl Measure<u64, Option<u64>> for M {
    fn weight(&self, _: &u64, _: &Option<u64>) -> u64 {
        1
    }
    fn expires_at(&self, v: &Option<u64>) -> Option<u64> {
        *v
    }
}

#[test]
fn expire_due_removes_exactly_the_due_entries() {
    let c = Cache::<u64, Option<u64>>::builder(100)
        .shards(1)
        .measure(M)
        .build();
    c.insert(1, Some(100));
    c.insert(2, Some(200));
    c.insert(3, None);
    assert_eq!(c.get_at(&1, 99), Some(Some(100)));
    assert_eq!(c.get_at(&1, 100), None);
    assert_eq!(c.expire_due(150, 10), 1);
    assert_eq!(c.len(), 2);
    assert_eq!(c.expire_due(1000, 10), 1);
    assert_eq!(c.len(), 1);
    assert_eq!(c.stats().expired, 2);
}

#[test]
fn expiry_follows_an_entry_moved_by_a_removal() {
    let c = Cache::<u64, Option<u64>>::builder(100)
        .shards(1)
        .measure(M)
        .build();
    c.insert(1, None);
    c.insert(2, Some(200)); // last slot; moves into slot 0 when key 1 goes
    c.remove(&1);
    assert_eq!(c.expire_due(1000, 10), 1);
    assert!(c.is_empty());
}
