//! Whether the other PEs of a job are still there, and if not, how they left: finalized
//! or panicked (their control block says so), or dead (multi-process: their life lock's
//! owner died, see `life.rs`; where a PE has no usable life lock, its recorded pid no
//! longer runs, per `/proc/<pid>`). The launcher's status board, where there is one
//! (niinrun), says how a dead PE's process ended.
//!
//! Long waits and barriers ask this — for the PEs they still wait for, at an interval
//! that grows with the job's size — and fail with `PeerGone` instead of waiting for a PE
//! that can never come. Every check is a few atomic loads per PE; only a PE without a
//! life lock costs a `/proc` read.

use std::fs;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::life::OWNER_DIED;
use super::region::{LifeFlag, PeState, Region};
use crate::error::{Departure, TransportError};
use crate::status::PeEnd;

/// How long a PE that found a peer dead waits for the launcher to record how it ended.
const CAUSE_WAIT: Duration = Duration::from_millis(300);

/// Whether process `pid` is running. A pid of 0 (not recorded yet), this process, or a
/// system without `/proc` count as running; a zombie counts as dead.
pub(crate) fn pid_alive(pid: u32) -> bool {
    if pid == 0 || pid == std::process::id() || !Path::new("/proc/self").exists() {
        return true;
    }
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the first field after the parenthesised command name.
        Ok(stat) => match stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].trim_start().chars().next())
        {
            Some('Z' | 'X' | 'x') => false,
            Some(_) | None => true,
        },
        Err(_) => false,
    }
}

/// Whether the process of attached PE `pe` ended without finalizing.
fn died(region: &Region, pe: usize) -> bool {
    if let Some(board) = region.board()
        && board.ended(pe).is_some()
    {
        return true;
    }
    let flag = region.life_flag(pe).load(Ordering::Acquire);
    if flag == LifeFlag::Held as u32 {
        region.life_word(pe) & OWNER_DIED != 0
    } else {
        !pid_alive(region.pe_pid(pe))
    }
}

/// How `pe`'s process ended, in the launcher's words when it tells (waiting briefly for
/// it to record it), else a plain statement.
fn cause(region: &Region, pe: usize) -> String {
    if let Some(board) = region.board() {
        let until = Instant::now() + CAUSE_WAIT;
        loop {
            match board.ended(pe) {
                Some(PeEnd::Failed(how)) => return how,
                Some(PeEnd::Success) => {
                    return "its process exited with status 0 without finalizing".into();
                }
                None if Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                None => break,
            }
        }
    }
    "its process ended without finalizing".into()
}

/// Whether `pe` is gone, and how it left.
pub(crate) fn gone(region: &Region, pe: usize) -> Option<Departure> {
    match region.pe_state(pe) {
        PeState::Finalized => Some(Departure::Finalized),
        PeState::Panicked => Some(Departure::Panicked),
        PeState::Attached if died(region, pe) => Some(Departure::Died {
            how: cause(region, pe),
        }),
        // A PE that never attached: only the launcher can tell that it is gone.
        PeState::Absent => match region.board().and_then(|b| b.ended(pe)) {
            Some(PeEnd::Failed(how)) => Some(Departure::Died { how }),
            Some(PeEnd::Success) => Some(Departure::Died {
                how: "its process exited with status 0 before attaching".into(),
            }),
            None => None,
        },
        PeState::Attached => None,
    }
}

/// The error of PE `me`'s operation `op`, which cannot complete because `pe` left
/// (`why`); under niinrun, also marks `me`'s failure as a consequence of another's on the
/// status board, so the launcher blames `pe`, not `me`.
pub(crate) fn peer_gone(
    region: &Region,
    me: usize,
    op: &'static str,
    pe: usize,
    why: Departure,
) -> TransportError {
    if let Some(board) = region.board() {
        board.mark_consequence(me);
    }
    TransportError::PeerGone { pe, op, why }
}

/// The first PE of `members` (other than `me`) that is gone, with how it left.
pub(crate) fn first_gone(
    region: &Region,
    me: usize,
    members: impl IntoIterator<Item = usize>,
) -> Option<(usize, Departure)> {
    members
        .into_iter()
        .filter(|&pe| pe != me)
        .find_map(|pe| gone(region, pe).map(|why| (pe, why)))
}

/// For a wait on this PE's memory, which any PE may satisfy: a PE whose process died
/// (the job is broken), or, when every other PE has left, the lowest of them (nobody is
/// left to write). A world of one PE never reports anyone.
pub(crate) fn wait_hopeless(region: &Region, me: usize) -> Option<(usize, Departure)> {
    let n = region.layout().n_pes;
    let mut all_gone = n > 1;
    let mut first = None;
    for pe in (0..n).filter(|&pe| pe != me) {
        match gone(region, pe) {
            Some(why @ Departure::Died { .. }) => return Some((pe, why)),
            Some(why) => {
                first.get_or_insert((pe, why));
            }
            None => all_gone = false,
        }
    }
    if all_gone { first } else { None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_reaped_child_is_not() {
        assert!(pid_alive(std::process::id()));
        assert!(pid_alive(0));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!pid_alive(pid));
    }

    #[test]
    fn an_unreaped_dead_child_is_dead() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Wait until it has exited (a zombie) without reaping it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while pid_alive(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!pid_alive(pid));
        child.wait().unwrap();
    }
}
