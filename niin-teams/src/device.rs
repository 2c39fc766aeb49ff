//! [`DeviceTeam`] and [`DeviceTeamTable`]: the plain, copyable form of a PE's team table that
//! device code reads.

use crate::id::TeamId;

/// One team as device code sees it: `#[repr(C)]`, four `i32`s, 16 bytes, align 4.
///
/// Matches the C struct `struct { int32_t start, stride, size, my_pe; }`. Membership is as in
/// [`Stride`](crate::Stride): team PE `i` is world PE `start + i*stride`. `my_pe` is this PE's
/// number in the team. An unused slot is [`DeviceTeam::UNUSED`]: `size == 0` (device code
/// tests this) and `my_pe == -1`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DeviceTeam {
    /// World PE of team PE 0.
    pub start: i32,
    /// Distance in world PE numbers between consecutive team PEs.
    pub stride: i32,
    /// Number of PEs; 0 marks an unused slot.
    pub size: i32,
    /// This PE's number in the team; -1 when not a member (unused slot).
    pub my_pe: i32,
}

impl DeviceTeam {
    /// Size in bytes of one entry.
    pub const SIZE_BYTES: usize = 16;

    /// An unused slot: everything 0 except `my_pe = -1`.
    pub const UNUSED: DeviceTeam = DeviceTeam {
        start: 0,
        stride: 0,
        size: 0,
        my_pe: -1,
    };

    /// Whether the slot holds a team (`size > 0`).
    pub const fn is_used(&self) -> bool {
        self.size > 0
    }

    /// The entry as 16 bytes: `start`, `stride`, `size`, `my_pe`, each little-endian.
    pub fn to_le_bytes(&self) -> [u8; Self::SIZE_BYTES] {
        let mut out = [0u8; Self::SIZE_BYTES];
        for (chunk, v) in
            out.chunks_exact_mut(4)
                .zip([self.start, self.stride, self.size, self.my_pe])
        {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// The entry of 16 bytes as written by [`DeviceTeam::to_le_bytes`].
    pub fn from_le_bytes(bytes: [u8; Self::SIZE_BYTES]) -> Self {
        let field =
            |i: usize| i32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        DeviceTeam {
            start: field(0),
            stride: field(4),
            size: field(8),
            my_pe: field(12),
        }
    }
}

/// A PE's whole team table in device form, indexed by handle (`teams[team.0]`).
///
/// Entries `0..6` are the predefined teams; later entries are user slots, [`DeviceTeam::UNUSED`]
/// where this PE holds no team. The table ends at the highest live handle. Copy it to device
/// memory with [`to_bytes`](DeviceTeamTable::to_bytes): `16 * len()` bytes, entry `k` at byte
/// offset `16*k`, fields `start, stride, size, my_pe` as little-endian `i32`s, which on a
/// little-endian host (x86-64, aarch64) is exactly the memory image of `[DeviceTeam]` and of the
/// C array `struct { int32_t start, stride, size, my_pe; }[len]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceTeamTable {
    /// The entries, indexed by handle.
    pub teams: Vec<DeviceTeam>,
}

impl DeviceTeamTable {
    /// The entries, indexed by handle.
    pub fn as_slice(&self) -> &[DeviceTeam] {
        &self.teams
    }

    /// Number of entries (highest live handle + 1).
    pub fn len(&self) -> usize {
        self.teams.len()
    }

    /// Whether there are no entries (never the case for a table from
    /// [`TeamTable::device_table`](crate::TeamTable::device_table)).
    pub fn is_empty(&self) -> bool {
        self.teams.is_empty()
    }

    /// The entry of `team`; `None` past the end or for negative handles.
    pub fn get(&self, team: TeamId) -> Option<&DeviceTeam> {
        self.teams.get(team.index()?)
    }

    /// The table as bytes for copying to device memory (layout in [`DeviceTeamTable`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.teams.iter().flat_map(|t| t.to_le_bytes()).collect()
    }

    /// The table from bytes written by [`to_bytes`](DeviceTeamTable::to_bytes); `None` when the
    /// length is not a multiple of 16.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        if bytes.len() % DeviceTeam::SIZE_BYTES != 0 {
            return None;
        }
        let teams = bytes
            .chunks_exact(DeviceTeam::SIZE_BYTES)
            .map(|c| {
                let mut entry = [0u8; DeviceTeam::SIZE_BYTES];
                entry.copy_from_slice(c);
                DeviceTeam::from_le_bytes(entry)
            })
            .collect();
        Some(DeviceTeamTable { teams })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_team_is_four_packed_i32s() {
        assert_eq!(size_of::<DeviceTeam>(), 16);
        assert_eq!(size_of::<DeviceTeam>(), DeviceTeam::SIZE_BYTES);
        assert_eq!(align_of::<DeviceTeam>(), 4);
        assert_eq!(size_of::<[DeviceTeam; 3]>(), 48);
    }

    #[test]
    fn bytes_are_little_endian_fields_in_order() {
        let t = DeviceTeam {
            start: 1,
            stride: 0x0203,
            size: -2,
            my_pe: 0x0a0b0c0d,
        };
        assert_eq!(
            t.to_le_bytes(),
            [
                1, 0, 0, 0, 3, 2, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0x0d, 0x0c, 0x0b, 0x0a
            ]
        );
        assert_eq!(DeviceTeam::from_le_bytes(t.to_le_bytes()), t);
    }

    #[test]
    fn table_bytes_round_trip() {
        let table = DeviceTeamTable {
            teams: vec![
                DeviceTeam {
                    start: 0,
                    stride: 1,
                    size: 4,
                    my_pe: 2,
                },
                DeviceTeam::UNUSED,
            ],
        };
        let bytes = table.to_bytes();
        assert_eq!(bytes.len(), 32);
        assert_eq!(&bytes[16..32], &DeviceTeam::UNUSED.to_le_bytes());
        assert_eq!(DeviceTeamTable::from_bytes(&bytes), Some(table.clone()));
        assert_eq!(DeviceTeamTable::from_bytes(&bytes[..31]), None);
        assert_eq!(table.get(TeamId(1)), Some(&DeviceTeam::UNUSED));
        assert_eq!(table.get(TeamId(2)), None);
        assert_eq!(table.get(TeamId::INVALID), None);
        assert!(!DeviceTeam::UNUSED.is_used() && table.teams[0].is_used());
        assert_eq!(table.as_slice().len(), table.len());
        assert!(!table.is_empty());
    }
}
