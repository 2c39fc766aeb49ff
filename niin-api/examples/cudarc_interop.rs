//! cudarc interop on a GPU world: cudarc fills this PE's symmetric buffer (a cudarc view
//! of the heap, `World::cudarc_slice`), niin-rs puts it to the next PE on the same cudarc
//! stream (`World::cudarc_stream`), and cudarc copies the result back to check it.
//!
//! On a GPU machine (one PE per GPU, or several sharing one):
//!     niinrun -n 2 target/release/examples/cudarc_interop
//! Without a GPU (no libcuda, or NIIN_TRANSPORT=mock) it says so and exits with status 0
//! without doing anything else (`--require-gpu`: status 1 instead).

use std::process::ExitCode;

use niin_api::World;
use niin_api::cudarc::driver::{CudaContext, sys};

type AnyError = Box<dyn std::error::Error>;

const LEN: usize = 1 << 20;

/// What PE `pe` writes into its buffer, element `i`.
fn value(pe: usize, i: usize) -> u32 {
    (pe as u32) << 24 | i as u32
}

fn interop(w: &World) -> Result<(), AnyError> {
    let (me, n) = (w.my_pe(), w.n_pes());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    // The same device and primary context as niin-rs, and a stream of cudarc's.
    let ctx = CudaContext::new(w.cuda_ordinal()?)?;
    let cu = ctx.new_stream()?;
    let src = w.calloc::<u32>(LEN)?;
    let dst = w.calloc::<u32>(LEN)?;
    {
        let mut src_dev = w.cudarc_slice(&src, &cu)?; // cudarc's view of the heap
        let dst_dev = w.cudarc_slice(&dst, &cu)?;
        let mine: Vec<u32> = (0..LEN).map(|i| value(me, i)).collect();
        cu.memcpy_htod(&mine, &mut src_dev.as_view_mut())?; // cudarc writes the heap
        let s = w.cudarc_stream(&cu)?; // niin-rs on cudarc's stream
        s.barrier_all()?; // every PE's source is written
        s.put(dst.all(), src.all(), next)?;
        s.barrier_all()?; // every put has landed
        let got = cu.clone_dtoh(&*dst_dev)?; // cudarc reads the heap (synchronizes)
        s.synchronize()?;
        if let Some(i) = (0..LEN).find(|&i| got[i] != value(prev, i)) {
            return Err(format!(
                "PE {me}: element {i} is {:#x}, PE {prev} put {:#x}",
                got[i],
                value(prev, i)
            )
            .into());
        }
    } // the views go (the heap stays: cudarc never frees it), then the buffers
    w.free(dst)?;
    w.free(src)?;
    Ok(())
}

fn main() -> ExitCode {
    let require_gpu = std::env::args().skip(1).any(|a| a == "--require-gpu");
    let skip = |why: String| {
        eprintln!(
            "cudarc_interop: skipped: {why}; this example needs a GPU world \
             (on a GPU machine: niinrun -n 2 target/release/examples/cudarc_interop)"
        );
        if require_gpu {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        }
    };
    // cudarc loads libcuda on first use and panics without it: look first.
    // SAFETY: only tries to load the library (no driver call).
    if !unsafe { sys::is_culib_present() } {
        return skip("no CUDA driver (libcuda) on this machine".into());
    }
    let w = match World::init() {
        Ok(w) => w,
        Err(e) => return skip(format!("no GPU world: {e}")),
    };
    if let Err(e) = w.cuda_ordinal() {
        let _ = w.finalize();
        return skip(e.to_string()); // a CPU world (NIIN_TRANSPORT=mock)
    }
    let result = interop(&w);
    let (me, n) = (w.my_pe(), w.n_pes());
    let _ = w.finalize();
    match result {
        Ok(()) => {
            if me == 0 {
                println!(
                    "cudarc_interop: {n} PEs: cudarc wrote, niin-rs put on the cudarc stream, \
                     cudarc read back {LEN} u32 per PE: all correct"
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cudarc_interop: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use niin_api::{WorldConfig, run_in_process};

    /// On the mock, the interop calls the example makes first refuse with a clear error.
    #[test]
    fn the_mock_refuses_clearly() {
        run_in_process(2, &WorldConfig::default(), |w| {
            let e = w.cuda_ordinal().unwrap_err().to_string();
            assert!(e.contains("mock transport"), "{e}");
            Ok(())
        })
        .unwrap();
    }
}
