//! Team barriers: a central, self-resetting, sense-reversing barrier per team slot.
//!
//! The slot of team `t` lives in the control block of the team's PE 0 (world PE
//! `start`), at index `t`, so teams of disjoint PE sets can share a handle. It is one
//! 64-bit word: the generation in the high 32 bits, the arrival count in the low 32.
//! A PE arrives with an acq-rel `fetch_add(1)`, which also reads the generation it
//! waits on. The last arriver resets the count and bumps the generation in one acq-rel
//! `fetch_add(2^32 - size)`; the others wait (acquire loads) for the generation to
//! change. The arrivals form one RMW chain, so the last arriver sees everyone's writes
//! before their arrival and publishes them with its release; every waiter acquires
//! them. The count is back at 0 after every round, so a destroyed and recreated team
//! handle starts clean.
//!
//! A PE that times out, or finds a member gone, withdraws its arrival with a
//! compare-exchange that only succeeds if the generation has not moved, so the slot
//! stays consistent for later barriers.
//!
//! Waiters spin briefly, then sleep on the generation half of the slot with a futex; the
//! last arriver wakes them. Each arriver also writes an arrival record (the generation and
//! the team's start) in its own control block, so a waiter checks only the members that
//! have not arrived for being gone, and a timeout names them.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::peers;
use super::region::Region;
use super::wait::{FutexWord, Half, Outcome, Pacing, poll};
use crate::error::{Result, TransportError};
use crate::ops::TeamSync;

const COUNT_MASK: u64 = 0xFFFF_FFFF;
const GENERATION: u64 = 1 << 32;

/// Checks that `team` is a barrier `me` can take part in: handle in `0..max_teams`,
/// non-zero stride and size, every member a PE of the world, `me` a member.
pub(crate) fn validate(region: &Region, me: usize, team: &TeamSync) -> Result<()> {
    let l = region.layout();
    let bad = |what: String| {
        Err(TransportError::BadArgument {
            op: "barrier",
            what,
        })
    };
    if team.team < 0 || team.team as usize >= l.max_teams {
        return bad(format!(
            "team handle {} is outside 0..{} (the mock's barrier slots, MockConfig::max_teams)",
            team.team, l.max_teams
        ));
    }
    if team.stride == 0 || team.size == 0 {
        return bad(format!(
            "team {} has stride {} and size {}: both must be at least 1",
            team.team, team.stride, team.size
        ));
    }
    let last = (team.size - 1)
        .checked_mul(team.stride)
        .and_then(|r| r.checked_add(team.start));
    match last {
        Some(last) if last < l.n_pes => {}
        _ => {
            return bad(format!(
                "team {} (start {}, stride {}, size {}) reaches past the world's {} PEs",
                team.team, team.start, team.stride, team.size, l.n_pes
            ));
        }
    }
    if team.team_pe(me).is_none() {
        return bad(format!(
            "PE {me} is not a member of team {} (start {}, stride {}, size {})",
            team.team, team.start, team.stride, team.size
        ));
    }
    Ok(())
}

/// Arrives at `team`'s barrier and waits for every member (validated by [`validate`]).
pub(crate) fn barrier(
    region: &Region,
    me: usize,
    team: &TeamSync,
    timeout: Duration,
) -> Result<()> {
    let size = team.size as u64;
    let slot = region.barrier_slot(team.start, team.team as usize);
    let old = slot.fetch_add(1, Ordering::AcqRel);
    let generation = old >> 32;
    let arrived = (old & COUNT_MASK) + 1;
    let record = generation << 32 | (team.start as u64 + 1);
    region
        .arrival(me, team.team as usize)
        .store(record, Ordering::Release);
    if arrived > size {
        withdraw(slot, generation);
        return Err(TransportError::BadArgument {
            op: "barrier",
            what: format!(
                "team {}'s barrier slot at PE {} counts {arrived} arrivals for {size} members: \
                 two live teams share this handle and PE 0, or a PE is in the barrier twice",
                team.team, team.start
            ),
        });
    }
    let futex = FutexWord {
        word: slot,
        half: Half::High,
    };
    if arrived == size {
        slot.fetch_add(GENERATION - size, Ordering::AcqRel);
        futex.wake();
        return Ok(());
    }
    let outcome = poll(
        timeout,
        Pacing::for_pes(team.size),
        Some(futex),
        || slot.load(Ordering::Acquire) >> 32 != generation,
        || peers::first_gone(region, me, missing(region, team, record)),
    );
    let fail = match outcome {
        Outcome::Done => return Ok(()),
        Outcome::Gone(pe, why) => peers::peer_gone(region, me, "barrier", pe, why),
        Outcome::TimedOut(waited) => TransportError::Timeout {
            pe: me,
            op: "barrier",
            waited,
            detail: String::new(),
        },
    };
    match withdraw(slot, generation) {
        // The barrier completed while we gave up: it succeeded after all.
        None => Ok(()),
        Some(arrived) => Err(match fail {
            TransportError::Timeout { pe, op, waited, .. } => TransportError::Timeout {
                pe,
                op,
                waited,
                detail: format!(
                    "team {}: {arrived} of {size} PEs arrived; {}",
                    team.team,
                    name_missing(&missing(region, team, record).collect::<Vec<_>>())
                ),
            },
            other => other,
        }),
    }
}

/// The members of `team` whose arrival record is not `record` (the barrier this PE waits
/// in): the PEs that have not arrived.
fn missing<'a>(
    region: &'a Region,
    team: &'a TeamSync,
    record: u64,
) -> impl Iterator<Item = usize> + 'a {
    (0..team.size).map(|i| team.world_pe(i)).filter(move |&pe| {
        region
            .arrival(pe, team.team as usize)
            .load(Ordering::Acquire)
            != record
    })
}

/// "not arrived: PE 2" / "not arrived: PEs 1, 5 and 7" / the first 16 "and 40 more".
fn name_missing(pes: &[usize]) -> String {
    const SHOWN: usize = 16;
    let list = |p: &[usize]| {
        p.iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match pes {
        [] => "every PE has arrived by now".into(),
        [pe] => format!("not arrived: PE {pe}"),
        [head @ .., last] if pes.len() <= SHOWN => {
            format!("not arrived: PEs {} and {last}", list(head))
        }
        _ => format!(
            "not arrived: PEs {} and {} more",
            list(&pes[..SHOWN]),
            pes.len() - SHOWN
        ),
    }
}

/// Takes back one arrival if the barrier of `generation` has not completed; returns the
/// arrivals counted before (including this PE's), or `None` if it had completed.
fn withdraw(slot: &std::sync::atomic::AtomicU64, generation: u64) -> Option<u64> {
    let mut word = slot.load(Ordering::Acquire);
    loop {
        if word >> 32 != generation {
            return None;
        }
        match slot.compare_exchange_weak(word, word - 1, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Some(word & COUNT_MASK),
            Err(now) => word = now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_pes_are_named() {
        assert_eq!(name_missing(&[2]), "not arrived: PE 2");
        assert_eq!(name_missing(&[1, 5, 7]), "not arrived: PEs 1, 5 and 7");
        let many: Vec<usize> = (0..20).collect();
        assert!(name_missing(&many).ends_with("14, 15 and 4 more"));
    }
}
