//! Property tests of the tuned copy and fill at random sizes up to 4 MiB,
//! random offsets and random non-temporal thresholds, against the standard
//! library, with the bytes just outside the destination checked untouched.

use kdelta::testing::mem::Tuned;
use proptest::prelude::*;

const SIDE: usize = 64;

fn thresholds(n: usize) -> [usize; 3] {
    [0, n / 2, usize::MAX]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn copy_matches_reference(n in 0usize..(4 << 20), so in 0usize..64, dof in 0usize..64, seed in any::<u8>(), which in 0usize..3) {
        let src: Vec<u8> = (0..n + so).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) % 251).collect();
        for t in Tuned::available().into_iter().filter_map(Tuned::with_variant) {
            let mut dst = vec![0xFFu8; SIDE + dof + n + SIDE];
            t.copy(&mut dst[SIDE + dof..SIDE + dof + n], &src[so..], thresholds(n)[which]);
            prop_assert!(dst[SIDE + dof..SIDE + dof + n] == src[so..], "{:?}", t.variant());
            prop_assert!(dst[..SIDE + dof].iter().chain(&dst[SIDE + dof + n..]).all(|&b| b == 0xFF), "{:?} wrote outside", t.variant());
        }
    }

    #[test]
    fn set_matches_reference(n in 0usize..(4 << 20), dof in 0usize..64, c in 0u8..255, which in 0usize..3) {
        for t in Tuned::available().into_iter().filter_map(Tuned::with_variant) {
            let mut dst = vec![0xFFu8; SIDE + dof + n + SIDE];
            t.set(&mut dst[SIDE + dof..SIDE + dof + n], c, thresholds(n)[which]);
            prop_assert!(dst[SIDE + dof..SIDE + dof + n].iter().all(|&b| b == c), "{:?}", t.variant());
            prop_assert!(dst[..SIDE + dof].iter().chain(&dst[SIDE + dof + n..]).all(|&b| b == 0xFF), "{:?} wrote outside", t.variant());
        }
    }
}
