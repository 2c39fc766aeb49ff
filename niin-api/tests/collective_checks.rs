//! Collective calls compared across PEs (mismatches named on every PE, the world usable
//! afterwards or plainly not), the one-thread-at-a-time guard of a PE's collectives, and
//! the team-handle limit of the mock: on in-process worlds.

use std::sync::Barrier;
use std::time::Duration;

use niin_api::{Cmp, Error, ReduceOp, TeamId, World, WorldConfig, run_in_process};

fn config() -> WorldConfig {
    WorldConfig {
        timeout: Duration::from_secs(20),
        ..WorldConfig::default()
    }
}

/// The message of a [`Error::CollectiveMismatch`], or a panic naming what came instead.
fn mismatch(pe: usize, r: Result<(), Error>) -> String {
    match r {
        Err(e @ Error::CollectiveMismatch { .. }) => e.to_string(),
        other => panic!("PE {pe}: expected a collective mismatch, got {other:?}"),
    }
}

#[test]
fn mallocs_of_different_sizes_fail_on_every_pe_and_the_heaps_agree_again() {
    // The fingerprint comparison is on too: after the mismatch it must pass again.
    let cfg = WorldConfig {
        check_symmetry: true,
        ..config()
    };
    let out = run_in_process(2, &cfg, |w| {
        let before = w.malloc::<u8>(1000)?;
        let bytes = if w.my_pe() == 0 { 256 } else { 512 };
        let msg = mismatch(w.my_pe(), w.malloc::<u8>(bytes).map(drop));
        // The failed call was undone on both PEs: the next ones agree.
        let after = w.malloc::<u8>(512)?;
        let again = w.malloc::<u8>(256)?;
        w.check_symmetry()?;
        let offsets = (after.offset(), again.offset());
        w.free(again)?;
        w.free(after)?;
        w.free(before)?;
        Ok((msg, offsets))
    })
    .unwrap();
    // The malloc was call #2 of the world (after the first malloc).
    let expected =
        "PE 0 called nvshmem_malloc(256) [call #2], PE 1 called nvshmem_malloc(512) [call #2]";
    assert!(out[0].0.contains(expected), "{}", out[0].0);
    assert!(out[0].0.contains("world stays usable"), "{}", out[0].0);
    assert!(
        out[1].0.contains(
            "PE 1 called nvshmem_malloc(512) [call #2], PE 0 called nvshmem_malloc(256) [call #2]"
        ),
        "{}",
        out[1].0
    );
    assert_eq!(out[0].1, out[1].1, "later allocations are symmetric");
}

#[test]
fn a_malloc_against_a_barrier_is_named_as_such_not_as_a_dead_pe() {
    let cfg = WorldConfig {
        check_symmetry: true,
        ..config()
    };
    let out = run_in_process(2, &cfg, |w| {
        let msg = if w.my_pe() == 0 {
            mismatch(0, w.malloc::<u64>(32).map(drop))
        } else {
            mismatch(1, w.barrier_all())
        };
        // Both stopped at the same barrier: the world goes on.
        w.barrier_all()?;
        let b = w.malloc::<u64>(32)?;
        w.free(b)?;
        Ok(msg)
    })
    .unwrap();
    for msg in &out {
        assert!(
            msg.contains("called nvshmem_malloc(256) [call #1]"),
            "{msg}"
        );
        assert!(
            msg.contains("called nvshmem_barrier_all() [call #1]"),
            "{msg}"
        );
        assert!(!msg.contains("failed or finalized"), "{msg}");
    }
}

#[test]
fn splits_with_different_arguments_fail_on_every_pe() {
    let out = run_in_process(2, &config(), |w| {
        let size = if w.my_pe() == 0 { 2 } else { 1 };
        let msg = mismatch(
            w.my_pe(),
            w.team_split_strided(TeamId::WORLD, 0, 1, size, None)
                .map(drop),
        );
        // The PEs stopped at the split's first barrier: a split they agree on works.
        let team = w.team_split_strided(TeamId::WORLD, 0, 1, 2, None)?.unwrap();
        assert_eq!(w.team_n_pes(team), Some(2));
        w.barrier(team)?;
        w.team_destroy(team)?;
        Ok(msg)
    })
    .unwrap();
    assert!(
        out[0].contains(
            "PE 0 called nvshmem_team_split_strided(parent 0, start 0, stride 1, size 2) [call #1], \
             PE 1 called nvshmem_team_split_strided(parent 0, start 0, stride 1, size 1) [call #1]"
        ),
        "{}",
        out[0]
    );
    assert!(out[1].contains("PE 1 called"), "{}", out[1]);
}

#[test]
fn barriers_of_a_team_count_their_calls_from_the_split() {
    let out = run_in_process(3, &config(), |w| {
        let Some(team) = w.team_split_strided(TeamId::WORLD, 0, 1, 2, None)? else {
            return Ok(None);
        };
        w.barrier(team)?;
        // The team's second call: a barrier on PE 0, a split of the team on PE 1.
        let r = if w.my_pe() == 0 {
            w.barrier(team)
        } else {
            w.team_split_strided(team, 0, 1, 1, None).map(drop)
        };
        let msg = mismatch(w.my_pe(), r);
        w.team_destroy(team)?;
        Ok(Some((team, msg)))
    })
    .unwrap();
    let (team, msg) = out[0].clone().unwrap();
    let t = team.0;
    assert!(
        msg.contains(&format!(
            "PE 0 called nvshmem_barrier(team {t}) [call #2 on team {t}], PE 1 called \
             nvshmem_team_split_strided(parent {t}, start 0, stride 1, size 1) [call #2 on team {t}]"
        )),
        "{msg}"
    );
    assert!(out[2].is_none());
}

#[test]
fn different_team_collectives_are_reported_and_leave_the_world_plainly_out_of_step() {
    let out = run_in_process(2, &config(), |w| {
        let src = w.calloc::<i32>(4)?;
        let dst = w.calloc::<i32>(4)?;
        let r = if w.my_pe() == 0 {
            w.reduce(TeamId::WORLD, ReduceOp::Sum, dst.all(), src.all(), 4)
        } else {
            w.broadcast(TeamId::WORLD, dst.all(), src.all(), 4, 0)
        };
        let msg = mismatch(w.my_pe(), r);
        // Every later collective call says why it cannot run; finalize still works.
        let later = w.barrier_all().unwrap_err();
        assert!(matches!(later, Error::OutOfStep { .. }), "{later}");
        let later = later.to_string();
        w.finalize()?;
        Ok((msg, later))
    })
    .unwrap();
    let (msg, later) = &out[0];
    assert!(
        msg.contains("PE 0 called nvshmem_i32_sum_reduce(4 elements, dest 0x")
            && msg.contains("PE 1 called nvshmem_broadcastmem(root 0, 16 bytes, dest 0x"),
        "{msg}"
    );
    assert!(msg.contains("out of step"), "{msg}");
    assert!(
        later.contains("out of step") && later.contains("nvshmem_i32_sum_reduce"),
        "{later}"
    );
    // The quoted mismatch does not repeat this PE's prefix: one `PE 0: `, at the start.
    assert!(later.starts_with("PE 0: "), "{later}");
    assert_eq!(later.matches("PE 0: ").count(), 1, "{later}");
}

#[test]
fn reductions_with_different_counts_are_reported() {
    let out = run_in_process(2, &config(), |w| {
        let src = w.calloc::<u64>(8)?;
        let dst = w.calloc::<u64>(8)?;
        let n = if w.my_pe() == 0 { 8 } else { 4 };
        let r = w.reduce(TeamId::WORLD, ReduceOp::Max, dst.all(), src.all(), n);
        Ok(mismatch(w.my_pe(), r))
    })
    .unwrap();
    assert!(
        out[1].contains("PE 1 called nvshmem_u64_max_reduce(4 elements"),
        "{}",
        out[1]
    );
    assert!(
        out[1].contains("PE 0 called nvshmem_u64_max_reduce(8 elements"),
        "{}",
        out[1]
    );
}

#[test]
fn agreeing_collectives_pass_the_comparison() {
    run_in_process(3, &config(), |w| {
        let src = w.calloc::<u64>(6)?;
        let dst = w.calloc::<u64>(6)?;
        for _ in 0..3 {
            w.barrier_all()?;
            w.reduce(TeamId::WORLD, ReduceOp::Sum, dst.all(), src.all(), 6)?;
            w.fcollect(TeamId::WORLD, dst.all(), src.slice(0..2), 2)?;
            w.sync_all()?;
        }
        let (x, y) = w.team_split_2d(TeamId::WORLD, 2, None, None)?;
        for t in [x, y] {
            w.barrier(t)?;
            w.team_destroy(t)?;
        }
        w.free(dst)?;
        w.free(src)
    })
    .unwrap();
}

#[test]
fn with_the_comparison_off_a_mismatch_passes_silently() {
    let cfg = WorldConfig {
        check_collectives: Some(niin_api::CollectiveChecks::Off),
        check_symmetry: false,
        ..config()
    };
    let out = run_in_process(2, &cfg, |w| {
        let bytes = if w.my_pe() == 0 { 256 } else { 512 };
        let b = w.malloc::<u8>(bytes)?;
        Ok(b.len())
    })
    .unwrap();
    assert_eq!(out, vec![256, 512]);
}

/// Runs `call` on two threads of PE 0 at once while PE 1 holds back from the collective
/// until PE 0 has seen one of the two refused: the first thread in is still waiting for
/// PE 1 when the second arrives, so exactly one is refused, whichever it is.
fn two_threads_of_pe_0(call: fn(&World) -> Result<(), Error>) -> String {
    let out = run_in_process(2, &config(), move |w| {
        let flag = w.calloc::<u64>(1)?;
        let refused = if w.my_pe() == 0 {
            let start = Barrier::new(2);
            let results: Vec<Result<(), Error>> = std::thread::scope(|s| {
                let threads: Vec<_> = (0..2)
                    .map(|_| {
                        s.spawn(|| {
                            start.wait();
                            let r = call(&w);
                            if let Err(Error::ConcurrentCollective { .. }) = &r {
                                // Now PE 1 may enter.
                                w.p(flag.all(), 1, 1).unwrap();
                            }
                            r
                        })
                    })
                    .collect();
                threads.into_iter().map(|t| t.join().unwrap()).collect()
            });
            let (errs, oks): (Vec<_>, Vec<_>) = results.into_iter().partition(|r| r.is_err());
            assert_eq!((errs.len(), oks.len()), (1, 1), "{errs:?}");
            Some(errs.into_iter().next().unwrap().unwrap_err().to_string())
        } else {
            w.wait_until(flag.all(), Cmp::Eq, 1)?;
            call(&w)?;
            None
        };
        w.barrier_all()?;
        w.free(flag)?;
        Ok(refused)
    })
    .unwrap();
    out[0].clone().unwrap()
}

#[test]
fn two_threads_of_one_pe_in_barrier_all_are_refused_not_counted_twice() {
    let msg = two_threads_of_pe_0(|w| w.barrier_all());
    assert!(
        msg.contains(
            "PE 0: nvshmem_barrier_all() was called while another thread of this PE is inside nvshmem_barrier_all"
        ),
        "{msg}"
    );
    assert!(msg.contains("NVSHMEM_THREAD_SERIALIZED"), "{msg}");
}

#[test]
fn two_threads_of_one_pe_in_malloc_are_refused() {
    let msg = two_threads_of_pe_0(|w| {
        // Leaks on purpose: the one that ran allocated on both PEs alike.
        w.malloc::<u8>(300).map(drop)
    });
    assert!(
        msg.contains("nvshmem_malloc(300) was called while another thread of this PE is inside nvshmem_malloc"),
        "{msg}"
    );
}

#[test]
fn teams_past_the_mocks_barrier_table_are_refused_at_the_split() {
    let out = run_in_process(2, &config(), |w| {
        let mut teams = Vec::new();
        let err = loop {
            match w.team_split_strided(TeamId::WORLD, 0, 1, 2, None) {
                Ok(t) => teams.push(t.expect("every PE is a member")),
                Err(e) => break e,
            }
        };
        // Every team made can synchronize: none was handed a handle past the table.
        for &t in &teams {
            w.barrier(t)?;
        }
        // Destroying one makes room for one.
        let last = teams.pop().unwrap();
        w.team_destroy(last)?;
        let again = w.team_split_strided(TeamId::WORLD, 0, 1, 2, None)?.unwrap();
        assert_eq!(again, last, "the freed handle is reused");
        w.barrier(again)?;
        w.team_destroy(again)?;
        for t in teams.iter().rev() {
            w.team_destroy(*t)?;
        }
        Ok((teams.len(), err.to_string()))
    })
    .unwrap();
    let (made, msg) = &out[0];
    // Handles 0..1024, of which the predefined teams hold the first few.
    assert!(*made > 1000 && *made < 1024, "{made} teams");
    assert!(
        msg.contains("handle 1024") && msg.contains("0..1024"),
        "{msg}"
    );
    assert_eq!(out[1].0, *made);
}

/// `CollectiveChecks::Barriers` (NCCL's default): heap calls and barriers compared inside
/// the barrier, the descriptions written only when the fingerprints differ. The mock runs
/// the same path as a GPU world's central barrier of all PEs.
#[test]
fn the_barriers_level_names_both_calls_and_leaves_the_world_usable() {
    let cfg = WorldConfig {
        check_symmetry: true,
        check_collectives: Some(niin_api::CollectiveChecks::Barriers),
        ..config()
    };
    let out = run_in_process(3, &cfg, |w| {
        let first = w.malloc::<u8>(1000)?;
        w.barrier_all()?;
        let msg = match w.my_pe() {
            1 => mismatch(1, w.malloc::<u8>(512).map(drop)),
            _ => mismatch(w.my_pe(), w.malloc::<u8>(256).map(drop)),
        };
        let msg2 = if w.my_pe() == 2 {
            mismatch(2, w.barrier_all())
        } else {
            mismatch(w.my_pe(), w.malloc::<u64>(4).map(drop))
        };
        // Both mismatches were undone everywhere: the world goes on in step.
        w.barrier_all()?;
        let again = w.malloc::<u8>(256)?;
        w.check_symmetry()?;
        let offset = again.offset();
        w.free(again)?;
        w.free(first)?;
        Ok((msg, msg2, offset))
    })
    .unwrap();
    // Calls on the world: malloc #1, barrier #2, malloc #3, then #4.
    assert!(
        out[0].0.contains(
            "PE 0 called nvshmem_malloc(256) [call #3], PE 1 called nvshmem_malloc(512) [call #3]"
        ),
        "{}",
        out[0].0
    );
    assert!(
        out[1].0.contains(
            "PE 1 called nvshmem_malloc(512) [call #3], PE 0 called nvshmem_malloc(256) [call #3]"
        ),
        "{}",
        out[1].0
    );
    assert!(
        out[2].0.contains("PE 1 called nvshmem_malloc(512)"),
        "{}",
        out[2].0
    );
    assert!(
        out[2].1.contains("PE 2 called nvshmem_barrier_all"),
        "{}",
        out[2].1
    );
    assert!(out[0].1.contains("nvshmem_barrier_all"), "{}", out[0].1);
    assert!(
        out.iter().all(|o| o.2 == out[0].2),
        "later allocations are symmetric"
    );
}

/// At the `Barriers` level team collectives are not compared (they would cost device
/// copies on NCCL): reductions of different counts pass the check (and compute garbage,
/// which is what `All` is for).
#[test]
fn the_barriers_level_leaves_team_collectives_alone() {
    let cfg = WorldConfig {
        check_collectives: Some(niin_api::CollectiveChecks::Barriers),
        ..config()
    };
    let out = run_in_process(2, &cfg, |w| {
        let src = w.calloc::<i32>(8)?;
        let dst = w.calloc::<i32>(8)?;
        let n = if w.my_pe() == 0 { 4 } else { 8 };
        let r = w.reduce(TeamId::WORLD, ReduceOp::Sum, dst.all(), src.all(), n);
        w.barrier_all()?;
        Ok(matches!(r, Err(Error::CollectiveMismatch { .. })))
    })
    .unwrap();
    assert_eq!(out, vec![false, false]);
}
