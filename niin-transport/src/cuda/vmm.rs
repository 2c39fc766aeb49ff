//! CUDA virtual memory management (VMM): reserved address ranges, and a second mapping of
//! VMM memory (`cuMemCreate`: the heap that `ncclMemAlloc` made, or an application's
//! buffer) at an address of niin-rs's choosing, the *alias*. The LSA transport maps its
//! heap at the start of a range of its own and the buffers of
//! `nvshmemx_buffer_register_symmetric` after it, where every niin-rs operation finds them
//! as it finds the heap.
//!
//! - [`VaRange`]: `cuMemAddressReserve`d virtual addresses, freed on drop.
//! - [`AliasMapping`]: the physical memory behind a VMM range, mapped a second time
//!   (`cuMemRetainAllocationHandle`, `cuMemMap`, `cuMemSetAccess` for the device) inside a
//!   [`VaRange`]; unmapped on drop. The original mapping is untouched: both addresses
//!   reach the same bytes.
//!
//! CUDA only maps whole allocations from their start (`cuMemMap`'s offset must be 0), so
//! the buffer must be the start of the application's mapping, and the alias covers all of
//! that mapping.

use std::fmt;

use cudarc::driver::sys;

use super::device::Device;
use super::driver::driver;
use super::error::{CudaError, Result, check};

/// The extent of the mapping that contains `ptr` (`cuMemGetAddressRange`): its first
/// address and size. For VMM memory it is one `cuMemMap` range; for `cuMemAlloc` memory the
/// allocation.
pub fn address_range(ptr: u64) -> Result<(u64, usize)> {
    driver()?;
    let (mut base, mut size) = (0, 0);
    // SAFETY: the call only writes the two outputs; an unknown address is an error status.
    check("cuMemGetAddressRange_v2", unsafe {
        sys::cuMemGetAddressRange_v2(&mut base, &mut size, ptr)
    })
    .map_err(|e| CudaError::BadArgument {
        what: format!("{ptr:#x} is not device memory of this process's CUDA context ({e})"),
    })?;
    Ok((base, size))
}

/// Checks that `local` is CUDA VMM memory (`cuMemCreate` + `cuMemMap`), which
/// [`AliasMapping::map`] can map again.
pub fn check_vmm(local: u64) -> Result<()> {
    driver()?;
    Retained::of(local).map(drop)
}

/// A reference to the physical allocation behind a VMM address
/// (`cuMemRetainAllocationHandle`), released on drop (`cuMemRelease`).
struct Retained(sys::CUmemGenericAllocationHandle);

impl Retained {
    /// The allocation mapped at `local`; an error for memory that is not VMM.
    fn of(local: u64) -> Result<Retained> {
        let mut handle: sys::CUmemGenericAllocationHandle = 0;
        // SAFETY: the call writes one handle (and takes the reference that `drop` gives
        // back); memory that is not a VMM allocation gives an error status.
        check("cuMemRetainAllocationHandle", unsafe {
            sys::cuMemRetainAllocationHandle(&mut handle, local as *mut std::ffi::c_void)
        })
        .map_err(|e| not_vmm(local, e))?;
        Ok(Retained(handle))
    }
}

impl Drop for Retained {
    fn drop(&mut self) {
        // SAFETY: gives back the reference `of` took; a mapping made meanwhile holds its
        // own, so the memory stays while it is mapped.
        if let Err(e) = check("cuMemRelease", unsafe { sys::cuMemRelease(self.0) }) {
            eprintln!("NIIN: releasing a VMM allocation handle: {e}");
        }
    }
}

fn not_vmm(local: u64, e: CudaError) -> CudaError {
    CudaError::BadArgument {
        what: format!(
            "{local:#x} is not CUDA VMM memory (cuMemCreate + cuMemMap), which a symmetric \
             registration needs ({e})"
        ),
    }
}

/// The smallest unit of VMM mappings of pinned memory on `device`
/// (`cuMemGetAllocationGranularity`, minimum): reservations and mappings are multiples.
pub fn granularity(device: &Device) -> Result<usize> {
    driver()?;
    // SAFETY: a zeroed CUmemAllocationProp is a valid plain C struct; the fields set below
    // are the ones the query reads.
    let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
    prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device.ordinal() as i32;
    let mut g = 0;
    // SAFETY: `prop` is initialized; the call writes one size.
    check("cuMemGetAllocationGranularity", unsafe {
        sys::cuMemGetAllocationGranularity(
            &mut g,
            &prop,
            sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
        )
    })?;
    Ok(g.max(1))
}

/// `n` rounded up to a multiple of `unit` (a power of two), `None` on overflow.
pub fn round_up(n: u64, unit: u64) -> Option<u64> {
    Some(n.checked_add(unit - 1)? & !(unit - 1))
}

/// Reserved virtual addresses (`cuMemAddressReserve`), given back on drop
/// (`cuMemAddressFree`). Nothing is mapped by reserving.
pub struct VaRange {
    base: u64,
    len: usize,
}

impl fmt::Debug for VaRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "VaRange({:#x}..{:#x})",
            self.base,
            self.base + self.len as u64
        )
    }
}

impl VaRange {
    /// Reserves `len` bytes (a multiple of the granularity) wherever the driver chooses,
    /// aligned to `align` bytes (a power of two; 0: the driver's default).
    pub fn reserve(len: usize, align: usize) -> Result<VaRange> {
        driver()?;
        let mut base = 0;
        // SAFETY: the call writes the reserved address; nothing is mapped.
        check("cuMemAddressReserve", unsafe {
            sys::cuMemAddressReserve(&mut base, len, align, 0, 0)
        })?;
        Ok(VaRange { base, len })
    }

    /// The first address.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Bytes reserved.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the range is empty (never, for a reservation the driver made).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `[at, at + len)` lies inside this range.
    pub fn contains(&self, at: u64, len: usize) -> bool {
        at >= self.base
            && (at - self.base)
                .checked_add(len as u64)
                .is_some_and(|end| end <= self.len as u64)
    }
}

impl Drop for VaRange {
    fn drop(&mut self) {
        // SAFETY: the range was reserved by this value and nothing of it is mapped any
        // more (mappings into it are `AliasMapping`s, which borrow it and end first).
        let r = check("cuMemAddressFree", unsafe {
            sys::cuMemAddressFree(self.base, self.len)
        });
        if let Err(e) = r {
            eprintln!("NIIN: releasing reserved addresses {self:?}: {e}");
        }
    }
}

/// A second mapping of VMM memory, readable and writable by one device, inside a
/// [`VaRange`] of the caller's; unmapped on drop (the original memory and mapping stay).
pub struct AliasMapping {
    at: u64,
    len: usize,
}

impl fmt::Debug for AliasMapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AliasMapping")
            .field("at", &format_args!("{:#x}", self.at))
            .field("len", &self.len)
            .finish()
    }
}

impl AliasMapping {
    /// Maps the whole VMM mapping that starts at `local` (`len` bytes: its size, from
    /// [`address_range`]) again at `at` inside `within`, for `device`. The caller keeps
    /// `within` alive longer than the mapping and maps nothing else over
    /// `[at, at + len)`. Errors: the range does not hold it, or `local` is not VMM memory
    /// (`cuMemCreate`).
    pub fn map(
        device: &Device,
        local: u64,
        len: usize,
        at: u64,
        within: &VaRange,
    ) -> Result<AliasMapping> {
        if !within.contains(at, len) {
            return Err(CudaError::BadArgument {
                what: format!(
                    "the alias {at:#x}..{:#x} lies outside the reserved {within:?}",
                    at.saturating_add(len as u64)
                ),
            });
        }
        driver()?;
        let _bound = device.bind()?;
        let handle = Retained::of(local)?;
        // SAFETY: `[at, at + len)` lies in `within`, reserved and kept alive by the caller,
        // who has mapped nothing there, and `handle` is a live allocation of at least `len`
        // bytes (the caller's mapping of it has that size).
        check("cuMemMap", unsafe {
            sys::cuMemMap(at, len, 0, handle.0, 0)
        })?;
        let mapping = AliasMapping { at, len };
        let access = sys::CUmemAccessDesc {
            location: sys::CUmemLocation {
                type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: device.ordinal() as i32,
            },
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: the range was just mapped; one access descriptor is passed. On error
        // `mapping` drops and unmaps it.
        check("cuMemSetAccess", unsafe {
            sys::cuMemSetAccess(at, len, &access, 1)
        })?;
        Ok(mapping)
    }

    /// The alias's first address.
    pub fn at(&self) -> u64 {
        self.at
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is mapped (never, for a mapping that was made).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for AliasMapping {
    fn drop(&mut self) {
        // SAFETY: `[at, at + len)` was mapped by this value, and no work of niin-rs uses it
        // any more (its owner unregisters after a barrier and a device synchronization).
        let r = check("cuMemUnmap", unsafe { sys::cuMemUnmap(self.at, self.len) });
        if let Err(e) = r {
            eprintln!("NIIN: unmapping the symmetric alias {self:?}: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_up_to_the_granularity() {
        assert_eq!(round_up(0, 1 << 21), Some(0));
        assert_eq!(round_up(1, 1 << 21), Some(1 << 21));
        assert_eq!(round_up(1 << 21, 1 << 21), Some(1 << 21));
        assert_eq!(round_up((1 << 21) + 1, 1 << 21), Some(2 << 21));
        assert_eq!(round_up(u64::MAX, 1 << 21), None);
    }

    #[test]
    fn a_range_contains_only_what_fits() {
        // Not reserved: contains() is arithmetic only. forget() keeps Drop from freeing.
        let r = VaRange {
            base: 0x1000,
            len: 0x1000,
        };
        assert!(r.contains(0x1000, 0x1000));
        assert!(r.contains(0x1800, 0x800));
        assert!(!r.contains(0x1800, 0x801));
        assert!(!r.contains(0xfff, 1));
        assert!(!r.contains(0x1000, usize::MAX));
        std::mem::forget(r);
    }

    #[test]
    fn without_a_driver_every_call_is_an_error_not_a_panic() {
        if driver().is_ok() {
            return; // a machine with a GPU: the GPU tests cover the calls
        }
        assert!(address_range(0x1000).is_err());
        assert!(VaRange::reserve(1 << 21, 0).is_err());
    }
}
