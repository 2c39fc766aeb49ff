//! Multi-process jobs: the job file `/dev/shm/niin-mock-<job_id>` that PE 0 creates and
//! every PE maps, the attach handshake with its init barrier, and [`cleanup_job`].

use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

use memmap2::MmapMut;

use super::config::MockConfig;
use super::peers;
use super::region::{HeaderField, LAYOUT_VERSION, Layout, MAGIC, PAGE, PeState, Region};
use super::wait::{Backoff, FutexWord, Outcome, Pacing, poll};
use crate::error::{Departure, Result, TransportError};
use crate::status::StatusBoard;

/// Prefix of a job file's name; the job id follows.
pub const JOB_FILE_PREFIX: &str = "niin-mock-";

/// Longest job id.
pub const MAX_JOB_ID_LEN: usize = 64;

/// Checks a job id: 1 to 64 characters of `A-Z a-z 0-9 _ . -`.
pub(crate) fn validate_job_id(job_id: &str) -> Result<()> {
    let ok = (1..=MAX_JOB_ID_LEN).contains(&job_id.len())
        && job_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(TransportError::BadArgument {
            op: "mock job",
            what: format!(
                "job id {job_id:?} must be 1 to {MAX_JOB_ID_LEN} characters of A-Z a-z 0-9 _ . -"
            ),
        })
    }
}

/// The folder of job files: `/dev/shm` when it exists, else the temporary directory.
fn job_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// The path of `job_id`'s file: `/dev/shm/niin-mock-<job_id>` (or the same name in
/// `std::env::temp_dir()` where `/dev/shm` does not exist).
pub fn job_file_path(job_id: &str) -> Result<PathBuf> {
    validate_job_id(job_id)?;
    Ok(job_dir().join(format!("{JOB_FILE_PREFIX}{job_id}")))
}

/// Removes `job_id`'s file if it is still there (a job that failed before every PE
/// attached); returns whether there was one. The launcher calls this when a job ends.
/// Removing the file of a running job is harmless to PEs that have mapped it, but PEs
/// that have not attached yet can then not join.
pub fn cleanup_job(job_id: &str) -> Result<bool> {
    let path = job_file_path(job_id)?;
    match fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(TransportError::Os {
            what: format!("removing the mock job file {}", path.display()),
            cause: e.to_string(),
        }),
    }
}

/// FNV-1a of the job id, recorded in the header so a file of another job is refused
/// (and usable by callers as the job's numeric identity).
pub fn job_hash(job_id: &str) -> u64 {
    job_id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

fn os(what: String) -> impl FnOnce(std::io::Error) -> TransportError {
    move |e| TransportError::Os {
        what,
        cause: e.to_string(),
    }
}

/// Maps `file` read-write and shared.
fn map(file: &fs::File, path: &Path) -> Result<MmapMut> {
    // SAFETY: the job file is private to the job: PE 0 created it with `create_new`, it
    // is only ever mapped (never truncated) by the job's PEs, and every access to the
    // mapping goes through `Region`, which bounds-checks it. Another program truncating
    // the file would be outside this contract (and would fault, not corrupt memory).
    unsafe { MmapMut::map_mut(file) }
        .map_err(os(format!("mapping the mock job file {}", path.display())))
}

/// Bytes free for unprivileged users in the file system of `dir` (`statvfs`), or `None`
/// when it cannot be asked.
pub(crate) fn free_space(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt as _;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `statvfs` is plain data; all-zero bytes are a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a writable statvfs, both alive across
    // the call.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// Refuses a job whose mapping (every heap, fully used) would not fit in the free space
/// of the job file's file system: the file is sparse, so creating it succeeds, and a PE
/// that later touches a page the file system cannot give dies of SIGBUS.
fn check_space(job_id: &str, path: &Path, layout: &Layout) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let Some(free) = free_space(dir) else {
        return Ok(());
    };
    if layout.total as u64 <= free {
        return Ok(());
    }
    Err(TransportError::Os {
        what: format!(
            "creating the mock job file {} for job {job_id:?}",
            path.display()
        ),
        cause: format!(
            "{} PEs with {}-byte heaps need {} bytes ({} MiB) of shared memory, but {} has              only {free} bytes ({} MiB) free: lower NVSHMEM_SYMMETRIC_SIZE, run fewer PEs,              or enlarge {} (docker run --shm-size)",
            layout.n_pes,
            layout.heap_size,
            layout.total,
            (layout.total as u64).div_ceil(1 << 20),
            dir.display(),
            free >> 20,
            dir.display()
        ),
    })
}

/// PE 0: creates the job file, sizes it (sparse), maps it, claims PE 0 and publishes
/// the header with the magic last.
fn create(job_id: &str, path: &Path, layout: Layout) -> Result<Region> {
    check_space(job_id, path, &layout)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| TransportError::Os {
            what: format!(
                "creating the mock job file {} for job {job_id:?}",
                path.display()
            ),
            cause: if e.kind() == ErrorKind::AlreadyExists {
                format!(
                    "it already exists: it is a stale file of an earlier job that failed before \
                     every PE attached (remove it with cleanup_job({job_id:?}) or rm), or the \
                     job id is in use by another job"
                )
            } else {
                e.to_string()
            },
        })?;
    let sized = file.set_len(layout.total as u64).map_err(os(format!(
        "sizing the mock job file {} to {} bytes",
        path.display(),
        layout.total
    )));
    let region = sized
        .and_then(|()| map(&file, path))
        .and_then(|m| Region::new(m, layout));
    let region = match region {
        Ok(r) => r,
        Err(e) => {
            let _ = fs::remove_file(path);
            return Err(e);
        }
    };
    region.claim_pe(0, std::process::id());
    region
        .header(HeaderField::Attached)
        .fetch_add(1, Ordering::AcqRel);
    region.write_header(job_hash(job_id));
    Ok(region)
}

/// PE `pe` > 0: waits for the file and its header, checks the header against this
/// PE's parameters, and maps the file with its layout.
fn open(
    job_id: &str,
    path: &Path,
    pe: usize,
    layout: Layout,
    config: &MockConfig,
) -> Result<Region> {
    let start = Instant::now();
    let timeout = |what: &str| TransportError::Timeout {
        pe,
        op: "attach",
        waited: start.elapsed(),
        detail: format!("job {job_id:?}: the job file {} {what}", path.display()),
    };
    let mut backoff = Backoff::new(Pacing::for_pes(layout.n_pes).max_sleep * 4);
    let map = loop {
        match OpenOptions::new().read(true).write(true).open(path) {
            // PE 0 sizes the file right after creating it: wait until it has.
            Ok(f) if f.metadata().map(|m| m.len() >= PAGE).unwrap_or(false) => {
                break map(&f, path)?;
            }
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => {
                return Err(os(format!("opening the mock job file {}", path.display()))(
                    e,
                ));
            }
        }
        if start.elapsed() >= config.timeout {
            return Err(timeout("was not created by PE 0"));
        }
        backoff.snooze();
    };
    let probe = Region::new(map, Layout::probe())?;
    let remaining = config.timeout.saturating_sub(start.elapsed());
    let magic = probe.header(HeaderField::Magic);
    if poll(
        remaining,
        Pacing::for_pes(layout.n_pes),
        None,
        || magic.load(Ordering::Acquire) == MAGIC,
        || None,
    ) != Outcome::Done
    {
        return Err(timeout("exists but PE 0 did not finish writing its header"));
    }
    let node = if layout.node_size == usize::MAX {
        u64::MAX
    } else {
        layout.node_size as u64
    };
    let expect = [
        ("layout version", HeaderField::Version, LAYOUT_VERSION),
        ("job id hash", HeaderField::JobHash, job_hash(job_id)),
        ("n_pes", HeaderField::NPes, layout.n_pes as u64),
        ("heap_size", HeaderField::HeapSize, layout.heap_size),
        ("node_size", HeaderField::NodeSize, node),
        ("max_teams", HeaderField::MaxTeams, layout.max_teams as u64),
    ];
    for (name, field, mine) in expect {
        let theirs = probe.header(field).load(Ordering::Relaxed);
        if theirs != mine {
            return Err(TransportError::BadArgument {
                op: "attach",
                what: format!(
                    "job {job_id:?} ({}) was created with {name} = {theirs}, but PE {pe} was \
                     given {name} = {mine}: every PE of a job must use the same values",
                    path.display()
                ),
            });
        }
    }
    let region = Region::new(probe.into_map(), layout)?;
    match peers::gone(&region, 0) {
        None => Ok(region),
        Some(why) => Err(TransportError::BadArgument {
            op: "attach",
            what: format!(
                "the job file {} is stale: its PE 0 (pid {}) {} (remove it with \
                 cleanup_job({job_id:?}))",
                path.display(),
                region.pe_pid(0),
                if matches!(why, Departure::Died { .. }) {
                    "is no longer running".to_string()
                } else {
                    why.to_string()
                }
            ),
        }),
    }
}

/// Maps the job's shared mapping for PE `pe` of an `n_pes`-PE job (PE 0 creates it) and
/// claims the PE's control block; [`init_barrier`] then waits for the others.
pub(crate) fn attach(job_id: &str, pe: usize, n_pes: usize, config: &MockConfig) -> Result<Region> {
    validate_job_id(job_id)?;
    config.validate()?;
    let layout = Layout::new(n_pes, config)?;
    if pe >= n_pes {
        return Err(TransportError::PeOutOfRange { pe, n_pes });
    }
    let path = job_file_path(job_id)?;
    let board = StatusBoard::from_env(n_pes);
    let mut region = if pe == 0 {
        create(job_id, &path, layout)?
    } else {
        let region = open(job_id, &path, pe, layout, config)?;
        if !region.claim_pe(pe, std::process::id()) {
            return Err(TransportError::BadArgument {
                op: "attach",
                what: format!(
                    "PE {pe} of job {job_id:?} ({}) is already attached: two processes were \
                     given the same PE number",
                    path.display()
                ),
            });
        }
        region
    };
    region.set_board(board);
    Ok(region)
}

/// Counts PE `pe` in and waits until all `n_pes` PEs of the job have attached (the init
/// barrier); PE 0 then unlinks the file. `region` is shared with the PE's life-lock
/// holder, started before.
pub(crate) fn init_barrier(
    job_id: &str,
    region: &Region,
    pe: usize,
    config: &MockConfig,
) -> Result<()> {
    let n_pes = region.layout().n_pes;
    let path = job_file_path(job_id)?;
    let attached = region.header(HeaderField::Attached);
    let futex = FutexWord { word: attached };
    if pe != 0 && attached.fetch_add(1, Ordering::AcqRel) + 1 >= n_pes as u64 {
        futex.wake();
    }
    let not_attached = || (0..n_pes).filter(|&p| region.pe_state(p) == PeState::Absent);
    let outcome = poll(
        config.timeout,
        Pacing::for_pes(n_pes),
        Some(futex),
        || attached.load(Ordering::Acquire) >= n_pes as u64,
        || peers::first_gone(region, pe, 0..n_pes),
    );
    let failed = match outcome {
        Outcome::Done => None,
        Outcome::Gone(gone, why) => Some(peers::peer_gone(region, pe, "attach", gone, why)),
        Outcome::TimedOut(waited) => Some(TransportError::Timeout {
            pe,
            op: "attach",
            waited,
            detail: format!(
                "job {job_id:?} ({}): {} of {n_pes} PEs attached; not attached: {}",
                path.display(),
                attached.load(Ordering::Acquire),
                list_pes(not_attached())
            ),
        }),
    };
    if let Some(e) = failed {
        // The job cannot start; PE 0 takes its file away so nothing is left behind.
        if pe == 0 {
            let _ = fs::remove_file(&path);
        }
        return Err(e);
    }
    if pe == 0 {
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => {
                return Err(os(format!(
                    "unlinking the mock job file {}",
                    path.display()
                ))(e));
            }
        }
    }
    Ok(())
}

/// "PE 3" / "PEs 1, 2, 5" (the first 16, then "and N more").
fn list_pes(pes: impl Iterator<Item = usize>) -> String {
    let pes: Vec<usize> = pes.collect();
    let shown: Vec<String> = pes.iter().take(16).map(usize::to_string).collect();
    let more = if pes.len() > 16 {
        format!(" and {} more", pes.len() - 16)
    } else {
        String::new()
    };
    match pes.len() {
        0 => "none (they attached just now)".into(),
        1 => format!("PE {}", pes[0]),
        _ => format!("PEs {}{more}", shown.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_are_checked() {
        for ok in ["a", "job-1.x_y", &"z".repeat(64)] {
            validate_job_id(ok).unwrap();
        }
        for bad in ["", "a/b", "a b", "ü", &"z".repeat(65)] {
            let e = validate_job_id(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("{bad:?}")) && e.contains("A-Z"), "{e}");
        }
        assert!(cleanup_job("../etc").is_err());
    }

    #[test]
    fn job_file_lives_in_dev_shm() {
        let p = job_file_path("abc").unwrap();
        assert!(p.ends_with("niin-mock-abc"));
        if Path::new("/dev/shm").is_dir() {
            assert!(p.starts_with("/dev/shm"));
        }
    }

    #[test]
    fn job_hash_differs_between_ids() {
        assert_ne!(job_hash("a"), job_hash("b"));
        assert_eq!(job_hash("a"), job_hash("a"));
    }
}
