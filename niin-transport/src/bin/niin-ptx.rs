//! `niin-ptx`: prints the PTX modules that niin-rs's host library JIT-compiles at run time,
//! so they can be checked with `ptxas` on a machine without a GPU (`scripts/check-ptx.sh`).
//!
//! ```text
//! niin-ptx host   # niin-transport/src/cuda/host_ops.ptx, as embedded
//! niin-ptx coll   # the generated reduction kernels of host collectives
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    let which = std::env::args().nth(1);
    match which.as_deref() {
        Some("host") => print!("{}", niin_transport::cuda::HOST_OPS_PTX),
        Some("coll") => print!("{}", niin_transport::cuda::coll_ptx()),
        _ => {
            eprintln!("usage: niin-ptx host|coll");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
