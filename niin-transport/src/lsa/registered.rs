//! Application buffers made symmetric (`nvshmemx_buffer_register_symmetric`) on the LSA
//! transport.
//!
//! Every niin-rs operation names symmetric memory by its offset from the heap's base, and
//! reaches LSA peer `p` at `base(p) + offset`, where `base(p)` is NCCL's address of `p`'s
//! heap window; device code does the same with one per-peer distance. A registered buffer
//! joins that scheme without any new lookup on those paths:
//!
//! 1. NCCL registers the buffer as a window of its own (`ncclCommWindowRegister`,
//!    collective), which maps every LSA peer's buffer into this process.
//! 2. NCCL maps all windows of a communicator into one flat range per peer, at the same
//!    place for every peer: peer `p`'s copy of window `w` is at `flat + p * stride +
//!    place(w)`. So the distance `d = place(buffer) - place(heap)` is the same for every
//!    peer (and every PE: NCCL allocates places collectively). It is measured with
//!    `ncclGetPeerDevicePointer` and checked for every LSA peer.
//! 3. niin-rs maps the buffer's physical memory a second time at `heap_base + d` (the
//!    *alias*, [`crate::cuda::AliasMapping`]). Then `base(p) + (alias - heap_base)` is
//!    NCCL's address of `p`'s buffer, for this PE too (`base(me)` is the heap itself), and
//!    offset `d` names the buffer on every PE, as a heap offset names an allocation.
//!
//! The alias must be free in this process, and the addresses after an `ncclMemAlloc`
//! allocation rarely are (the driver hands out what comes next to later allocations; on
//! the H200 the first alias's spot was always taken). So at start the transport reserves
//! one range of its own, the heap's size plus [`REGISTRATION_VA_BYTES`], maps the heap's
//! memory (NCCL's allocation) again at its start, and uses that mapping as the heap's
//! address everywhere (`heap_base`: what `nvshmem_malloc` returns, and what device code
//! adds its distances to). NCCL keeps registering and reaching the heap through its own
//! mapping; both reach the same memory. Aliases of registered buffers land in the rest
//! of the range. Without `ncclGetPeerDevicePointer` (NCCL 2.28) the distance of step 2
//! comes from the windows' device-side descriptors (`flat_layout.rs`), and in a world of
//! one PE an alias is simply the first free spot. If the range cannot be reserved, the
//! heap keeps NCCL's address and registration is refused.

use std::sync::Mutex;

use crate::cuda::{self, AliasMapping, Device, VaRange};
use crate::error::{Result, TransportError};
use crate::nccl::Window;
use crate::ops::SymAddr;

/// Addresses reserved after the heap for aliases of registered buffers: 512 GiB, more than
/// the per-peer stride of NCCL's flat window range on any GPU of today (NCCL makes it the
/// largest GPU memory of the communicator, rounded up to 4 GiB). Nothing is mapped by the
/// reservation.
pub const REGISTRATION_VA_BYTES: usize = 512 << 30;

/// `NIIN_HEAP_REMAP=0` keeps the heap at NCCL's own mapping (no range is reserved, and
/// registration is refused): a diagnostic switch, to compare the two mappings' speed.
pub const HEAP_REMAP_VAR: &str = "NIIN_HEAP_REMAP";

/// Buffers registered at most at once (per world; NVSHMEM names no limit).
pub const MAX_REGISTERED: usize = 1024;

/// One registered buffer.
struct Buffer {
    /// Heap-relative offset of the alias (the same on every PE).
    offset: u64,
    /// Bytes registered (the application's size).
    len: u64,
    /// The application's address of it.
    local: u64,
    // Dropped in this order: the alias is unmapped, then the window deregistered.
    alias: AliasMapping,
    _window: Window,
}

/// The registered buffers of one PE, and the range that holds the heap's mapping and
/// their aliases.
pub(crate) struct Registered {
    // The buffers and the heap's mapping drop before the range they lie in.
    list: Mutex<Vec<Buffer>>,
    heap: Option<AliasMapping>,
    space: Option<VaRange>,
    /// Bytes of the range the heap's mapping takes (aliases come after).
    heap_span: u64,
    granularity: u64,
}

/// Alignment of the reserved range: larger than any granularity NCCL or CUDA uses, so an
/// alias at the heap's base plus a distance NCCL chose is aligned as its memory needs.
const RANGE_ALIGN: usize = 1 << 30;

impl std::fmt::Debug for Registered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registered")
            .field("buffers", &self.lock().len())
            .field("space", &self.space)
            .finish()
    }
}

/// A CUDA error of registration: argument errors keep their message as the caller's
/// `BadArgument`, the rest are GPU failures.
fn registration_err(e: cuda::CudaError) -> TransportError {
    match e {
        cuda::CudaError::BadArgument { what } => TransportError::BadArgument {
            op: "register_symmetric",
            what,
        },
        e => TransportError::Gpu {
            what: e.to_string(),
        },
    }
}

/// Where and how big a buffer's alias is: the place computed, and the application
/// mapping's size (the alias maps all of it).
pub(crate) struct Placement {
    /// The alias's address.
    pub at: u64,
    /// Bytes of the application's mapping.
    pub mapped: usize,
}

/// The lowest address from `start` where `len` bytes overlap none of the `taken` ranges
/// (`[start, end)` pairs, any order), moving past a range to its end rounded up to
/// `granularity` (a power of two). `u64::MAX` when the addresses run out.
fn first_fit(start: u64, mut taken: Vec<(u64, u64)>, len: u64, granularity: u64) -> u64 {
    taken.sort_unstable();
    let mut at = start;
    for (from, to) in taken {
        if at.saturating_add(len) <= from {
            break;
        }
        if to > at {
            at = cuda::round_up(to, granularity).unwrap_or(u64::MAX);
        }
    }
    at
}

impl Registered {
    /// Reserves the range and maps the heap (the VMM allocation at `heap_ptr`, from
    /// `ncclMemAlloc`) at its start; without the range, the heap stays where NCCL put it and
    /// registration is refused later.
    pub(crate) fn new(device: &Device, heap_ptr: u64) -> Result<Registered> {
        let granularity = cuda::granularity(device).map_err(registration_err)? as u64;
        let (base, len) = cuda::address_range(heap_ptr).map_err(registration_err)?;
        let heap_span = cuda::round_up(len as u64, granularity).unwrap_or(u64::MAX);
        let wanted = std::env::var(HEAP_REMAP_VAR).map_or(true, |v| v.trim() != "0");
        let placed = (base == heap_ptr && wanted)
            .then(|| heap_span.checked_add(REGISTRATION_VA_BYTES as u64))
            .flatten()
            .and_then(|total| VaRange::reserve(total as usize, RANGE_ALIGN).ok())
            .and_then(|space| {
                let heap = AliasMapping::map(device, heap_ptr, len, space.base(), &space);
                heap.ok().map(|heap| (heap, space))
            });
        let (heap, space) = placed.unzip();
        Ok(Registered {
            list: Mutex::new(Vec::new()),
            heap,
            space,
            heap_span,
            granularity,
        })
    }

    /// The heap's address in this process: its mapping at the start of the range, or
    /// `heap_ptr` (NCCL's) when there is no range.
    pub(crate) fn heap_base(&self, heap_ptr: u64) -> u64 {
        self.heap.as_ref().map_or(heap_ptr, AliasMapping::at)
    }

    /// The range, or the refusal of a registration without one.
    fn space(&self) -> Result<&VaRange> {
        self.space
            .as_ref()
            .ok_or_else(|| TransportError::NotImplemented {
                what: "registering buffers needs an address range for the heap and their aliases, \
                   which the CUDA driver did not grant at start"
                    .to_owned(),
            })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Buffer>> {
        self.list.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Checks what can be checked of `local..local+len` before the collective part: it is
    /// the start of a CUDA VMM mapping at least `len` bytes long, and not registered yet.
    /// Returns the mapping's size.
    pub(crate) fn check_buffer(&self, local: u64, len: u64) -> Result<usize> {
        if len == 0 {
            return Err(TransportError::BadArgument {
                op: "register_symmetric",
                what: "a symmetric registration of 0 bytes".to_owned(),
            });
        }
        let (base, mapped) = cuda::address_range(local).map_err(registration_err)?;
        cuda::check_vmm(local).map_err(registration_err)?;
        if base != local {
            return Err(TransportError::BadArgument {
                op: "register_symmetric",
                what: format!(
                    "{local:#x} lies {} bytes into the CUDA mapping at {base:#x}: CUDA can map \
                     memory a second time only from the start of an allocation, so register \
                     the buffer from {base:#x}",
                    local - base
                ),
            });
        }
        if len > mapped as u64 {
            return Err(TransportError::BadArgument {
                op: "register_symmetric",
                what: format!(
                    "{len} bytes at {local:#x} run past the end of its CUDA mapping \
                     ({mapped} bytes)"
                ),
            });
        }
        let list = self.lock();
        if let Some(b) = list.iter().find(|b| b.local == local) {
            return Err(TransportError::BadArgument {
                op: "register_symmetric",
                what: format!(
                    "{local:#x} is registered already (its symmetric alias is heap+{:#x})",
                    b.offset
                ),
            });
        }
        if list.len() >= MAX_REGISTERED {
            return Err(TransportError::BadArgument {
                op: "register_symmetric",
                what: format!(
                    "{MAX_REGISTERED} buffers are registered already, the most niin-rs keeps; \
                     unregister one first"
                ),
            });
        }
        Ok(mapped)
    }

    /// The first free spot of the reserved range for `mapped` bytes (NCCL 2.28, one PE).
    pub(crate) fn free_spot(&self, mapped: usize) -> Result<u64> {
        let space = self.space()?;
        let taken: Vec<(u64, u64)> = self
            .lock()
            .iter()
            .map(|b| (b.alias.at(), b.alias.at() + b.alias.len() as u64))
            .collect();
        let at = first_fit(
            space.base() + self.heap_span,
            taken,
            mapped as u64,
            self.granularity,
        );
        if space.contains(at, mapped) {
            Ok(at)
        } else {
            Err(TransportError::BadArgument {
                op: "register_symmetric",
                what: format!(
                    "no room for {mapped} more bytes in the {REGISTRATION_VA_BYTES}-byte \
                     range kept for registered buffers"
                ),
            })
        }
    }

    /// Maps the buffer at its place and records it under heap offset `offset`.
    pub(crate) fn add(
        &self,
        device: &Device,
        local: u64,
        len: u64,
        place: Placement,
        offset: u64,
        window: Window,
    ) -> Result<()> {
        let space = self.space()?;
        let after_heap = space.base() + self.heap_span;
        if place.at < after_heap || !space.contains(place.at, place.mapped) {
            return Err(TransportError::NotImplemented {
                what: format!(
                    "the registered buffer's alias would be at {:#x}..{:#x}, outside the \
                     {REGISTRATION_VA_BYTES}-byte range kept after the heap ({after_heap:#x}..)",
                    place.at,
                    place.at + place.mapped as u64
                ),
            });
        }
        let alias = AliasMapping::map(device, local, place.mapped, place.at, space)
            .map_err(registration_err)?;
        self.lock().push(Buffer {
            offset,
            len,
            local,
            alias,
            _window: window,
        });
        Ok(())
    }

    /// Forgets the buffer registered at heap offset `offset`: unmaps its alias and
    /// deregisters its window. The caller has made sure no work uses it.
    pub(crate) fn remove(&self, offset: u64) -> Result<()> {
        let mut list = self.lock();
        match list.iter().position(|b| b.offset == offset) {
            Some(i) => {
                drop(list.swap_remove(i));
                Ok(())
            }
            None => Err(TransportError::BadArgument {
                op: "unregister_symmetric",
                what: format!(
                    "heap+{offset:#x} is not the symmetric address of a registered buffer"
                ),
            }),
        }
    }

    /// Whether `[addr, addr + len)` lies inside one registered buffer.
    pub(crate) fn contains(&self, addr: SymAddr, len: u64) -> bool {
        let Some(end) = addr.0.checked_add(len) else {
            return false;
        };
        self.lock()
            .iter()
            .any(|b| addr.0 >= b.offset && end <= b.offset + b.len)
    }

    /// Forgets every buffer (finalize).
    pub(crate) fn clear(&self) {
        self.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::first_fit;

    const G: u64 = 0x20_0000; // 2 MiB

    #[test]
    fn the_first_gap_that_fits_is_taken() {
        // Nothing registered: the start.
        assert_eq!(first_fit(0x1000_0000, vec![], G, G), 0x1000_0000);
        // A buffer at the start: right after it.
        let taken = vec![(0x1000_0000, 0x1000_0000 + G)];
        assert_eq!(first_fit(0x1000_0000, taken, G, G), 0x1000_0000 + G);
        // A hole of one granule between two buffers fits one granule, not two.
        let taken = vec![
            (0x1000_0000 + 2 * G, 0x1000_0000 + 3 * G),
            (0x1000_0000, 0x1000_0000 + G),
        ];
        assert_eq!(first_fit(0x1000_0000, taken.clone(), G, G), 0x1000_0000 + G);
        assert_eq!(first_fit(0x1000_0000, taken, 2 * G, G), 0x1000_0000 + 3 * G);
    }

    #[test]
    fn ends_are_rounded_to_the_granularity_and_ranges_below_start_ignored() {
        let taken = vec![(0x100, 0x200), (0x1000_0000, 0x1000_0001)];
        assert_eq!(first_fit(0x1000_0000, taken, G, G), 0x1000_0000 + G);
    }

    #[test]
    fn running_out_of_addresses_is_max_not_a_panic() {
        let taken = vec![(u64::MAX - G, u64::MAX)];
        assert_eq!(first_fit(u64::MAX - 2 * G, taken, 2 * G, G), u64::MAX);
    }
}
