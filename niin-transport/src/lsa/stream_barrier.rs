//! The host side of the stream-ordered barrier over a sub-team (the design is in the
//! module docs of [`crate::lsa`], "Stream barriers of sub-teams"): where the arrival
//! counters lie in the control area, which members a PE signals, and the counts it waits
//! for. Pure bookkeeping, tested here; `LsaTransport::enqueue_team_barrier` enqueues
//! the work.

use std::collections::HashMap;

use super::MAX_BARRIER_TEAMS;
use crate::ops::TeamSync;

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

/// Bytes of the control area after the heap: the blocking barrier words, then the
/// stream-barrier counters.
pub(super) const CONTROL_BYTES: usize = STREAM_COUNTERS + STREAM_COUNTER_BYTES;

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
        assert_eq!(last + 8, CONTROL_BYTES as u64);
        // Every word 8-aligned and distinct.
        let mut all: Vec<u64> = (0..MAX_BARRIER_TEAMS)
            .flat_map(|s| [stream_counter_offset(s, 0), stream_counter_offset(s, 1)])
            .chain((0..MAX_BARRIER_TEAMS).map(blocking_word_offset))
            .collect();
        assert!(all.iter().all(|o| o % 8 == 0));
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 3 * MAX_BARRIER_TEAMS);
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
