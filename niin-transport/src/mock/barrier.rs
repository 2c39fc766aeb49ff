//! Team barriers: a central, self-resetting, sense-reversing barrier per team slot.
//!
//! The slot of team `t` lives in the control block of the team's PE 0 (world PE
//! `start`), at index `t`, so teams of disjoint PE sets can share a handle. It is one
//! 64-bit word: the sum of the arrivals' fingerprints (bits 32..64, modulo 2^32), the
//! generation (bits 21..32, modulo 2^11), the verdict of the last round (bit 20) and the
//! arrival count (bits 0..20). A PE arrives with one acq-rel `fetch_add` of 1 plus its
//! fingerprint (shifted), which also reads the generation it waits on. The last arriver
//! stores the next word (count and sum 0, its verdict, the next generation) with a
//! release; the others wait (acquire loads) for the generation to change. The arrivals
//! form one RMW chain, so the last arriver sees everyone's writes before their arrival
//! and publishes them with its release; every waiter acquires them. The count is back at
//! 0 after every round, so a destroyed and recreated team handle starts clean.
//!
//! **Fingerprints.** A barrier that carries a collective call's fingerprint
//! ([`Transport::barrier_with_fingerprint`]; the mock folds it to 32 bits, non-zero)
//! adds it in the arrival itself. The last arriver, whose `fetch_add` returned the sum of
//! everyone else's, compares the total with `size ×` its own fingerprint: the verdict bit
//! says whether they differ, and every member reads it in the word it waited on. No
//! member reads anything of another's, and no instruction is added: a barrier carrying a
//! fingerprint costs what a plain one does. A plain barrier carries 0, which differs from
//! any fingerprint. A miss needs fingerprints whose differences cancel modulo 2^32 (for
//! hashes, about one mismatch in 4·10^9).
//!
//! [`Transport::barrier_with_fingerprint`]: crate::Transport::barrier_with_fingerprint
//!
//! A PE that times out, or finds a member gone, withdraws its arrival with a
//! compare-exchange that only succeeds if the generation has not moved, so the slot
//! stays consistent for later barriers.
//!
//! Waiters spin briefly, then sleep on the generation half of the slot with a futex; the
//! last arriver wakes them. Each arriver also writes an arrival record (the generation and
//! the team's start) in its own control block, so a waiter checks only the members that
//! have not arrived for being gone, and a timeout names them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::peers;
use super::region::Region;
use super::wait::{FutexWord, Outcome, Pacing, poll};
use crate::error::{Result, TransportError};
use crate::ops::TeamSync;
use crate::transport::Fingerprints;

/// The arrival count in a slot's word (teams of at most `MAX_PES` members, with room
/// for the over-count of two teams sharing a slot).
const COUNT_MASK: u64 = (1 << 20) - 1;
/// The verdict in a slot's word: the last round's fingerprints differed.
const DIFFER: u64 = 1 << 20;
/// One generation in a slot's word.
const GENERATION: u64 = 1 << 21;
/// The generation in a slot's word.
const GENERATION_MASK: u64 = 0xFFFF_FFFF & !(GENERATION - 1);
/// Where a slot's word keeps the sum of the fingerprints (its high 32 bits).
const SUM_SHIFT: u32 = 32;

/// The 32 bits of `fingerprint` a slot's word sums: 0 only for 0 (no fingerprint).
fn folded(fingerprint: u64) -> u64 {
    match (fingerprint ^ (fingerprint >> 32)) & 0xFFFF_FFFF {
        0 if fingerprint != 0 => 1,
        f => f,
    }
}

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

/// Arrives at `team`'s barrier carrying `fingerprint` (0: none) and waits for every
/// member (validated by [`validate`]); says whether every member carried the same.
pub(crate) fn barrier(
    region: &Region,
    me: usize,
    team: &TeamSync,
    fingerprint: u64,
    timeout: Duration,
) -> Result<Fingerprints> {
    let size = team.size as u64;
    let slot = region.barrier_slot(team.start, team.team as usize);
    let fingerprint = folded(fingerprint);
    let old = slot.fetch_add(1 + (fingerprint << SUM_SHIFT), Ordering::AcqRel);
    let generation = old & GENERATION_MASK;
    let arrived = (old & COUNT_MASK) + 1;
    let record = (generation / GENERATION) << 32 | (team.start as u64 + 1);
    region
        .arrival(me, team.team as usize)
        .store(record, Ordering::Release);
    if arrived > size {
        withdraw(slot, generation, fingerprint);
        return Err(TransportError::BadArgument {
            op: "barrier",
            what: format!(
                "team {}'s barrier slot at PE {} counts {arrived} arrivals for {size} members: \
                 two live teams share this handle and PE 0, or a PE is in the barrier twice",
                team.team, team.start
            ),
        });
    }
    let futex = FutexWord { word: slot };
    if arrived == size {
        // `old` holds every other arrival's fingerprint; nobody changes the word before
        // the store below (but a member withdrawing at its timeout, whose withdrawal this
        // store overrides: the round completes).
        let total = ((old >> SUM_SHIFT) + fingerprint) & 0xFFFF_FFFF;
        let verdict = if total == fingerprint.wrapping_mul(size) & 0xFFFF_FFFF {
            0
        } else {
            DIFFER
        };
        let next = (generation + GENERATION) & GENERATION_MASK | verdict;
        slot.store(next, Ordering::Release);
        futex.wake();
        return Ok(fingerprints(verdict));
    }
    // The word that showed the generation move: its verdict is this round's (the next
    // round's cannot be set before this PE arrives at it).
    let mut seen = 0;
    let outcome = poll(
        timeout,
        Pacing::for_pes(team.size),
        Some(futex),
        || {
            seen = slot.load(Ordering::Acquire);
            seen & GENERATION_MASK != generation
        },
        || peers::first_gone(region, me, missing(region, team, record)),
    );
    let fail = match outcome {
        Outcome::Done => return Ok(fingerprints(seen & DIFFER)),
        Outcome::Gone(pe, why) => peers::peer_gone(region, me, "barrier", pe, why),
        Outcome::TimedOut(waited) => TransportError::Timeout {
            pe: me,
            op: "barrier",
            waited,
            detail: String::new(),
        },
    };
    match withdraw(slot, generation, fingerprint) {
        // The barrier completed while we gave up: it succeeded after all.
        Withdrawal::TooLate(word) => Ok(fingerprints(word & DIFFER)),
        Withdrawal::Withdrawn(arrived) => Err(match fail {
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

/// The answer of a round whose verdict bit is `verdict`.
fn fingerprints(verdict: u64) -> Fingerprints {
    if verdict == 0 {
        Fingerprints::Same
    } else {
        Fingerprints::Differ
    }
}

/// How a [`withdraw`] ended.
enum Withdrawal {
    /// The arrival was taken back; the arrivals counted before (this PE's included).
    Withdrawn(u64),
    /// The barrier had completed; the slot's word that showed it.
    TooLate(u64),
}

/// Takes back one arrival, and its (folded) `fingerprint`, if the barrier of
/// `generation` has not completed.
fn withdraw(slot: &AtomicU64, generation: u64, fingerprint: u64) -> Withdrawal {
    let arrival = 1 + (fingerprint << SUM_SHIFT);
    let mut word = slot.load(Ordering::Acquire);
    loop {
        if word & GENERATION_MASK != generation {
            return Withdrawal::TooLate(word);
        }
        let back = word.wrapping_sub(arrival);
        match slot.compare_exchange_weak(word, back, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Withdrawal::Withdrawn(word & COUNT_MASK),
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
