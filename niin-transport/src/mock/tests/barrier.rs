//! Barriers: many rounds with visibility checks, strided sub-teams, timeouts, gone
//! peers, bad teams, slot reuse.

use std::time::Instant;

use super::*;
use crate::error::{Departure, TransportError};

/// Each round every PE writes the round number into its word of buffer `round % 2` on
/// every PE, then the barrier; every PE must then see everyone's write of this round.
/// (Two buffers: round r+1's writes cannot overwrite round r's before everyone checked,
/// because they go to the other buffer and round r+2's come after another barrier.)
pub(super) fn rounds_with_checks(t: &MockTransport, team: TeamSync, rounds: u64, base: u64) {
    let members: Vec<usize> = (0..team.size).map(|i| team.world_pe(i)).collect();
    let me = team.team_pe(t.my_pe()).unwrap() as u64;
    let n = team.size as u64;
    for r in 1..=rounds {
        let buf = base + (r % 2) * 8 * n;
        for &pe in &members {
            p64(t, pe, buf + 8 * me, r);
        }
        t.barrier(Order::Now, team).unwrap();
        for i in 0..n {
            assert_eq!(
                g64(t, t.my_pe(), buf + 8 * i),
                r,
                "round {r}: team PE {i}'s write"
            );
        }
    }
}

#[test]
fn barrier_1000_rounds_everyone_sees_the_previous_writes() {
    let w = world(4, cfg());
    on_all(&w, |t| rounds_with_checks(t, world_team(4), 1000, 0));
}

#[test]
fn barrier_of_a_strided_team_while_others_do_not_take_part() {
    let w = world(6, cfg());
    on_all(&w, |t| {
        // PEs 1, 3, 5 are a team; 0, 2, 4 another with the same handle and a different
        // PE 0; both run at once.
        let team = TeamSync {
            team: 3,
            start: t.my_pe() % 2,
            stride: 2,
            size: 3,
        };
        rounds_with_checks(t, team, 200, 1024);
    });
    let w = world(5, cfg());
    on_all(&w, |t| {
        // Only PEs 1 and 4 (stride 3); the others return at once.
        let team = TeamSync {
            team: 1,
            start: 1,
            stride: 3,
            size: 2,
        };
        if team.team_pe(t.my_pe()).is_some() {
            rounds_with_checks(t, team, 100, 0);
        }
    });
}

#[test]
fn barrier_timeout_counts_arrivals_and_leaves_the_slot_usable() {
    let w = world(4, short(300));
    let errors = on_all(&w[..3], |t| {
        t.barrier(Order::Now, world_team(4)).unwrap_err()
    });
    let mut counts = Vec::new();
    for (pe, e) in errors.into_iter().enumerate() {
        match e {
            TransportError::Timeout {
                pe: p,
                op: "barrier",
                detail,
                ..
            } => {
                assert_eq!(p, pe);
                let k: u32 = detail
                    .strip_prefix("team 0: ")
                    .and_then(|d| d.strip_suffix(" of 4 PEs arrived; not arrived: PE 3"))
                    .unwrap_or_else(|| panic!("{detail}"))
                    .parse()
                    .unwrap();
                counts.push(k);
            }
            other => panic!("{other}"),
        }
    }
    counts.sort_unstable();
    assert_eq!(counts, [1, 2, 3], "each PE withdrew its arrival");
    // The withdrawn arrivals left the slot at zero: a full barrier works.
    on_all(&w, |t| t.barrier(Order::Now, world_team(4)).unwrap());
}

#[test]
fn barrier_fails_with_peer_gone_when_a_member_finalized() {
    let mut w = world(3, cfg());
    w.pop().unwrap().finalize().unwrap();
    let t = Instant::now();
    let errors = on_all(&w, |t| t.barrier(Order::Now, world_team(3)).unwrap_err());
    for e in errors {
        assert_eq!(
            e,
            TransportError::PeerGone {
                pe: 2,
                op: "barrier",
                why: Departure::Finalized,
            }
        );
    }
    assert!(t.elapsed() < Duration::from_secs(5));
    // A barrier of the PEs that are left still works.
    on_all(&w, |t| {
        t.barrier(
            Order::Now,
            TeamSync {
                team: 0,
                start: 0,
                stride: 1,
                size: 2,
            },
        )
    })
    .into_iter()
    .for_each(|r| r.unwrap());
}

#[test]
fn barrier_rejects_bad_teams() {
    let w = world(
        4,
        MockConfig {
            max_teams: 16,
            ..cfg()
        },
    );
    let bad = |team: TeamSync| match w[0].barrier(Order::Now, team) {
        Err(TransportError::BadArgument {
            op: "barrier",
            what,
        }) => what,
        other => panic!("{team:?}: {other:?}"),
    };
    let team = world_team(4);
    let what = bad(TeamSync { team: 16, ..team });
    assert!(
        what.contains("0..16") && what.contains("max_teams"),
        "{what}"
    );
    assert!(bad(TeamSync { team: -1, ..team }).contains("-1"));
    assert!(bad(TeamSync { stride: 0, ..team }).contains("stride 0"));
    assert!(bad(TeamSync { size: 0, ..team }).contains("size 0"));
    assert!(bad(TeamSync { size: 5, ..team }).contains("past the world"));
    assert!(
        bad(TeamSync {
            start: 1,
            size: 3,
            ..team
        })
        .contains("PE 0 is not a member")
    );
    // Stream barriers are checked at the enqueue.
    let e = w[0].barrier(
        Order::Stream(crate::ops::StreamHandle::DEFAULT),
        TeamSync { team: 99, ..team },
    );
    assert!(matches!(e, Err(TransportError::BadArgument { .. })));
}

#[test]
fn barrier_slot_resets_for_a_recreated_team() {
    let w = world(4, cfg());
    on_all(&w, |t| {
        t.barrier(
            Order::Now,
            TeamSync {
                team: 5,
                ..world_team(4)
            },
        )
        .unwrap()
    });
    // Team 5 destroyed and recreated over PEs 0 and 1 only.
    on_all(&w[..2], |t| {
        for _ in 0..10 {
            t.barrier(
                Order::Now,
                TeamSync {
                    team: 5,
                    ..world_team(2)
                },
            )
            .unwrap();
        }
    });
    on_all(&w, |t| {
        t.barrier(
            Order::Now,
            TeamSync {
                team: 5,
                ..world_team(4)
            },
        )
        .unwrap()
    });
}

#[test]
fn barrier_of_one_pe_returns_at_once() {
    let w = world(3, cfg());
    w[2].barrier(
        Order::Now,
        TeamSync {
            team: 7,
            start: 2,
            stride: 1,
            size: 1,
        },
    )
    .unwrap();
}

#[test]
fn a_pe_that_panicked_is_named_as_panicked_not_finalized() {
    let mut w = world(3, cfg());
    let doomed = w.pop().unwrap();
    let panicker = std::thread::spawn(move || {
        let _pe = doomed;
        panic!("PE 2 fails on purpose");
    });
    assert!(panicker.join().is_err());
    let errors = on_all(&w, |t| t.barrier(Order::Now, world_team(3)).unwrap_err());
    for e in errors {
        assert_eq!(
            e,
            TransportError::PeerGone {
                pe: 2,
                op: "barrier",
                why: Departure::Panicked,
            }
        );
        assert_eq!(e.to_string(), "PE 2 panicked; barrier cannot complete");
    }
}

/// What every member of a barrier of all of `w`'s PEs learns when PE `i` carries
/// `fingerprints[i]`.
fn carried(w: &[MockTransport], fingerprints: &[u64]) -> Vec<Fingerprints> {
    on_all(w, |t| {
        t.barrier_with_fingerprint(world_team(w.len()), fingerprints[t.my_pe()])
            .unwrap()
    })
}

#[test]
fn fingerprints_are_compared_in_the_barrier_and_every_member_hears_the_verdict() {
    use Fingerprints::{Differ, Same};
    let w = world(3, cfg());
    let f = 0x1234_5678_9abc_def1;
    assert_eq!(carried(&w, &[f, f, f]), [Same; 3]);
    // One member differs: every member hears it, whoever arrived last.
    for odd in 0..3 {
        let mut fs = [f; 3];
        fs[odd] = f ^ 0x100;
        assert_eq!(carried(&w, &fs), [Differ; 3], "PE {odd} differs");
        // The verdict and the sum are the round's own: the next round agrees again.
        assert_eq!(
            carried(&w, &[f, f, f]),
            [Same; 3],
            "after PE {odd} differed"
        );
    }
    // A member in a plain barrier (no fingerprint) differs from any fingerprint.
    assert_eq!(carried(&w, &[f, 0, f]), [Differ; 3]);
    // Plain barriers everywhere: nothing to differ.
    assert_eq!(carried(&w, &[0, 0, 0]), [Same; 3]);
    // Many rounds with alternating verdicts keep the barrier itself intact.
    for r in 0..200u64 {
        let g = f.wrapping_add(r);
        let fs = if r % 3 == 0 { [g, g, g ^ 1] } else { [g, g, g] };
        let want = if r % 3 == 0 { Differ } else { Same };
        assert_eq!(carried(&w, &fs), [want; 3], "round {r}");
    }
    on_all(&w, |t| rounds_with_checks(t, world_team(3), 50, 0));
}

#[test]
fn a_fingerprint_withdrawn_at_a_timeout_leaves_the_next_round_clean() {
    let w = world(2, short(50));
    let lonely = w[0].barrier_with_fingerprint(world_team(2), 7);
    assert!(
        matches!(lonely, Err(TransportError::Timeout { .. })),
        "{lonely:?}"
    );
    assert_eq!(carried(&w, &[9, 9]), [Fingerprints::Same; 2]);
}
