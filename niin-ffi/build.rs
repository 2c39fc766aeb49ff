//! Build script of niin-ffi: gives `libnvshmem_host.so` its soname, so a program linked
//! through the `libnvshmem.so` link (`-lnvshmem`) still records `libnvshmem_host.so`.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnvshmem_host.so");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
