//! LSA peers' heap addresses without `ncclGetPeerDevicePointer` (NCCL 2.28, which added
//! the device API but not the host's queries of it; see `NCCL-VERSIONS.md`).
//!
//! NCCL maps every member of an LSA team's copy of a window into one flat range per
//! process: member `i`'s copy starts at `lsaFlatBase + i * stride`, the layout the device
//! API's `ncclGetLsaPointer` reads from the window's device-side descriptor, the
//! `ncclWindow_vidmem` that a 2.28 `ncclWindow_t` points to (device memory NCCL writes
//! before `ncclCommWindowRegister` returns). The host reads the descriptor's first
//! [`PREFIX_BYTES`] (the same fields, in the same order, in 2.28.3, 2.28.9 and 2.31.2):
//!
//! | offset | field | use |
//! | --- | --- | --- |
//! | 0 | `void* winHost` | — |
//! | 8 | `char* lsaFlatBase` | LSA member 0's copy of the window |
//! | 16 | `int lsaRank` | this PE's index in its LSA team |
//! | 20 | `int worldRank` | checked: this PE's rank |
//! | 24 | `uint32_t stride4G` | distance between members' copies, in 4 GiB |
//! | 28 | `uint32_t mcOffset4K` | — |
//!
//! Every PE's `lsaRank` is then shared (one all-reduce), which gives the LSA team: NCCL's
//! LSA teams are runs of consecutive ranks, so PE `p` is in this PE's team exactly when
//! `p - lsaRank(p)` equals this PE's `rank - lsaRank`. Pure decoding here, tested on the
//! CPU; `LsaTransport::new` does the copy and the all-reduce.

/// The variable that picks where the host learns LSA peers' heap addresses.
pub const PEER_ADDRESSES_VAR: &str = "NIIN_PEER_ADDRESSES";

/// Bytes of the window descriptor the host reads.
pub(super) const PREFIX_BYTES: usize = 32;

/// Where the LSA peers' heap addresses come from (`NIIN_PEER_ADDRESSES`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerAddresses {
    /// `auto` (the default): `ncclGetPeerDevicePointer` where NCCL has it (2.29.2+), the
    /// window's device-side descriptor otherwise.
    Auto,
    /// `descriptor`: always the descriptor, so that the path NCCL 2.28 takes can be run
    /// and checked with a newer NCCL (whose descriptor starts with the same fields).
    Descriptor,
}

impl PeerAddresses {
    /// Parses the variable's value (unset: `Auto`); an error names a bad value.
    pub fn parse(value: Option<&str>) -> Result<PeerAddresses, crate::env::BadChoice> {
        let modes = [
            ("auto", PeerAddresses::Auto),
            ("descriptor", PeerAddresses::Descriptor),
        ];
        crate::env::choice(PEER_ADDRESSES_VAR, value, &modes)
    }
}

/// One window's flat layout as this process sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FlatLayout {
    /// LSA member 0's copy of the window.
    pub(super) flat_base: u64,
    /// Bytes between consecutive members' copies.
    pub(super) stride: u64,
    /// This PE's index in its LSA team.
    pub(super) lsa_rank: usize,
}

impl FlatLayout {
    /// Decodes the descriptor prefix `bytes` read for the PE `rank` of `n_ranks`; the
    /// error says which field is not what a descriptor of this PE holds.
    pub(super) fn decode(
        bytes: &[u8; PREFIX_BYTES],
        rank: usize,
        n_ranks: usize,
    ) -> Result<FlatLayout, String> {
        let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
        let i32_at = |o: usize| i32::from_le_bytes(bytes[o..o + 4].try_into().expect("4 bytes"));
        let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().expect("4 bytes"));
        let (flat_base, lsa_rank, world_rank, stride4g) =
            (u64_at(8), i32_at(16), i32_at(20), u32_at(24));
        let layout = format!(
            "lsaFlatBase {flat_base:#x}, lsaRank {lsa_rank}, worldRank {world_rank}, stride4G {stride4g}"
        );
        if usize::try_from(world_rank).ok() != Some(rank) {
            return Err(format!(
                "the window descriptor names rank {world_rank}, not this PE's {rank} ({layout}): \
                 this NCCL lays it out differently"
            ));
        }
        let lsa_rank = usize::try_from(lsa_rank)
            .ok()
            .filter(|&l| l <= rank && l < n_ranks)
            .ok_or_else(|| {
                format!("the window descriptor's LSA rank is out of 0..={rank} ({layout})")
            })?;
        if flat_base == 0 || stride4g == 0 {
            return Err(format!(
                "the window descriptor has no flat range ({layout}): NCCL did not map the \
                 window for its LSA team"
            ));
        }
        Ok(FlatLayout {
            flat_base,
            stride: u64::from(stride4g) << 32,
            lsa_rank,
        })
    }

    /// The address of LSA member `index`'s copy of the window; `None` on overflow.
    pub(super) fn address(&self, index: usize) -> Option<u64> {
        (index as u64)
            .checked_mul(self.stride)
            .and_then(|d| d.checked_add(self.flat_base))
    }
}

/// For every PE, given every PE's LSA rank (`lsa_ranks[p]`), whether it is in `me`'s LSA
/// team (the run of ranks `me - lsa_ranks[me] ..`). `me` is always a member.
pub(super) fn lsa_team(lsa_ranks: &[usize], me: usize) -> Vec<bool> {
    let start = me.checked_sub(lsa_ranks[me]);
    lsa_ranks
        .iter()
        .enumerate()
        .map(|(p, &l)| p.checked_sub(l) == start)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefix(flat: u64, lsa_rank: i32, world: i32, stride4g: u32) -> [u8; PREFIX_BYTES] {
        let mut b = [0u8; PREFIX_BYTES];
        b[0..8].copy_from_slice(&0xdead_beefu64.to_le_bytes());
        b[8..16].copy_from_slice(&flat.to_le_bytes());
        b[16..20].copy_from_slice(&lsa_rank.to_le_bytes());
        b[20..24].copy_from_slice(&world.to_le_bytes());
        b[24..28].copy_from_slice(&stride4g.to_le_bytes());
        b[28..32].copy_from_slice(&7u32.to_le_bytes());
        b
    }

    #[test]
    fn decodes_the_fields_and_gives_each_members_copy() {
        let l = FlatLayout::decode(&prefix(0x7f00_0000_0000, 1, 5, 24), 5, 8).unwrap();
        assert_eq!(
            l,
            FlatLayout {
                flat_base: 0x7f00_0000_0000,
                stride: 24 << 32,
                lsa_rank: 1
            }
        );
        assert_eq!(l.address(0), Some(0x7f00_0000_0000));
        assert_eq!(l.address(3), Some(0x7f00_0000_0000 + 3 * (24u64 << 32)));
        assert_eq!(l.address(usize::MAX), None);
    }

    #[test]
    fn refuses_a_descriptor_that_is_not_this_pes() {
        let e = FlatLayout::decode(&prefix(0x1000, 0, 3, 1), 2, 4).unwrap_err();
        assert!(e.contains("names rank 3, not this PE's 2"), "{e}");
        let e = FlatLayout::decode(&prefix(0x1000, 3, 2, 1), 2, 4).unwrap_err();
        assert!(e.contains("LSA rank is out of 0..=2"), "{e}");
        let e = FlatLayout::decode(&prefix(0x1000, -1, 2, 1), 2, 4).unwrap_err();
        assert!(e.contains("lsaRank -1"), "{e}");
        let e = FlatLayout::decode(&prefix(0, 0, 0, 1), 0, 2).unwrap_err();
        assert!(e.contains("no flat range"), "{e}");
        let e = FlatLayout::decode(&prefix(0x1000, 0, 0, 0), 0, 2).unwrap_err();
        assert!(e.contains("stride4G 0"), "{e}");
    }

    #[test]
    fn lsa_teams_are_runs_of_consecutive_ranks() {
        // Two nodes of 4: ranks 0-3 and 4-7.
        let ranks = [0, 1, 2, 3, 0, 1, 2, 3];
        assert_eq!(
            lsa_team(&ranks, 1),
            [true, true, true, true, false, false, false, false]
        );
        assert_eq!(
            lsa_team(&ranks, 6),
            [false, false, false, false, true, true, true, true]
        );
        // One PE per team.
        assert_eq!(lsa_team(&[0, 0, 0], 1), [false, true, false]);
    }

    #[test]
    fn the_variable_parses_and_names_a_bad_value() {
        assert_eq!(PeerAddresses::parse(None).unwrap(), PeerAddresses::Auto);
        assert_eq!(
            PeerAddresses::parse(Some("auto")).unwrap(),
            PeerAddresses::Auto
        );
        assert_eq!(
            PeerAddresses::parse(Some(" descriptor ")).unwrap(),
            PeerAddresses::Descriptor
        );
        let e = PeerAddresses::parse(Some("ipc")).unwrap_err().to_string();
        assert!(e.contains("NIIN_PEER_ADDRESSES=\"ipc\""), "{e}");
    }
}
