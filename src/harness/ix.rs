//! The index spaces of a group, as types: where they meet (`Sweep::ties`
//! takes items and configurations and gives points; a point holds one of
//! each), one cannot be passed for another. Each wraps the position in
//! its table; a table indexed by one (`points[p]`, `standing[p]`) takes it
//! directly.

use std::ops::{Index, IndexMut};

macro_rules! index_space {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub(super) struct $name(pub(super) usize);

        impl<T> Index<$name> for [T] {
            type Output = T;
            fn index(&self, i: $name) -> &T {
                &self[i.0]
            }
        }

        impl<T> IndexMut<$name> for [T] {
            fn index_mut(&mut self, i: $name) -> &mut T {
                &mut self[i.0]
            }
        }

        impl<T> Index<$name> for Vec<T> {
            type Output = T;
            fn index(&self, i: $name) -> &T {
                &self[i.0]
            }
        }

        impl<T> IndexMut<$name> for Vec<T> {
            fn index_mut(&mut self, i: $name) -> &mut T {
                &mut self[i.0]
            }
        }
    };
}

index_space!(
    /// An item of a group (its benchmark at one parameter point): a
    /// position in the group's items (`Sweep::items`).
    ItemIx
);

index_space!(
    /// A configuration that runs: a position in `Executor::ready`.
    CfgIx
);

index_space!(
    /// A point of a group (an item under a configuration): a position in
    /// `Sweep::points`, and in every table kept per point (its standing,
    /// iterations, whether a comparison of it is settled).
    PointIx
);

impl CfgIx {
    /// The first configuration: the one every other is compared against.
    pub(super) const FIRST: CfgIx = CfgIx(0);
}
