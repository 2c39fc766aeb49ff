//! `niin-nccl-info`: which NCCL niin-rs would load, and what it can do.
//!
//! ```text
//! niin-nccl-info [--comm [--nonblocking]] [LIBRARY]
//! ```
//!
//! Without `LIBRARY`, runs the loader's search order (the one `nvshmem_init` uses) and
//! prints the library's path, how it was found, the places tried before it, its version,
//! its capabilities and the table symbols it lacks. With `LIBRARY`, opens that file
//! instead. `--comm` also exercises it on the current CUDA device (GPU needed): a
//! one-rank communicator, its properties, a 2 MiB `ncclMemAlloc` buffer registered as a
//! symmetric window, and the host-side peer pointer of rank 0 where the library has one;
//! `--nonblocking` makes that communicator non-blocking (NCCL is then polled).

use std::process::ExitCode;

use niin_transport::nccl::{CommOptions, Nccl, NcclError, NcclVersion, WindowFlags, gin_type_name};

fn main() -> ExitCode {
    let mut comm = false;
    let mut blocking = true;
    let mut library = None;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--comm" => comm = true,
            "--nonblocking" => blocking = false,
            "-h" | "--help" => {
                println!("usage: niin-nccl-info [--comm [--nonblocking]] [LIBRARY]");
                return ExitCode::SUCCESS;
            }
            _ => library = Some(arg),
        }
    }
    let loaded = match &library {
        Some(path) => Nccl::load_from(path),
        None => Nccl::load(),
    };
    let nccl = match loaded {
        Ok(nccl) => nccl,
        Err(e) => {
            eprintln!("NIIN: {e}");
            return ExitCode::FAILURE;
        }
    };
    print_library(nccl);
    if comm {
        if let Err(e) = exercise(nccl, blocking) {
            eprintln!("NIIN: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn print_library(nccl: &Nccl) {
    let found = nccl.found();
    println!("path:         {}", nccl.path());
    println!("found by:     {} ({})", found.source, found.why);
    if found.requested != nccl.path() {
        println!("requested:    {}", found.requested);
    }
    for (place, why) in &found.tried {
        println!("tried before: {place}: {why}");
    }
    let v = nccl.version();
    println!("version:      {v} (code {})", v.code);
    println!(
        "headers:      {} (niin-rs's generated types)",
        NcclVersion::headers()
    );
    println!("capabilities:");
    for (name, on) in nccl.capabilities().list() {
        println!("  {name:<28} {}", if on { "yes" } else { "no" });
    }
    let missing = nccl.missing_symbols();
    if missing.is_empty() {
        println!("missing symbols: none");
    } else {
        println!("missing symbols:");
        for s in missing {
            println!("  {:<26} (since {}) {}", s.name, s.since, s.feature);
        }
    }
}

fn exercise(nccl: &'static Nccl, blocking: bool) -> Result<(), NcclError> {
    let id = nccl.unique_id()?;
    let comm = nccl.comm_init_rank(1, &id, 0, CommOptions { blocking })?;
    println!(
        "comm:         rank {} of {}, CUDA device {}, {}",
        comm.rank(),
        comm.n_ranks(),
        comm.cu_device(),
        if comm.is_blocking() {
            "blocking"
        } else {
            "non-blocking"
        }
    );
    match comm.properties()? {
        None => println!("properties:   none (no ncclCommQueryProperties)"),
        Some(p) => {
            println!(
                "properties:   queried as {}: device API {}, multimem {}, GIN {}, LSA teams {}, \
                 LSA size {}, host RMA {}",
                p.queried_as,
                p.device_api_support,
                p.multimem_support,
                gin_type_name(p.gin_type),
                p.n_lsa_teams
                    .map_or("unreported".to_owned(), |n| n.to_string()),
                p.lsa_size().map_or("unknown".to_owned(), |n| n.to_string()),
                p.host_rma_support
                    .map_or("unreported".to_owned(), |b| b.to_string()),
            );
        }
    }
    let mem = nccl.mem_alloc(2 << 20)?;
    println!(
        "memory:       {} bytes at {:#x} (ncclMemAlloc)",
        mem.len(),
        mem.ptr()
    );
    let win = comm.register_window(mem.ptr(), mem.len(), WindowFlags::SYMMETRIC_HEAP)?;
    println!(
        "window:       NCCL flags {:#x}{}",
        win.nccl_flags(),
        if win.strict_ordering_dropped() {
            " (NCCL_WIN_STRICT_ORDERING left out: library < 2.29.7)"
        } else {
            ""
        }
    );
    if nccl.capabilities().host_peer_pointers {
        let peer = win.peer_device_pointer(0, 0)?;
        println!(
            "peer 0 ptr:   {}",
            peer.map_or("NULL (not an LSA peer)".to_owned(), |p| format!("{p:#x}"))
        );
        println!("user ptr:     {:#x}", win.user_ptr()?);
    } else {
        match win.peer_device_pointer(0, 0) {
            Err(e) => println!("peer 0 ptr:   {e}"),
            Ok(p) => println!("peer 0 ptr:   {p:?}"),
        }
    }
    drop(win);
    drop(mem);
    drop(comm);
    println!("released:     window, memory, communicator");
    Ok(())
}
