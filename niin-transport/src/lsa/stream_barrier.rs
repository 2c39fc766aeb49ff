//! The host side of the stream-ordered barrier over a sub-team (the design is in the
//! module docs of [`crate::lsa`], "Stream barriers of sub-teams"): where the arrival
//! counters lie in the control area, which members a PE signals, and the counts it waits
//! for. Pure bookkeeping, tested here; `LsaTransport::enqueue_team_barrier` enqueues
//! the work.

use std::collections::HashMap;

use super::MAX_BARRIER_TEAMS;
use crate::error::TransportError;
use crate::ops::TeamSync;

/// The variable that picks how barriers over all PEs run.
pub const BARRIER_VAR: &str = "NIIN_BARRIER";

/// How barriers (and syncs) over all PEs run on the LSA transport (`NIIN_BARRIER`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierPath {
    /// `auto` (the default): the central barrier (`niin_barrier_arrive`, then a stream
    /// wait-value on this PE's release flag) where every PE is an LSA peer of every other
    /// and every PE's device has stream memory operations and did not choose `nccl`;
    /// else as `nccl`. Nothing spins on the GPU while a PE is late.
    Auto,
    /// `nccl`: an `ncclAllReduce` of one integer (a kernel that spins until every rank
    /// has joined). One PE choosing it makes every PE use it.
    Nccl,
}

impl BarrierPath {
    /// Parses the variable's value (unset: `Auto`); an error names a bad value.
    pub fn parse(value: Option<&str>) -> Result<BarrierPath, TransportError> {
        let modes = [("auto", BarrierPath::Auto), ("nccl", BarrierPath::Nccl)];
        Ok(crate::env::choice(BARRIER_VAR, value, &modes)?)
    }
}

/// Offset in the control area of the blocking barrier word of team handle `slot` (the
/// word of the team's PE 0; `MAX_BARRIER_TEAMS` words from offset 0).
pub(super) fn blocking_word_offset(slot: usize) -> u64 {
    (slot * 8) as u64
}

/// Offset in the control area of the first stream-barrier counter: after the blocking
/// barrier words.
const STREAM_COUNTERS: usize = MAX_BARRIER_TEAMS * 8;

/// Bytes of stream-barrier counters: two `u64`s per team handle.
const STREAM_COUNTER_BYTES: usize = MAX_BARRIER_TEAMS * 16;

/// Offset in the control area of the first central-barrier word pair: after the
/// stream-barrier counters.
const CENTRAL: usize = STREAM_COUNTERS + STREAM_COUNTER_BYTES;

/// Bytes of central-barrier words: per team handle two pairs of a `u32` arrival count and
/// a `u32` release flag, one for barriers on application streams and one for blocking
/// barriers (run on the internal stream), so that a blocking barrier never counts an
/// arrival of a stream barrier still in flight, or the other way round.
const CENTRAL_BYTES: usize = MAX_BARRIER_TEAMS * 16;

/// Which pair of central-barrier words a barrier uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Central {
    /// A barrier enqueued on an application's stream.
    Stream,
    /// A blocking barrier (on the internal stream, waited for by the host).
    Blocking,
}

/// Offset in the control area of the first fingerprint sum of the blocking central
/// barriers (one `u64` per team handle: `niin_barrier_arrive`'s `sum`), after the
/// central-barrier words.
const CENTRAL_SUMS: usize = CENTRAL + CENTRAL_BYTES;

/// Bytes of the control area after the heap: the blocking barrier words, the
/// stream-barrier counters, the central-barrier words, then the fingerprint sums.
pub(super) const CONTROL_BYTES: usize = CENTRAL_SUMS + MAX_BARRIER_TEAMS * 8;

/// Offset in the control area of the fingerprint sum of team handle `slot`'s blocking
/// central barrier (used in the control area of the team's first PE, next to the count).
pub(super) fn central_sum_offset(slot: usize) -> u64 {
    debug_assert!(slot < MAX_BARRIER_TEAMS);
    (CENTRAL_SUMS + slot * 8) as u64
}

/// Offset in the control area of the arrival count of team handle `slot`'s central
/// barrier of kind `which` (`niin_barrier_arrive`; used in the control area of the team's
/// first PE).
pub(super) fn central_count_offset(slot: usize, which: Central) -> u64 {
    debug_assert!(slot < MAX_BARRIER_TEAMS);
    let pair = match which {
        Central::Stream => 0,
        Central::Blocking => 8,
    };
    (CENTRAL + slot * 16 + pair) as u64
}

/// Offset in the control area of this PE's release flag of team handle `slot`'s central
/// barrier of kind `which` (set by the last arriver, cleared by the PE after its wait).
pub(super) fn central_flag_offset(slot: usize, which: Central) -> u64 {
    central_count_offset(slot, which) + 4
}

/// Offset in the control area of this PE's stream-barrier counter `parity` (0 or 1) of
/// team handle `slot` (`slot < MAX_BARRIER_TEAMS`).
pub(super) fn stream_counter_offset(slot: usize, parity: usize) -> u64 {
    debug_assert!(slot < MAX_BARRIER_TEAMS && parity < 2);
    (STREAM_COUNTERS + slot * 16 + parity * 8) as u64
}

/// The members of `team` other than `me`, as world PEs, in team order starting after
/// `me` (so that the members do not all signal the same PE first). Checks the team's
/// shape against a world of `n_pes` PEs and that `me` is a member; the error text names
/// the bad value.
pub(super) fn other_members(
    team: &TeamSync,
    me: usize,
    n_pes: usize,
) -> Result<Vec<usize>, String> {
    let shape = || {
        format!(
            "team {} ({} PEs from PE {} stride {})",
            team.team, team.size, team.start, team.stride
        )
    };
    if team.stride == 0 || team.size == 0 {
        return Err(format!("{}: stride and size must be at least 1", shape()));
    }
    let last = (team.size - 1)
        .checked_mul(team.stride)
        .and_then(|d| d.checked_add(team.start));
    if last.is_none_or(|l| l >= n_pes) {
        return Err(format!(
            "{}: reaches past the world of {n_pes} PEs",
            shape()
        ));
    }
    let Some(mine) = team.team_pe(me) else {
        return Err(format!("PE {me} is not a member of {}", shape()));
    };
    Ok((1..team.size)
        .map(|k| team.world_pe((mine + k) % team.size))
        .collect())
}

/// A team as far as counting goes: its handle and its members.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct TeamKey {
    team: i32,
    start: usize,
    stride: usize,
    size: usize,
}

impl From<&TeamSync> for TeamKey {
    fn from(t: &TeamSync) -> TeamKey {
        TeamKey {
            team: t.team,
            start: t.start,
            stride: t.stride,
            size: t.size,
        }
    }
}

/// One stream barrier as this PE runs it: the counter it signals and waits on, and the
/// value its own counter must reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Step {
    /// Which of the handle's two counters (0 or 1).
    pub(super) parity: usize,
    /// This PE's counter `parity` of the handle must reach this (unsigned `>=`).
    pub(super) expect: u64,
}

/// One PE's counts of its stream barriers over sub-teams.
#[derive(Debug, Default)]
pub(super) struct StreamBarriers {
    /// Per team handle: the arrivals this PE has waited for on each of its two counters,
    /// over every team of the handle it was a member of (the counters are never reset).
    expected: HashMap<usize, [u64; 2]>,
    /// Per team (handle and members): how many stream barriers this PE has enqueued.
    calls: HashMap<TeamKey, u64>,
}

impl StreamBarriers {
    /// Records the next stream barrier of `team`, whose handle is `slot`, and returns its
    /// step. Recorded before the work is enqueued: the other members count this barrier
    /// whatever happens to this PE's launches, so its counts must too.
    pub(super) fn next(&mut self, slot: usize, team: &TeamSync) -> Step {
        let calls = self.calls.entry(TeamKey::from(team)).or_default();
        let parity = (*calls % 2) as usize;
        *calls += 1;
        let expected = &mut self.expected.entry(slot).or_default()[parity];
        *expected += team.size as u64 - 1;
        Step {
            parity,
            expect: *expected,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn team(team: i32, start: usize, stride: usize, size: usize) -> TeamSync {
        TeamSync {
            team,
            start,
            stride,
            size,
        }
    }

    #[test]
    fn counters_follow_the_blocking_words_and_fit_the_control_area() {
        assert_eq!(blocking_word_offset(0), 0);
        assert_eq!(
            blocking_word_offset(MAX_BARRIER_TEAMS - 1),
            (STREAM_COUNTERS - 8) as u64
        );
        assert_eq!(stream_counter_offset(0, 0), STREAM_COUNTERS as u64);
        assert_eq!(stream_counter_offset(0, 1), STREAM_COUNTERS as u64 + 8);
        assert_eq!(stream_counter_offset(3, 1), STREAM_COUNTERS as u64 + 56);
        let last = stream_counter_offset(MAX_BARRIER_TEAMS - 1, 1);
        let (st, bl) = (Central::Stream, Central::Blocking);
        assert_eq!(last + 8, central_count_offset(0, st));
        assert_eq!(central_flag_offset(0, st), central_count_offset(0, st) + 4);
        assert_eq!(central_count_offset(0, bl), central_count_offset(0, st) + 8);
        assert_eq!(
            central_flag_offset(MAX_BARRIER_TEAMS - 1, bl) + 4,
            central_sum_offset(0)
        );
        assert_eq!(
            central_sum_offset(MAX_BARRIER_TEAMS - 1) + 8,
            CONTROL_BYTES as u64
        );
        // Every 8-byte word 8-aligned, every central word 4-aligned, all distinct.
        let mut wide: Vec<u64> = (0..MAX_BARRIER_TEAMS)
            .flat_map(|s| [stream_counter_offset(s, 0), stream_counter_offset(s, 1)])
            .chain((0..MAX_BARRIER_TEAMS).map(blocking_word_offset))
            .chain((0..MAX_BARRIER_TEAMS).map(central_sum_offset))
            .collect();
        assert!(wide.iter().all(|o| o % 8 == 0));
        let central: Vec<u64> = (0..MAX_BARRIER_TEAMS)
            .flat_map(|s| [st, bl].map(|w| [central_count_offset(s, w), central_flag_offset(s, w)]))
            .flatten()
            .collect();
        assert!(central.iter().all(|o| o % 4 == 0));
        wide.extend(central);
        wide.sort_unstable();
        wide.dedup();
        assert_eq!(wide.len(), 8 * MAX_BARRIER_TEAMS);
    }

    #[test]
    fn barrier_path_parses_and_names_a_bad_value() {
        assert_eq!(BarrierPath::parse(None).unwrap(), BarrierPath::Auto);
        assert_eq!(
            BarrierPath::parse(Some(" auto")).unwrap(),
            BarrierPath::Auto
        );
        assert_eq!(BarrierPath::parse(Some("")).unwrap(), BarrierPath::Auto);
        assert_eq!(BarrierPath::parse(Some("nccl")).unwrap(), BarrierPath::Nccl);
        let e = BarrierPath::parse(Some("memops")).unwrap_err().to_string();
        assert!(e.contains("NIIN_BARRIER=\"memops\""), "{e}");
    }

    #[test]
    fn other_members_start_after_me_and_wrap() {
        let t = team(1, 1, 2, 4); // PEs 1, 3, 5, 7
        assert_eq!(other_members(&t, 1, 8).unwrap(), [3, 5, 7]);
        assert_eq!(other_members(&t, 5, 8).unwrap(), [7, 1, 3]);
        assert_eq!(other_members(&t, 7, 8).unwrap(), [1, 3, 5]);
        assert_eq!(
            other_members(&team(2, 3, 1, 1), 3, 4).unwrap(),
            Vec::<usize>::new()
        );
    }

    #[test]
    fn other_members_refuses_bad_shapes_naming_the_value() {
        let e = other_members(&team(1, 1, 2, 4), 2, 8).unwrap_err();
        assert!(e.contains("PE 2 is not a member of team 1"), "{e}");
        let e = other_members(&team(1, 1, 2, 4), 1, 7).unwrap_err();
        assert!(e.contains("past the world of 7 PEs"), "{e}");
        let e = other_members(&team(1, 0, 0, 2), 0, 4).unwrap_err();
        assert!(e.contains("stride 0"), "{e}");
        let e = other_members(&team(1, 0, 1, 0), 0, 4).unwrap_err();
        assert!(e.contains("0 PEs"), "{e}");
        let e = other_members(&team(1, 1, usize::MAX, 3), 1, 4).unwrap_err();
        assert!(e.contains("past the world"), "{e}");
    }

    #[test]
    fn barriers_alternate_counters_and_count_size_minus_one() {
        let mut b = StreamBarriers::default();
        let t = team(1, 0, 2, 3);
        let steps: Vec<Step> = (0..5).map(|_| b.next(1, &t)).collect();
        let want = [(0, 2), (1, 2), (0, 4), (1, 4), (0, 6)];
        assert_eq!(
            steps
                .iter()
                .map(|s| (s.parity, s.expect))
                .collect::<Vec<_>>(),
            want
        );
    }

    #[test]
    fn a_new_team_of_a_handle_starts_at_the_first_counter_on_top_of_the_old_counts() {
        let mut b = StreamBarriers::default();
        let old = team(1, 0, 1, 3);
        assert_eq!(
            b.next(1, &old),
            Step {
                parity: 0,
                expect: 2
            }
        );
        // Another team of handle 1 (this PE in both): its own parity, the handle's counts.
        let new = team(1, 0, 2, 2);
        assert_eq!(
            b.next(1, &new),
            Step {
                parity: 0,
                expect: 3
            }
        );
        assert_eq!(
            b.next(1, &new),
            Step {
                parity: 1,
                expect: 1
            }
        );
        // The old members again: its parity goes on where it stopped.
        assert_eq!(
            b.next(1, &old),
            Step {
                parity: 1,
                expect: 3
            }
        );
        // Another handle is untouched.
        assert_eq!(
            b.next(2, &team(2, 0, 2, 2)),
            Step {
                parity: 0,
                expect: 1
            }
        );
    }

    /// Simulates the counters of every PE: each barrier of a team adds 1 to counter
    /// `parity` of the handle at every other member; then each member's expectation must
    /// equal its counter exactly, whatever teams used the handle before.
    #[test]
    fn expectations_match_the_counters_across_handle_reuse() {
        const N: usize = 8;
        let mut books: Vec<StreamBarriers> = (0..N).map(|_| StreamBarriers::default()).collect();
        let mut counters = [[[0u64; 2]; 4]; N]; // [pe][slot][parity]
        let mut run = |t: TeamSync, slot: usize, rounds: usize| {
            for _ in 0..rounds {
                let steps: Vec<(usize, Step)> = (0..t.size)
                    .map(|i| {
                        let pe = t.world_pe(i);
                        (pe, books[pe].next(slot, &t))
                    })
                    .collect();
                // Every member agrees on the counter.
                assert!(steps.iter().all(|(_, s)| s.parity == steps[0].1.parity));
                for &(pe, s) in &steps {
                    for other in other_members(&t, pe, N).unwrap() {
                        counters[other][slot][s.parity] += 1;
                    }
                }
                for &(pe, s) in &steps {
                    assert_eq!(
                        counters[pe][slot][s.parity], s.expect,
                        "PE {pe}, team {t:?}"
                    );
                }
            }
        };
        // Handle 1: evens (odd count), then a different team on it, then evens again,
        // then a team of the same handle disjoint from the running one.
        run(team(1, 0, 2, 4), 1, 3);
        run(team(1, 1, 1, 6), 1, 4);
        run(team(1, 0, 2, 4), 1, 5);
        run(team(1, 0, 1, 3), 1, 1);
        run(team(1, 4, 1, 4), 1, 2);
        run(team(1, 1, 1, 6), 1, 1);
        // Another handle is independent.
        run(team(2, 0, 3, 3), 2, 3);
        run(team(1, 0, 2, 4), 1, 2);
    }
}
