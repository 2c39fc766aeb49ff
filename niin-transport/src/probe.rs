//! Whether this machine has the GPU stack the NCCL transports need: a CUDA driver and
//! an NCCL library that the dynamic loader finds. Used by `NIIN_TRANSPORT=auto`.

/// The libraries `auto` looks for, in order.
const LIBRARIES: [&str; 2] = ["libcuda.so.1", "libnccl.so.2"];

/// Describes the GPU stack found (`"libcuda.so.1 and libnccl.so.2"`), or `None` when
/// either library cannot be loaded.
pub fn gpu_stack() -> Option<String> {
    for name in LIBRARIES {
        // SAFETY: loading runs the library's initializers; the CUDA driver and NCCL are
        // designed to be dlopen'd by applications (NCCL-using frameworks do exactly this),
        // and the handle is closed again at the end of this statement.
        let loaded = unsafe { libloading::Library::new(name) };
        loaded.ok()?;
    }
    Some(LIBRARIES.join(" and "))
}
