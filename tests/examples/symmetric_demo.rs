//! A CPU demo of niin-rs's symmetric heap and team model, without any transport: N
//! simulated PEs, each with its own heap and team table, make the same collective calls
//! and must agree — same offsets, same fingerprints, same team handles. Then one PE makes
//! an allocation the others do not, and the fingerprints catch it.
//!
//! `cargo run --release -p niin-tests --example symmetric_demo -- --pes 4`

use std::process::ExitCode;

use niin_heap::SymmetricHeap;
use niin_teams::{SlotSet, TeamId, TeamTable, WorldLayout};

fn parse_pes() -> Result<i32, String> {
    let mut args = std::env::args().skip(1);
    let mut pes = 4;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--pes" | "-n" => {
                let v = args.next().ok_or("--pes needs a value")?;
                pes = v
                    .parse()
                    .map_err(|_| format!("--pes {v:?} is not a number"))?;
            }
            other => return Err(format!("unknown argument {other:?} (usage: --pes N)")),
        }
    }
    if !(1..=1024).contains(&pes) {
        return Err(format!("--pes {pes} is out of range 1..=1024"));
    }
    Ok(pes)
}

/// The agreed free team slots of `members` (what niin-api computes with a collective).
fn agreed(tables: &[TeamTable], members: impl Iterator<Item = i32>) -> SlotSet {
    let sets: Vec<SlotSet> = members.map(|pe| tables[pe as usize].free_slots()).collect();
    SlotSet::intersect_all(sets.iter())
}

fn run(n: i32) -> Result<(), String> {
    let node = if n >= 4 { n / 2 } else { n };
    println!("{n} simulated PEs, {node} per node, 64 MiB symmetric heap each");

    // Every PE makes the same collective allocations.
    let mut heaps: Vec<SymmetricHeap> = (0..n)
        .map(|_| SymmetricHeap::new(64 << 20))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let mut offsets = Vec::new();
    for heap in &mut heaps {
        let a = heap
            .malloc(1000)
            .map_err(|e| e.to_string())?
            .ok_or("malloc(1000) gave null")?;
        let b = heap
            .align(4096, 10_000)
            .map_err(|e| e.to_string())?
            .ok_or("align gave null")?;
        let c = heap
            .calloc(16, 8)
            .map_err(|e| e.to_string())?
            .ok_or("calloc gave null")?;
        heap.free(a.offset).map_err(|e| e.to_string())?;
        let d = heap
            .malloc(512)
            .map_err(|e| e.to_string())?
            .ok_or("malloc(512) gave null")?;
        offsets.push([b.offset, c.offset, d.offset]);
    }
    let fp0 = heaps[0].fingerprint();
    let same =
        offsets.iter().all(|o| *o == offsets[0]) && heaps.iter().all(|h| h.fingerprint() == fp0);
    println!(
        "collective allocations: align(4096) at {:#x}, calloc at {:#x}, reused hole at {:#x}; fingerprint {fp0}; identical on all PEs: {same}",
        offsets[0][0], offsets[0][1], offsets[0][2]
    );
    if !same {
        return Err("PEs disagree on symmetric offsets".into());
    }

    // Teams: split the world into even and odd PEs, then the evens into a 2D grid.
    let mut tables: Vec<TeamTable> = (0..n)
        .map(|pe| WorldLayout::new(n, pe, node).map(TeamTable::new))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let slots = agreed(&tables, 0..n);
    let mut evens = Vec::new();
    for t in &mut tables {
        evens.push(
            t.split_strided(TeamId::WORLD, 0, 2, (n + 1) / 2, None, slots.clone())
                .map_err(|e| e.to_string())?,
        );
    }
    let even_handle = evens[0];
    println!(
        "split_strided(WORLD, start 0, stride 2): handle {even_handle}, {} members; PE 1 gets {}",
        tables[0].team_n_pes(even_handle),
        evens.get(1).map_or("-".to_string(), |h| h.to_string())
    );
    let even_members: Vec<i32> = (0..n).step_by(2).collect();
    let slots = agreed(&tables, even_members.iter().copied());
    let xrange = 2;
    for &pe in &even_members {
        let (x, y) = tables[pe as usize]
            .split_2d(even_handle, xrange, None, None, slots.clone())
            .map_err(|e| e.to_string())?;
        let t = &tables[pe as usize];
        println!(
            "  PE {pe:>2}: even-team PE {}, row team {x} (PE {} of {}), column team {y} (PE {} of {}), world PE of row PE 0: {}",
            t.team_my_pe(even_handle),
            t.team_my_pe(x),
            t.team_n_pes(x),
            t.team_my_pe(y),
            t.team_n_pes(y),
            t.translate_pe(x, 0, TeamId::WORLD)
        );
    }

    // An asymmetric allocation: only PE 0 allocates.
    if n > 1 {
        heaps[0].malloc(256).map_err(|e| e.to_string())?;
        let caught = heaps[0].fingerprint() != heaps[1].fingerprint();
        println!(
            "PE 0 alone allocates 256 B: fingerprints {} vs {} -> asymmetry detected: {caught}",
            heaps[0].fingerprint(),
            heaps[1].fingerprint()
        );
        if !caught {
            return Err("the fingerprint missed an asymmetric allocation".into());
        }
    }
    println!("ok");
    Ok(())
}

fn main() -> ExitCode {
    match parse_pes().and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("symmetric_demo: {e}");
            ExitCode::FAILURE
        }
    }
}
