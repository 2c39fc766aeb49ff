//! [`Stride`]: a team's membership as a `(start, stride, size)` triplet of world PE numbers.

use crate::error::TeamError;

/// A team's members in `NVSHMEM_TEAM_WORLD` PE numbers: team PE `i` (for `0 <= i < size`) is
/// world PE `start + i * stride`.
///
/// Every team niin-rs can create is of this form: the predefined teams are, and a strided split
/// of a strided team is strided again (see [`Stride::sub_team`]). Teams produced by this crate
/// are canonical: `size >= 1`, `stride >= 1`, and `stride == 1` whenever `size == 1`, so two
/// teams with the same members have equal `Stride`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stride {
    /// World PE of team PE 0.
    pub start: i32,
    /// Distance in world PE numbers between consecutive team PEs.
    pub stride: i32,
    /// Number of PEs in the team.
    pub size: i32,
}

impl Stride {
    /// The triplet `(start, stride, size)`, taken as given.
    pub const fn new(start: i32, stride: i32, size: i32) -> Self {
        Stride {
            start,
            stride,
            size,
        }
    }

    /// World PE of team PE `i`; `None` when `i` is not in `0..size`.
    pub fn world_pe(&self, i: i32) -> Option<i32> {
        if i < 0 || i >= self.size {
            return None;
        }
        i32::try_from(i64::from(self.start) + i64::from(i) * i64::from(self.stride)).ok()
    }

    /// Team PE number of world PE `world_pe`; `None` when it is not a member.
    pub fn index_of(&self, world_pe: i32) -> Option<i32> {
        if self.size <= 0 {
            return None;
        }
        let offset = i64::from(world_pe) - i64::from(self.start);
        if self.stride == 0 {
            return (offset == 0).then_some(0);
        }
        let stride = i64::from(self.stride);
        if offset % stride != 0 {
            return None;
        }
        let i = offset / stride;
        if i >= 0 && i < i64::from(self.size) {
            i32::try_from(i).ok()
        } else {
            None
        }
    }

    /// Whether world PE `world_pe` is a member.
    pub fn contains(&self, world_pe: i32) -> bool {
        self.index_of(world_pe).is_some()
    }

    /// World PE of the last team PE (`start` for an empty triplet).
    pub fn last(&self) -> i32 {
        self.world_pe(self.size - 1).unwrap_or(self.start)
    }

    /// The members' world PE numbers, in team order.
    pub fn iter(self) -> impl Iterator<Item = i32> {
        (0..self.size.max(0)).filter_map(move |i| self.world_pe(i))
    }

    /// The members' world PE numbers, in team order, collected.
    pub fn to_vec(&self) -> Vec<i32> {
        self.iter().collect()
    }

    /// The team that `nvshmem_team_split_strided(self, start, stride, size)` creates, in world
    /// PE numbers, after NVSHMEM's argument checks.
    ///
    /// `start`, `stride` and `size` are in this team's PE numbers. Refused with
    /// [`TeamError::BadSplit`], as NVSHMEM's `nvshmemi_team_split_strided` does, when
    /// `start < 0`, `start >= self.size`, `size <= 0`, `size > self.size` or `stride < 1`; and,
    /// as OpenSHMEM 1.5 requires of a valid triplet (`start + stride*i` a parent PE for every
    /// `i < size`), when the last selected PE `start + stride*(size-1)` is `>= self.size`.
    /// (NVSHMEM itself checks the last PE only against the world size.)
    ///
    /// The result is canonical: world start `self.start + start*self.stride`, world stride
    /// `self.stride*stride`, or 1 when `size == 1`.
    pub fn sub_team(&self, start: i32, stride: i32, size: i32) -> Result<Stride, TeamError> {
        let parent_size = self.size;
        let bad = TeamError::BadSplit {
            start,
            stride,
            size,
            parent_size,
        };
        if start < 0 || start >= parent_size || size <= 0 || size > parent_size || stride < 1 {
            return Err(bad);
        }
        let last = i64::from(start) + i64::from(stride) * (i64::from(size) - 1);
        if last >= i64::from(parent_size) {
            return Err(bad);
        }
        let world_start = self.world_pe(start).ok_or(bad.clone())?;
        let world_stride = if size == 1 {
            1
        } else {
            self.stride.checked_mul(stride).ok_or(bad)?
        };
        Ok(Stride {
            start: world_start,
            stride: world_stride,
            size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn world_pe_and_index_of_are_inverse() {
        let s = Stride::new(3, 4, 5); // 3 7 11 15 19
        assert_eq!(s.to_vec(), vec![3, 7, 11, 15, 19]);
        for i in 0..5 {
            let w = s.world_pe(i).unwrap();
            assert_eq!(s.index_of(w), Some(i));
        }
        assert_eq!(s.world_pe(-1), None);
        assert_eq!(s.world_pe(5), None);
        for w in [-1, 0, 2, 4, 5, 8, 20, 23] {
            assert!(!s.contains(w), "{w}");
        }
        assert_eq!(s.last(), 19);
    }

    #[test]
    fn index_of_tolerates_non_canonical_triplets() {
        assert_eq!(Stride::new(2, 0, 1).index_of(2), Some(0));
        assert_eq!(Stride::new(2, 0, 1).index_of(3), None);
        assert_eq!(Stride::new(9, -3, 3).index_of(3), Some(2));
        assert_eq!(Stride::new(0, 1, 0).index_of(0), None);
        assert_eq!(Stride::new(0, 1, 0).to_vec(), Vec::<i32>::new());
    }

    #[test]
    fn sub_team_composes_into_world_numbers() {
        let parent = Stride::new(1, 2, 8); // 1 3 5 7 9 11 13 15
        let child = parent.sub_team(1, 3, 3).unwrap(); // parent 1 4 7 -> world 3 9 15
        assert_eq!(child, Stride::new(3, 6, 3));
        assert_eq!(child.to_vec(), vec![3, 9, 15]);
        let grandchild = child.sub_team(1, 1, 2).unwrap();
        assert_eq!(grandchild.to_vec(), vec![9, 15]);
    }

    #[test]
    fn sub_team_of_one_pe_is_canonical() {
        let parent = Stride::new(0, 3, 4);
        assert_eq!(parent.sub_team(2, 1000, 1).unwrap(), Stride::new(6, 1, 1));
        assert_eq!(
            parent.sub_team(3, i32::MAX, 1).unwrap(),
            Stride::new(9, 1, 1)
        );
    }

    #[test]
    fn sub_team_rejects_what_nvshmem_rejects() {
        let parent = Stride::new(0, 1, 4);
        let bad = |start, stride, size| {
            assert_eq!(
                parent.sub_team(start, stride, size),
                Err(TeamError::BadSplit {
                    start,
                    stride,
                    size,
                    parent_size: 4
                })
            );
        };
        bad(-1, 1, 1); // negative start
        bad(4, 1, 1); // start >= parent size
        bad(0, 1, 0); // size <= 0
        bad(0, 1, -2);
        bad(0, 1, 5); // size > parent size
        bad(0, 0, 1); // stride < 1
        bad(0, -1, 1);
        bad(1, 1, 4); // last PE beyond the parent
        bad(0, 2, 3);
        bad(3, i32::MAX, 2);
    }
}
