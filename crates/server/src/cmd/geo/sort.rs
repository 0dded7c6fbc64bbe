//! The two sorts Redis orders search results with, ported so that points
//! at equal distances come out in Redis's order:
//!
//! - a full sort goes through the C library's `qsort`, which in glibc
//!   (before 2.37, Debian 12's 2.36 included) is a top-down merge sort,
//!   taking the left element unless the comparator says it is greater
//!   ([`merge_sort`]: stable);
//! - a partial one (`COUNT` below the number found) through Redis's
//!   `pqsort`, Bentley and McIlroy's quicksort that only recurses into
//!   partitions overlapping the wanted ranks ([`partial_sort`]: not
//!   stable).
//!
//! Both take a C-style comparator (negative, zero, positive).

use std::cmp::min;

/// glibc's `msort_with_tmp`: sorts `v` by `cmp`, ties (and any element the
/// comparator does not call greater) kept in order.
pub fn merge_sort<T: Copy>(v: &mut [T], cmp: &impl Fn(&T, &T) -> i32) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    merge_sort(&mut v[..n1], cmp);
    merge_sort(&mut v[n1..], cmp);
    let mut tmp = Vec::with_capacity(n);
    let (mut i, mut j) = (0, n1);
    while i < n1 && j < n {
        if cmp(&v[i], &v[j]) <= 0 {
            tmp.push(v[i]);
            i += 1;
        } else {
            tmp.push(v[j]);
            j += 1;
        }
    }
    tmp.extend_from_slice(&v[i..n1]);
    // What is left of the right half is already in place.
    let done = tmp.len();
    v[..done].copy_from_slice(&tmp);
}

/// Redis's `pqsort(v, n, cmp, lrange, rrange)`: after it, ranks
/// `lrange..=rrange` hold what a full sort would put there (ties in
/// quicksort's order).
pub fn partial_sort<T>(v: &mut [T], cmp: &impl Fn(&T, &T) -> i32, lrange: usize, rrange: usize) {
    let n = v.len();
    pqsort(v, 0, n, cmp, lrange, rrange);
}

/// `med3`: the index of the median of three.
fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> i32) -> usize {
    if cmp(&v[a], &v[b]) < 0 {
        if cmp(&v[b], &v[c]) < 0 {
            b
        } else if cmp(&v[a], &v[c]) < 0 {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]) > 0 {
        b
    } else if cmp(&v[a], &v[c]) < 0 {
        a
    } else {
        c
    }
}

/// `vecswap`: swaps `n` elements from `a` with `n` from `b`, one pair at
/// a time in order.
fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

/// True when the partition `start..start + len` holds no wanted rank
/// (both ends of the wanted ranks before it, or both after it).
fn outside(start: usize, len: usize, lrange: usize, rrange: usize) -> bool {
    (lrange < start && rrange < start) || (lrange >= start + len && rrange >= start + len)
}

/// `_pqsort` on `v[a..a + n]`, element indexes for C's byte pointers.
fn pqsort<T>(
    v: &mut [T],
    mut a: usize,
    mut n: usize,
    cmp: &impl Fn(&T, &T) -> i32,
    lrange: usize,
    rrange: usize,
) {
    loop {
        if n < 7 {
            for pm in a + 1..a + n {
                let mut pl = pm;
                while pl > a && cmp(&v[pl - 1], &v[pl]) > 0 {
                    v.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
            return;
        }
        let mut pm = a + n / 2;
        if n > 7 {
            let mut pl = a;
            let mut pn = a + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(a, pm);
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a + n - 1, a + n - 1);
        loop {
            while pb <= pc {
                let r = cmp(&v[pb], &v[a]);
                if r > 0 {
                    break;
                }
                if r == 0 {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let r = cmp(&v[pc], &v[a]);
                if r < 0 {
                    break;
                }
                if r == 0 {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = a + n;
        let r = min(pa - a, pb - pa);
        vecswap(v, a, pb - r, r);
        let r = min(pd - pc, pn - pd - 1);
        vecswap(v, pb, pn - r, r);
        let r = pb - pa;
        if r > 1 && !outside(a, r, lrange, rrange) {
            pqsort(v, a, r, cmp, lrange, rrange);
        }
        let r = pd - pc;
        if r > 1 {
            a = pn - r;
            n = r;
            if !outside(a, n, lrange, rrange) {
                continue;
            }
        }
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn by_key(a: &(u8, usize), b: &(u8, usize)) -> i32 {
        a.0.cmp(&b.0) as i32
    }

    proptest! {
        #[test]
        fn merge_sort_is_a_stable_sort(keys in prop::collection::vec(0u8..8, 0..200)) {
            let mut v: Vec<(u8, usize)> = keys.iter().copied().zip(0..).collect();
            let mut want = v.clone();
            want.sort_by_key(|x| x.0);
            merge_sort(&mut v, &by_key);
            prop_assert_eq!(v, want);
        }

        #[test]
        fn partial_sort_orders_the_wanted_ranks(
            keys in prop::collection::vec(0u8..50, 1..300),
            upto in 0usize..300,
        ) {
            let mut v: Vec<(u8, usize)> = keys.iter().copied().zip(0..).collect();
            let upto = upto % v.len();
            let mut want: Vec<u8> = keys.clone();
            want.sort();
            partial_sort(&mut v, &by_key, 0, upto);
            let got: Vec<u8> = v[..=upto].iter().map(|x| x.0).collect();
            prop_assert_eq!(&got[..], &want[..=upto]);
            // A permutation of what it was given.
            let mut ids: Vec<usize> = v.iter().map(|x| x.1).collect();
            ids.sort();
            prop_assert_eq!(ids, (0..keys.len()).collect::<Vec<_>>());
        }
    }

    #[test]
    fn partial_sort_puts_ties_in_quicksorts_order() {
        // Worked by hand through Redis's pqsort (insertion sort below
        // seven elements: ties keep their order there).
        let mut v = [(2, 0), (1, 1), (2, 2), (1, 3)];
        partial_sort(&mut v, &by_key, 0, 1);
        assert_eq!(v, [(1, 1), (1, 3), (2, 0), (2, 2)]);
    }
}
