//! What the C ABI needs to give CUDA modules their device context: the NCCL pieces of
//! this PE's symmetric heap.

use niin_transport::lsa::device_support::DeviceParts;

use crate::world::World;

impl World {
    /// The communicator, the heap's window, the heap's device address and size and the
    /// LSA team of this PE, for device code built against NCCL's device headers; `None`
    /// on a world without NCCL (the CPU mock). Holding the result keeps the communicator
    /// and the window alive: drop it before [`World::finalize`].
    pub fn nccl_parts(&self) -> Option<DeviceParts> {
        self.inner
            .transport
            .lsa_transport()
            .map(|lsa| lsa.device_parts())
    }
}
