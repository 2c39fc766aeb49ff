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

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::peers;
use super::region::Region;
use super::wait::{Outcome, poll};
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
    if arrived == size {
        slot.fetch_add(GENERATION - size, Ordering::AcqRel);
        return Ok(());
    }
    let members = (0..team.size).map(|i| team.world_pe(i));
    let outcome = poll(
        timeout,
        || slot.load(Ordering::Acquire) >> 32 != generation,
        || peers::first_gone_member(region, me, members.clone()),
    );
    let fail = match outcome {
        Outcome::Done => return Ok(()),
        Outcome::Gone(pe) => TransportError::PeerGone { pe, op: "barrier" },
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
                detail: format!("team {}: {arrived} of {size} PEs arrived", team.team),
            },
            other => other,
        }),
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
