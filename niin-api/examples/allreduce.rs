//! All-reduce: every PE contributes a vector, a sum reduction over all PEs leaves the sum
//! on every PE (`nvshmem_int64_sum_reduce` on the world team), and every PE checks it.
//!
//! In-process (N PEs as threads, mock transport):
//!     cargo run --release --example allreduce -- --pes 4
//! One PE per process (the transport from NIIN_TRANSPORT):
//!     NIIN_TRANSPORT=mock niinrun -n 4 target/release/examples/allreduce
//!
//! Options: `--pes N` (in-process), `--len L` (elements per PE, default 65536).

use std::process::ExitCode;
use std::time::Instant;

use niin_api::{Error, ReduceOp, TeamId, World, WorldConfig, run_in_process};

/// What PE `pe` contributes as element `i`.
fn contribution(pe: usize, i: usize) -> i64 {
    (pe as i64 + 1) * (i as i64 % 1000 - 500)
}

/// Sums `len` elements over all PEs and checks the result; returns the seconds the
/// reduction took on this PE.
fn allreduce(w: &World, len: usize) -> Result<f64, Error> {
    let (me, n) = (w.my_pe(), w.n_pes());
    let src = w.malloc::<i64>(len)?;
    let dst = w.malloc::<i64>(len)?;
    let mine: Vec<i64> = (0..len).map(|i| contribution(me, i)).collect();
    w.put(src.all(), &mine, me)?; // fill this PE's own part of the symmetric source
    w.barrier_all()?;
    let t = Instant::now();
    w.reduce(TeamId::WORLD, ReduceOp::Sum, dst.all(), src.all(), len)?;
    let secs = t.elapsed().as_secs_f64();
    let mut sum = vec![0i64; len];
    w.get(&mut sum, dst.all(), me)?;
    let expected = |i: usize| (0..n).map(|pe| contribution(pe, i)).sum::<i64>();
    if let Some(i) = (0..len).find(|&i| sum[i] != expected(i)) {
        return Err(Error::BadArgument {
            pe: me,
            op: "allreduce check",
            what: format!("element {i} is {}, expected {}", sum[i], expected(i)),
        });
    }
    w.free(dst)?;
    w.free(src)?;
    Ok(secs)
}

fn parse() -> Result<(Option<usize>, usize), String> {
    let (mut pes, mut len) = (None, 1 << 16);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().ok_or(format!("{a} needs a value"));
        let v = v.and_then(|v| {
            v.parse::<usize>()
                .map_err(|_| format!("{a} {v:?}: a number"))
        });
        match a.as_str() {
            "--pes" => pes = Some(v?),
            "--len" => len = v?,
            other => return Err(format!("unknown argument {other:?}: --pes N, --len L")),
        }
    }
    if len == 0 {
        return Err("--len must be at least 1".into());
    }
    Ok((pes, len))
}

fn main() -> ExitCode {
    let (pes, len) = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("allreduce: {e}");
            return ExitCode::from(2);
        }
    };
    let report = |n: usize, how: &str, secs: f64| {
        println!(
            "allreduce: {n} PEs ({how}), sum of {len} i64 per PE: correct on every PE ({:.3} ms)",
            secs * 1e3
        )
    };
    let result = match pes {
        Some(n) => run_in_process(n, &WorldConfig::default(), |w| allreduce(&w, len)).map(|t| {
            report(
                n,
                "mock, in-process threads",
                t.into_iter().fold(0.0, f64::max),
            );
        }),
        None => World::init().and_then(|w| {
            let secs = allreduce(&w, len)?;
            if w.my_pe() == 0 {
                let how = format!("{:?}, one process per PE", w.config().transport);
                report(w.n_pes(), &how, secs);
            }
            w.finalize()
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("allreduce: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_on_the_mock() {
        for n in [1, 3, 4] {
            run_in_process(n, &WorldConfig::default(), |w| allreduce(&w, 1000)).unwrap();
        }
    }
}
