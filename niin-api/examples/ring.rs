//! Ring: every PE puts a block to the next PE with a signal, waits for the block from the
//! previous PE, checks it, and acknowledges it; then reports the put bandwidth.
//!
//! In-process (N PEs as threads, mock transport):
//!     cargo run --release --example ring -- --pes 4
//! One PE per process (the transport from NIIN_TRANSPORT):
//!     NIIN_TRANSPORT=mock niinrun -n 4 target/release/examples/ring
//!
//! Options: `--pes N` (in-process), `--bytes B` (block size, default 1 MiB),
//! `--rounds R` (default 200).

use std::process::ExitCode;
use std::time::Instant;

use niin_api::{Cmp, Error, SignalOp, World, WorldConfig, run_in_process};

struct Options {
    pes: Option<usize>,
    bytes: usize,
    rounds: u64,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        pes: None,
        bytes: 1 << 20,
        rounds: 200,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| {
            let v = args.next().ok_or(format!("{name} needs a value"))?;
            v.parse::<u64>()
                .map_err(|_| format!("{name} {v:?} is not a number"))
        };
        match a.as_str() {
            "--pes" => o.pes = Some(value("--pes")? as usize),
            "--bytes" => o.bytes = value("--bytes")? as usize,
            "--rounds" => o.rounds = value("--rounds")?,
            other => {
                return Err(format!(
                    "unknown argument {other:?}: --pes N, --bytes B, --rounds R"
                ));
            }
        }
    }
    if o.bytes < 8 || o.bytes % 8 != 0 {
        return Err(format!(
            "--bytes {} must be a positive multiple of 8",
            o.bytes
        ));
    }
    if o.rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    Ok(o)
}

/// The word PE `pe` sends as element `i` in round `round`.
fn pattern(pe: usize, round: u64, i: usize) -> u64 {
    ((pe as u64) << 48) ^ (round << 24) ^ i as u64
}

/// Seconds spent in put-with-signal, per PE; the data checked every round.
fn ring(w: World, o: &Options) -> Result<f64, Error> {
    let (me, n) = (w.my_pe(), w.n_pes());
    let words = o.bytes / 8;
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let dst = w.calloc::<u64>(words)?;
    let signal = w.calloc::<u64>(1)?; // rounds received from prev
    let ack = w.calloc::<u64>(1)?; // rounds next has consumed
    let mut block = vec![0u64; words];
    let mut seen = vec![0u64; words];
    w.barrier_all()?;
    let mut put_time = 0.0;
    for round in 1..=o.rounds {
        // Flow control: next must have consumed the previous round before we overwrite it.
        w.wait_until(ack.all(), Cmp::Ge, round - 1)?;
        block
            .iter_mut()
            .enumerate()
            .for_each(|(i, x)| *x = pattern(me, round, i));
        let t = Instant::now();
        w.put_signal(dst.all(), &block, signal.all(), 1, SignalOp::Add, next)?;
        put_time += t.elapsed().as_secs_f64();
        w.wait_until(signal.all(), Cmp::Ge, round)?;
        w.get(&mut seen, dst.all(), me)?;
        if let Some(i) = (0..words).find(|&i| seen[i] != pattern(prev, round, i)) {
            return Err(Error::BadArgument {
                pe: me,
                op: "ring check",
                what: format!(
                    "round {round}: word {i} is {:#x}, PE {prev} sent {:#x}",
                    seen[i],
                    pattern(prev, round, i)
                ),
            });
        }
        w.signal_op(ack.all(), 1, SignalOp::Add, prev)?;
    }
    w.barrier_all()?;
    for buf in [ack, signal, dst] {
        w.free(buf)?;
    }
    w.finalize()?;
    Ok(put_time)
}

/// Prints the result; `times` are the put seconds of the PEs measured (all of them
/// in-process, PE 0's alone for a multi-process job).
fn report(o: &Options, n: usize, times: &[f64], transport: &str) {
    let bytes = o.bytes as f64 * o.rounds as f64;
    let slowest = times.iter().cloned().fold(0.0, f64::max);
    println!(
        "ring: {n} PEs ({transport}), {} B x {} rounds per PE: every block checked, all correct",
        o.bytes, o.rounds
    );
    println!(
        "put_signal bandwidth per PE: {:.2} GB/s ({} of {} PEs measured, slowest shown; {:.1} us per put)",
        bytes / slowest / 1e9,
        times.len(),
        n,
        slowest / o.rounds as f64 * 1e6
    );
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ring: {e}");
            return ExitCode::from(2);
        }
    };
    let result = match o.pes {
        Some(n) => run_in_process(n, &WorldConfig::default(), |w| ring(w, &o)).map(|times| {
            report(&o, n, &times, "mock, in-process threads");
        }),
        None => World::init().and_then(|w| {
            let (me, n) = (w.my_pe(), w.n_pes());
            let kind = format!("{:?}, one process per PE", w.config().transport);
            let t = ring(w, &o)?;
            if me == 0 {
                report(&o, n, &[t], &kind);
            }
            Ok(())
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ring: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_on_the_mock() {
        let o = Options {
            pes: Some(3),
            bytes: 256,
            rounds: 20,
        };
        for n in [1, 2, 3] {
            run_in_process(n, &WorldConfig::default(), |w| ring(w, &o)).unwrap();
        }
    }
}
