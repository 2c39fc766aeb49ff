//! Per-job cleanup: hooks run when a job ends, and the rendezvous directory.

use std::fmt;
use std::fs::{self, DirBuilder, File};
use std::io::{self, Read as _, Write as _};
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::DirBuilderExt as _;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{JobInfo, LaunchError};

/// Prefix of the names of the files the mock transport creates for a job:
/// `/dev/shm/niin-mock-<job id>` (its POSIX shared-memory segment) and
/// `std::env::temp_dir()/niin-mock-<job id>` (its fallback file or directory). This is a
/// naming contract with `niin-transport`'s mock, which unlinks them itself when all PEs
/// finish normally; [`CleanupHook::mock_transport`] removes what a crashed PE left behind.
pub const MOCK_SHM_PREFIX: &str = "niin-mock-";

/// The paths of the mock transport's files for `job_id` (see [`MOCK_SHM_PREFIX`]):
/// `[/dev/shm/niin-mock-<job_id>, temp_dir()/niin-mock-<job_id>]`.
pub fn mock_transport_paths(job_id: &str) -> [PathBuf; 2] {
    let name = format!("{MOCK_SHM_PREFIX}{job_id}");
    [
        Path::new("/dev/shm").join(&name),
        std::env::temp_dir().join(name),
    ]
}

/// The action of a [`CleanupHook`].
type Action = dyn Fn(&JobInfo) -> io::Result<()> + Send + Sync;

/// An action [`run`](super::run) performs after a job ended, however it ended: all PEs
/// exited, a PE failed, timeout, signal, or a PE that could not be started. Hooks run in
/// the order of [`LaunchSpec::cleanup`](super::LaunchSpec::cleanup), after every PE has
/// been reaped and before the rendezvous directory is removed. An error or panic of a hook
/// is reported on stderr (`niinrun: cleanup NAME failed: ...`) and the next hook runs.
#[derive(Clone)]
pub struct CleanupHook {
    name: String,
    action: Arc<Action>,
}

impl CleanupHook {
    /// A hook named `name` (used in error reports) that runs `action`.
    pub fn new(
        name: impl Into<String>,
        action: impl Fn(&JobInfo) -> io::Result<()> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            action: Arc::new(action),
        }
    }

    /// A hook that removes `path` — a file, a symbolic link (not its target), or a
    /// directory with its contents — if it exists.
    pub fn remove_path(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        Self::new(format!("remove {}", path.display()), move |_| {
            remove_if_exists(&path)
        })
    }

    /// The hook the niinrun binary registers: removes the mock transport's files of the
    /// job ([`mock_transport_paths`]) if a PE left them.
    pub fn mock_transport() -> Self {
        Self::new("mock transport files", |job| {
            let mut result = Ok(());
            for path in mock_transport_paths(&job.job_id) {
                if let Err(e) = remove_if_exists(&path) {
                    result = Err(io::Error::new(e.kind(), format!("{}: {e}", path.display())));
                }
            }
            result
        })
    }

    /// The name given to the hook.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs the hook, reporting an error or panic on stderr.
    fn run_reporting(&self, job: &JobInfo) {
        let message = match panic::catch_unwind(AssertUnwindSafe(|| (self.action)(job))) {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e.to_string(),
            Err(_) => "panicked".to_owned(),
        };
        let _ = writeln!(
            io::stderr().lock(),
            "niinrun: cleanup {} failed: {message}",
            self.name
        );
    }
}

impl fmt::Debug for CleanupHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CleanupHook").field(&self.name).finish()
    }
}

/// Removes a file, symbolic link or directory tree; a missing path is no error.
pub(super) fn remove_if_exists(path: &Path) -> io::Result<()> {
    let result = match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) => Err(e),
    };
    match result {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Runs the cleanup hooks of a job when dropped.
pub(super) struct HookGuard<'a> {
    /// The hooks, in order.
    pub(super) hooks: &'a [CleanupHook],
    /// The job they clean up after.
    pub(super) job: &'a JobInfo,
}

impl Drop for HookGuard<'_> {
    fn drop(&mut self) {
        for hook in self.hooks {
            hook.run_reporting(self.job);
        }
    }
}

/// The name of the lock file in a rendezvous directory: it holds the job id, and the
/// niinrun that runs the job holds an exclusive `flock` on it until the job ended. A
/// directory whose lock nobody holds was left by a niinrun that was killed (SIGKILL).
pub(super) const LOCK_FILE: &str = "niinrun.lock";

/// Takes `file`'s exclusive `flock`: blocking, or only if free (`wait` false); whether it
/// was taken. The lock goes with the open file: it ends when the file is closed,
/// whatever way the process ends.
fn flock(file: &File, wait: bool) -> bool {
    let op = if wait {
        libc::LOCK_EX
    } else {
        libc::LOCK_EX | libc::LOCK_NB
    };
    // SAFETY: flock takes a descriptor that `file` keeps open across the call.
    unsafe { libc::flock(file.as_raw_fd(), op) == 0 }
}

/// Writes `dir/niinrun.lock` holding `job_id`, locked: under a temporary name first, so
/// that the lock file is never seen unlocked.
fn create_lock(dir: &Path, job_id: &str) -> io::Result<File> {
    let tmp = dir.join(".niinrun.lock.tmp");
    let mut file = File::create(&tmp)?;
    if !flock(&file, true) {
        return Err(io::Error::last_os_error());
    }
    file.write_all(job_id.as_bytes())?;
    fs::rename(&tmp, dir.join(LOCK_FILE))?;
    Ok(file)
}

/// What [`sweep_stale`] found in the temporary directory.
#[derive(Debug, Default)]
pub(super) struct Sweep {
    /// Job ids of rendezvous directories a live niinrun holds.
    pub(super) live: Vec<String>,
    /// Rendezvous directories removed, with their job ids.
    pub(super) removed: Vec<(PathBuf, String)>,
}

/// Removes what niinruns killed by SIGKILL left in `tmp` (`std::env::temp_dir()`): each
/// `niinrun-*` directory with a lock file that nobody holds, with the mock transport's
/// files of its job ([`mock_transport_paths`]). Directories without a lock file (being
/// created, or of another program) are left alone. Errors are ignored: this is tidying.
pub(super) fn sweep_stale(tmp: &Path) -> Sweep {
    let mut sweep = Sweep::default();
    let Ok(entries) = fs::read_dir(tmp) else {
        return sweep;
    };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with("niinrun-") {
            continue;
        }
        let dir = entry.path();
        let Ok(mut lock) = File::open(dir.join(LOCK_FILE)) else {
            continue;
        };
        let mut job_id = String::new();
        if lock.read_to_string(&mut job_id).is_err() {
            continue;
        }
        if !flock(&lock, false) {
            sweep.live.push(job_id);
            continue;
        }
        if super::validate_job_id(&job_id).is_ok() {
            for path in mock_transport_paths(&job_id) {
                let _ = remove_if_exists(&path);
            }
        }
        let _ = remove_if_exists(&dir);
        sweep.removed.push((dir, job_id));
    }
    sweep
}

/// The rendezvous directory of a job; removed with its contents when dropped.
#[derive(Debug)]
pub(super) struct RendezvousDir {
    path: PathBuf,
    /// The locked [`LOCK_FILE`], held while the job runs.
    _lock: File,
}

impl RendezvousDir {
    /// Creates a fresh directory `temp_dir()/niinrun-<job_id>[-k]`, mode 0700, with its
    /// locked [`LOCK_FILE`].
    pub(super) fn create(job_id: &str) -> Result<Self, LaunchError> {
        let base = std::env::temp_dir().join(format!("niinrun-{job_id}"));
        let mut path = base.clone();
        for k in 1.. {
            match DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    return match create_lock(&path, job_id) {
                        Ok(lock) => Ok(Self { path, _lock: lock }),
                        Err(source) => {
                            let _ = remove_if_exists(&path);
                            Err(LaunchError::Rendezvous { path, source })
                        }
                    };
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && k < 1000 => {
                    let mut name = base.clone().into_os_string();
                    name.push(format!("-{k}"));
                    path = PathBuf::from(name);
                }
                Err(source) => return Err(LaunchError::Rendezvous { path, source }),
            }
        }
        unreachable!("the loop above returns")
    }

    /// The directory.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RendezvousDir {
    fn drop(&mut self) {
        let _ = remove_if_exists(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;
    use std::sync::Mutex;

    fn scratch(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!("niinrun-unit-{}-{tag}", std::process::id()))
    }

    #[test]
    fn remove_if_exists_handles_files_dirs_links_and_absence() {
        let file = scratch("file");
        fs::write(&file, b"x").unwrap();
        remove_if_exists(&file).unwrap();
        assert!(!file.exists());
        remove_if_exists(&file).unwrap();

        let dir = scratch("dir");
        fs::create_dir_all(dir.join("a/b")).unwrap();
        fs::write(dir.join("a/b/c"), b"x").unwrap();
        remove_if_exists(&dir).unwrap();
        assert!(!dir.exists());

        let target = scratch("target");
        fs::create_dir_all(&target).unwrap();
        let link = scratch("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        remove_if_exists(&link).unwrap();
        assert!(fs::symlink_metadata(&link).is_err());
        assert!(target.is_dir(), "the link's target must survive");
        fs::remove_dir(&target).unwrap();
    }

    #[test]
    fn rendezvous_dirs_are_fresh_private_and_removed() {
        let id = format!("unit-{}-rdv", std::process::id());
        let a = RendezvousDir::create(&id).unwrap();
        let b = RendezvousDir::create(&id).unwrap();
        assert_ne!(a.path(), b.path());
        assert!(a.path().ends_with(format!("niinrun-{id}")));
        let mode = fs::metadata(a.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        fs::write(a.path().join("unique-id"), b"x").unwrap();
        assert_eq!(fs::read_to_string(a.path().join(LOCK_FILE)).unwrap(), id);
        let (pa, pb) = (a.path().to_owned(), b.path().to_owned());
        drop(a);
        drop(b);
        assert!(!pa.exists() && !pb.exists());
    }

    #[test]
    fn hooks_run_in_order_despite_errors_and_panics() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let hook = |name: &'static str, outcome: u8| {
            let log = Arc::clone(&log);
            CleanupHook::new(name, move |job: &JobInfo| {
                log.lock().unwrap().push(format!("{name}:{}", job.job_id));
                match outcome {
                    0 => Ok(()),
                    1 => Err(io::Error::other("expected failure")),
                    _ => panic!("expected panic"),
                }
            })
        };
        let hooks = [hook("a", 0), hook("b", 1), hook("c", 2), hook("d", 0)];
        assert_eq!(format!("{:?}", hooks[1]), "CleanupHook(\"b\")");
        let job = JobInfo {
            job_id: "j".into(),
            n_pes: 1,
            rendezvous_dir: PathBuf::new(),
        };
        drop(HookGuard {
            hooks: &hooks,
            job: &job,
        });
        assert_eq!(*log.lock().unwrap(), ["a:j", "b:j", "c:j", "d:j"]);
    }

    #[test]
    fn mock_transport_hook_removes_both_paths() {
        let id = format!("unit-{}-mock", std::process::id());
        let paths = mock_transport_paths(&id);
        assert_eq!(paths[0], PathBuf::from(format!("/dev/shm/niin-mock-{id}")));
        assert_eq!(
            paths[1],
            std::env::temp_dir().join(format!("niin-mock-{id}"))
        );
        let shm_available = Path::new("/dev/shm").is_dir();
        if shm_available {
            fs::write(&paths[0], b"x").unwrap();
        }
        fs::create_dir_all(paths[1].join("sub")).unwrap();
        let job = JobInfo {
            job_id: id,
            n_pes: 1,
            rendezvous_dir: PathBuf::new(),
        };
        (CleanupHook::mock_transport().action)(&job).unwrap();
        assert!(!paths[0].exists() && !paths[1].exists());
        (CleanupHook::mock_transport().action)(&job).unwrap();
    }

    #[test]
    fn the_sweep_removes_unlocked_directories_and_their_mock_files_only() {
        let tmp = scratch("sweep");
        fs::create_dir_all(&tmp).unwrap();
        // A live job: its lock is held by `live`.
        let live_dir = tmp.join("niinrun-live");
        fs::create_dir(&live_dir).unwrap();
        let _live = create_lock(&live_dir, "live").unwrap();
        // A job whose niinrun was killed: the lock file is there, nobody holds it.
        let id = format!("unit-{}-stale", std::process::id());
        let stale_dir = tmp.join(format!("niinrun-{id}"));
        fs::create_dir(&stale_dir).unwrap();
        drop(create_lock(&stale_dir, &id).unwrap());
        let mock = mock_transport_paths(&id);
        fs::create_dir_all(&mock[1]).unwrap();
        // Something else's directory, without a lock file.
        let other = tmp.join("niinrun-other");
        fs::create_dir(&other).unwrap();

        let sweep = sweep_stale(&tmp);
        assert_eq!(sweep.live, ["live"]);
        assert_eq!(sweep.removed, [(stale_dir.clone(), id)]);
        assert!(!stale_dir.exists() && !mock[1].exists());
        assert!(live_dir.is_dir() && other.is_dir());
        fs::remove_dir_all(&tmp).unwrap();
    }
}
