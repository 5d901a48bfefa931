//! The greedy-by-size planner: never overlaps buffers that are live together, stays aligned, and
//! never beats the lower bound.

use ember_convert::plan::greedy::GreedyBySize;
use ember_convert::plan::{align_up, lower_bound, verify, Buffer, Planner};
use proptest::prelude::*;

fn buffers() -> impl Strategy<Value = Vec<Buffer>> {
    proptest::collection::vec((0usize..5000, 0usize..40, 0usize..12), 0..40).prop_map(|v| {
        v.into_iter()
            .map(|(size, first, len)| Buffer {
                size,
                first_use: first,
                last_use: first + len,
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn greedy_never_overlaps_live_buffers(bufs in buffers()) {
        let p = GreedyBySize.plan(&bufs);
        prop_assert_eq!(verify(&bufs, &p), Ok(()));
        // Checked again here, independently of `verify`.
        for (i, a) in bufs.iter().enumerate() {
            prop_assert_eq!(p.offsets[i] % 16, 0);
            for (j, b) in bufs.iter().enumerate().skip(i + 1) {
                let live = a.first_use <= b.last_use && b.first_use <= a.last_use;
                let (ai, aj) = (p.offsets[i], p.offsets[j]);
                let apart = ai + align_up(a.size) <= aj || aj + align_up(b.size) <= ai;
                prop_assert!(!live || apart || a.size == 0 || b.size == 0, "{i} and {j} overlap");
            }
        }
    }

    #[test]
    fn greedy_total_is_at_least_the_lower_bound(bufs in buffers()) {
        let p = GreedyBySize.plan(&bufs);
        prop_assert!(p.total >= lower_bound(&bufs));
        // And never more than everything stacked.
        prop_assert!(p.total <= bufs.iter().map(|b| align_up(b.size)).sum::<usize>());
    }
}

#[test]
fn disjoint_lifetimes_share_bytes() {
    let bufs = [
        Buffer {
            size: 100,
            first_use: 0,
            last_use: 1,
        },
        Buffer {
            size: 100,
            first_use: 2,
            last_use: 3,
        },
    ];
    let p = GreedyBySize.plan(&bufs);
    assert_eq!(p.offsets, vec![0, 0]);
    assert_eq!(p.total, 112);
    assert_eq!(lower_bound(&bufs), 112);
}

#[test]
fn chain_reaches_the_lower_bound() {
    // a -> b -> c -> d, each live from its producer to its consumer.
    let sizes = [2048, 512, 1024, 256];
    let bufs: Vec<Buffer> = sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| Buffer {
            size,
            first_use: i,
            last_use: i + 1,
        })
        .collect();
    let p = GreedyBySize.plan(&bufs);
    verify(&bufs, &p).unwrap();
    assert_eq!(lower_bound(&bufs), 2048 + 512);
    assert_eq!(p.total, 2048 + 512);
}

#[test]
fn largest_goes_first_at_offset_zero() {
    let bufs = [
        Buffer {
            size: 16,
            first_use: 0,
            last_use: 5,
        },
        Buffer {
            size: 4096,
            first_use: 0,
            last_use: 5,
        },
    ];
    let p = GreedyBySize.plan(&bufs);
    assert_eq!(p.offsets, vec![4096, 0]);
}

#[test]
fn empty_plan() {
    let p = GreedyBySize.plan(&[]);
    assert_eq!((p.offsets.len(), p.total), (0, 0));
    assert_eq!(lower_bound(&[]), 0);
}
