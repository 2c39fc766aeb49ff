//! [`WorldLayout`]: world size, this PE's rank and the node size, and the predefined teams they
//! imply.

use crate::error::TeamError;
use crate::id::TeamId;
use crate::stride::Stride;

/// Where this PE sits in the world: the world size, its world rank, and the node size.
///
/// niin-rs follows NCCL's LSA (load/store-accessible) team model: a node's PEs are contiguous
/// world ranks, every node holds `node_size` PEs, except that the last node may hold fewer
/// (`n_pes % node_size` of them). Node `k` is world PEs `k*node_size ..
/// min((k+1)*node_size, n_pes)`. There is one PE per GPU.
///
/// Valid layouts have `n_pes >= 1`, `0 <= my_pe < n_pes` and `1 <= node_size <= n_pes`;
/// [`WorldLayout::new`] refuses anything else with [`TeamError::BadLayout`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorldLayout {
    /// Number of PEs in the world (`nvshmem_n_pes`).
    pub n_pes: i32,
    /// This PE's world rank (`nvshmem_my_pe`).
    pub my_pe: i32,
    /// PEs per node (LSA domain); the last node may hold fewer.
    pub node_size: i32,
}

impl WorldLayout {
    /// A validated layout.
    pub fn new(n_pes: i32, my_pe: i32, node_size: i32) -> Result<Self, TeamError> {
        let layout = WorldLayout {
            n_pes,
            my_pe,
            node_size,
        };
        layout.validate()?;
        Ok(layout)
    }

    /// A validated layout with all PEs on one node.
    pub fn single_node(n_pes: i32, my_pe: i32) -> Result<Self, TeamError> {
        Self::new(n_pes, my_pe, n_pes)
    }

    /// Checks the rules of [`WorldLayout`] (useful for a layout built with a struct literal).
    pub fn validate(&self) -> Result<(), TeamError> {
        let WorldLayout {
            n_pes,
            my_pe,
            node_size,
        } = *self;
        if n_pes < 1 || my_pe < 0 || my_pe >= n_pes || node_size < 1 || node_size > n_pes {
            return Err(TeamError::BadLayout {
                n_pes,
                my_pe,
                node_size,
            });
        }
        Ok(())
    }

    /// The same world seen from world PE `pe`.
    pub fn with_pe(&self, pe: i32) -> Result<Self, TeamError> {
        Self::new(self.n_pes, pe, self.node_size)
    }

    /// Number of nodes, the last possibly short.
    pub fn n_nodes(&self) -> i32 {
        (self.n_pes - 1) / self.node_size + 1
    }

    /// Whether every node holds exactly `node_size` PEs (NVSHMEM requires this of
    /// `NVSHMEMX_TEAM_SAME_MYPE_NODE`; niin-rs does not).
    pub fn is_uniform(&self) -> bool {
        self.n_pes % self.node_size == 0
    }

    /// This PE's node.
    pub fn node_index(&self) -> i32 {
        self.my_pe / self.node_size
    }

    /// This PE's rank within its node (NVSHMEM's `mype_node`).
    pub fn node_rank(&self) -> i32 {
        self.my_pe % self.node_size
    }

    /// World rank of the first PE of this PE's node.
    pub fn node_start(&self) -> i32 {
        self.node_index() * self.node_size
    }

    /// Number of PEs on this PE's node (NVSHMEM's `npes_node`): `node_size`, or fewer on a
    /// short last node.
    pub fn my_node_size(&self) -> i32 {
        self.node_size.min(self.n_pes - self.node_start())
    }

    /// Members of a predefined team as seen by this PE, canonical (see [`Stride`]); `None` for
    /// handles that are not predefined.
    ///
    /// * `WORLD`: all PEs, `(0, 1, n_pes)`.
    /// * `SHARED`, `NODE`: the PEs of this node, `(node_start, 1, my_node_size)`. NVSHMEM's
    ///   `SHARED` is the PEs whose heaps `nvshmem_ptr` reaches, which under the LSA model is
    ///   the node.
    /// * `SAME_MYPE_NODE`: the PEs with this node-local rank `r` on every node that has one,
    ///   `(r, node_size, count)`; NVSHMEM builds it as `(mype_node, npes_node,
    ///   npes / npes_node)` and its team PE is `mype / npes_node`, the node index.
    /// * `SAME_GPU`: just this PE, `(my_pe, 1, 1)`.
    /// * `GPU_LEADERS`: NVSHMEM builds it as `(0, same_gpu.size, npes / same_gpu.size)` when the
    ///   PEs of a GPU are contiguous; with one PE per GPU that is all PEs, `(0, 1, n_pes)`.
    pub fn predefined(&self, team: TeamId) -> Option<Stride> {
        let canonical =
            |start, stride, size| Stride::new(start, if size == 1 { 1 } else { stride }, size);
        match team {
            TeamId::WORLD | TeamId::GPU_LEADERS => Some(canonical(0, 1, self.n_pes)),
            TeamId::SHARED | TeamId::NODE => {
                Some(canonical(self.node_start(), 1, self.my_node_size()))
            }
            TeamId::SAME_MYPE_NODE => {
                let rank = self.node_rank();
                let count = (self.n_pes - rank - 1) / self.node_size + 1;
                Some(canonical(rank, self.node_size, count))
            }
            TeamId::SAME_GPU => Some(canonical(self.my_pe, 1, 1)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_accepts_uniform_and_short_last_node() {
        let l = WorldLayout::new(10, 9, 4).unwrap();
        assert_eq!((l.n_nodes(), l.node_index(), l.node_rank()), (3, 2, 1));
        assert_eq!((l.node_start(), l.my_node_size()), (8, 2));
        assert!(!l.is_uniform());
        let u = WorldLayout::new(8, 5, 4).unwrap();
        assert!(u.is_uniform());
        assert_eq!((u.n_nodes(), u.node_start(), u.my_node_size()), (2, 4, 4));
        assert_eq!(WorldLayout::single_node(3, 2).unwrap().node_size, 3);
    }

    #[test]
    fn bad_layout_is_refused() {
        for (n, me, ns) in [
            (0, 0, 1),  // empty world
            (-1, 0, 1), // negative world
            (4, -1, 1), // negative rank
            (4, 4, 1),  // my_pe >= n_pes
            (4, 0, 0),  // node_size == 0
            (4, 0, -2), // negative node size
            (4, 0, 5),  // node larger than the world
        ] {
            assert_eq!(
                WorldLayout::new(n, me, ns),
                Err(TeamError::BadLayout {
                    n_pes: n,
                    my_pe: me,
                    node_size: ns
                })
            );
        }
        let literal = WorldLayout {
            n_pes: 2,
            my_pe: 2,
            node_size: 1,
        };
        assert!(literal.validate().is_err());
        assert!(WorldLayout::new(4, 0, 2).unwrap().with_pe(4).is_err());
    }

    #[test]
    fn predefined_of_short_last_node() {
        // Nodes {0 1 2} {3 4 5} {6}; PE 4 has node rank 1.
        let l = WorldLayout::new(7, 4, 3).unwrap();
        assert_eq!(l.predefined(TeamId::NODE).unwrap().to_vec(), vec![3, 4, 5]);
        assert_eq!(
            l.predefined(TeamId::SAME_MYPE_NODE).unwrap().to_vec(),
            vec![1, 4]
        );
        let last = l.with_pe(6).unwrap();
        assert_eq!(
            last.predefined(TeamId::SHARED).unwrap(),
            Stride::new(6, 1, 1)
        );
        assert_eq!(
            last.predefined(TeamId::SAME_MYPE_NODE).unwrap().to_vec(),
            vec![0, 3, 6]
        );
        assert_eq!(l.predefined(TeamId::FIRST_USER), None);
        assert_eq!(l.predefined(TeamId::INVALID), None);
    }
}
