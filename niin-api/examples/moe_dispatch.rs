//! MoE token dispatch: every PE holds `--tokens` tokens, each routed to one of the
//! world's experts (`--experts` per PE). The PEs first exchange how many tokens each
//! sends to each (a put of the count, then a barrier), then every PE puts its tokens for
//! PE `d` into its own slot of `d`'s receive buffer with a put-with-signal; `d` waits for
//! the signal of every PE that sends it tokens and checks each token it received.
//!
//! In-process (N PEs as threads, mock transport):
//!     cargo run --release --example moe_dispatch -- --pes 4
//! One PE per process (the transport from NIIN_TRANSPORT):
//!     NIIN_TRANSPORT=mock niinrun -n 4 target/release/examples/moe_dispatch
//!
//! Options: `--pes N` (in-process), `--tokens T` (per PE, default 256), `--hidden H`
//! (words per token, default 64), `--experts E` (per PE, default 2).

use std::process::ExitCode;

use niin_api::{Cmp, Error, SignalOp, World, WorldConfig, run_in_process};

#[derive(Clone, Copy)]
struct Shape {
    tokens: usize,
    hidden: usize,
    experts: usize,
}

/// The expert (of `n * experts`) that token `t` of PE `pe` is routed to.
fn route(pe: usize, t: usize, n_experts: usize) -> usize {
    let mut x = (pe as u64) << 32 | t as u64;
    x = (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 32)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((x ^ (x >> 31)) % n_experts as u64) as usize
}

/// Word `j` of token `t` of PE `pe`, routed to `expert`: a header, then a pattern.
fn word(pe: usize, t: usize, expert: usize, j: usize) -> u32 {
    match j {
        0 => pe as u32,
        1 => t as u32,
        2 => expert as u32,
        _ => (pe as u32) << 24 ^ (t as u32) << 8 ^ j as u32,
    }
}

/// Tokens of PE `src` routed to PE `dst`, in order: (token, expert).
fn routed(src: usize, dst: usize, n: usize, s: Shape) -> Vec<(usize, usize)> {
    (0..s.tokens)
        .map(|t| (t, route(src, t, n * s.experts)))
        .filter(|&(_, e)| e / s.experts == dst)
        .collect()
}

/// Dispatches this PE's tokens and checks what it received; returns the tokens received.
fn dispatch(w: &World, s: Shape) -> Result<usize, Error> {
    let (me, n, h) = (w.my_pe(), w.n_pes(), s.hidden);
    let slot = s.tokens * h; // words of one source's slot
    let counts = w.calloc::<u64>(n)?; // counts[src]: tokens src sends to this PE
    let signals = w.calloc::<u64>(n)?; // signals[src]: src's tokens have landed
    let recv = w.calloc::<u32>(n * slot)?; // recv[src * slot ..]: src's tokens
    w.barrier_all()?;

    // 1. Counts: tell every PE how many tokens it gets from this one.
    let out: Vec<Vec<(usize, usize)>> = (0..n).map(|d| routed(me, d, n, s)).collect();
    for (d, tokens) in out.iter().enumerate() {
        w.p(counts.at(me), tokens.len() as u64, d)?;
    }
    w.barrier_all()?;

    // 2. Tokens: one put-with-signal per destination into this PE's slot there.
    for (d, tokens) in out.iter().enumerate().filter(|(_, t)| !t.is_empty()) {
        let block: Vec<u32> = tokens
            .iter()
            .flat_map(|&(t, e)| (0..h).map(move |j| word(me, t, e, j)))
            .collect();
        let dst = recv.slice(me * slot..me * slot + block.len());
        w.put_signal(dst, &block, signals.at(me), 1, SignalOp::Set, d)?;
    }

    // 3. Receive: wait for each sender, then check every token against the routing.
    let mut got = vec![0u64; n];
    w.get(&mut got, counts.all(), me)?;
    let mut tokens = vec![0u32; slot];
    let mut received = 0;
    for (src, &count) in got.iter().enumerate() {
        let want = routed(src, me, n, s);
        let bad = |what: String| Error::BadArgument {
            pe: me,
            op: "moe_dispatch check",
            what: format!("from PE {src}: {what}"),
        };
        if count != want.len() as u64 {
            return Err(bad(format!("count {count}, expected {}", want.len())));
        }
        if want.is_empty() {
            continue;
        }
        w.wait_until(signals.at(src), Cmp::Eq, 1)?;
        let words = want.len() * h;
        w.get(
            &mut tokens[..words],
            recv.slice(src * slot..src * slot + words),
            me,
        )?;
        for (k, &(t, e)) in want.iter().enumerate() {
            if e / s.experts != me {
                return Err(bad(format!("token {t} is for expert {e}, not this PE's")));
            }
            if let Some(j) = (0..h).find(|&j| tokens[k * h + j] != word(src, t, e, j)) {
                let v = tokens[k * h + j];
                return Err(bad(format!("token {t} (slot {k}) word {j} is {v:#x}")));
            }
        }
        received += want.len();
    }
    w.barrier_all()?;
    for buf in [counts, signals] {
        w.free(buf)?;
    }
    w.free(recv)?;
    Ok(received)
}

fn parse() -> Result<(Option<usize>, Shape), String> {
    let mut pes = None;
    let mut s = Shape {
        tokens: 256,
        hidden: 64,
        experts: 2,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().ok_or(format!("{a} needs a value"));
        let v = v.and_then(|v| {
            v.parse::<usize>()
                .map_err(|_| format!("{a} {v:?}: a number"))
        });
        match a.as_str() {
            "--pes" => pes = Some(v?),
            "--tokens" => s.tokens = v?,
            "--hidden" => s.hidden = v?,
            "--experts" => s.experts = v?,
            other => {
                return Err(format!(
                    "unknown argument {other:?}: --pes N, --tokens T, --hidden H, --experts E"
                ));
            }
        }
    }
    if s.tokens == 0 || s.hidden < 3 || s.experts == 0 {
        return Err("--tokens and --experts must be at least 1, --hidden at least 3".into());
    }
    Ok((pes, s))
}

fn main() -> ExitCode {
    let (pes, s) = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("moe_dispatch: {e}");
            return ExitCode::from(2);
        }
    };
    let report = |n: usize, how: &str, received: &str| {
        println!(
            "moe_dispatch: {n} PEs ({how}), {} experts, {} tokens x {} words per PE: \
             {received}, every one checked, all correct",
            n * s.experts,
            s.tokens,
            s.hidden,
        )
    };
    let result = match pes {
        Some(n) => run_in_process(n, &WorldConfig::default(), |w| dispatch(&w, s)).map(|r| {
            let total: usize = r.into_iter().sum();
            report(
                n,
                "mock, in-process threads",
                &format!("{total} tokens received in all"),
            );
        }),
        None => World::init().and_then(|w| {
            let received = dispatch(&w, s)?;
            if w.my_pe() == 0 {
                let how = format!("{:?}, one process per PE", w.config().transport);
                report(w.n_pes(), &how, &format!("PE 0 received {received} tokens"));
            }
            w.finalize()
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("moe_dispatch: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatches_on_the_mock() {
        let s = Shape {
            tokens: 40,
            hidden: 5,
            experts: 3,
        };
        for n in [1, 2, 4] {
            let got = run_in_process(n, &WorldConfig::default(), |w| dispatch(&w, s)).unwrap();
            assert_eq!(got.iter().sum::<usize>(), n * s.tokens);
        }
    }
}
