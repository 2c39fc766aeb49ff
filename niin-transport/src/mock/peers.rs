//! Whether the other PEs of a job are still there: finalized (their control block says
//! so) or dead (multi-process: their recorded pid no longer runs, per `/proc/<pid>`).
//! Long waits and barriers ask this every ~100 ms and fail with `PeerGone` instead of
//! waiting for a PE that can never come.

use std::fs;
use std::path::Path;

use super::region::{PeState, Region};

/// Why a PE is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gone {
    /// It called `finalize` (or dropped its transport).
    Finalized,
    /// Its process ended without finalizing (a crash).
    Died,
}

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

/// Whether `pe` is gone, and why.
pub(crate) fn gone(region: &Region, pe: usize) -> Option<Gone> {
    match region.pe_state(pe) {
        PeState::Finalized => Some(Gone::Finalized),
        PeState::Attached if !pid_alive(region.pe_pid(pe)) => Some(Gone::Died),
        PeState::Attached | PeState::Absent => None,
    }
}

/// The first PE of `members` (other than `me`) that is gone: a barrier over them cannot
/// complete.
pub(crate) fn first_gone_member(
    region: &Region,
    me: usize,
    members: impl IntoIterator<Item = usize>,
) -> Option<usize> {
    members
        .into_iter()
        .filter(|&pe| pe != me)
        .find(|&pe| gone(region, pe).is_some())
}

/// For a wait on this PE's memory, which any PE may satisfy: a PE whose process died
/// (the job is broken), or, when every other PE has finalized or died, the lowest of
/// them (nobody is left to write). A world of one PE never reports anyone.
pub(crate) fn wait_hopeless(region: &Region, me: usize) -> Option<usize> {
    let n = region.layout().n_pes;
    let mut all_gone = n > 1;
    let mut first = None;
    for pe in (0..n).filter(|&pe| pe != me) {
        match gone(region, pe) {
            Some(Gone::Died) => return Some(pe),
            Some(Gone::Finalized) => {
                first.get_or_insert(pe);
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
