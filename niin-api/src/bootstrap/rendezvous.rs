//! The unique-id rendezvous: rank 0 makes NCCL's 128-byte unique id and every rank of the
//! job ends up with the same bytes, through a shared directory or a TCP connection to rank
//! 0. Protocols, formats, timeouts and cleanup are in the [module docs](super#rendezvous).

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use super::launcher::{MASTER_ADDR, MASTER_PORT, PMIX_NAMESPACE};
use super::{BootstrapError, Launcher, Placement};

/// The size of NCCL's unique id (`NCCL_UNIQUE_ID_BYTES`).
pub const UID_BYTES: usize = 128;

/// The variable that chooses the rendezvous: `dir:<directory>` or `tcp:<host>:<port>`.
pub const RENDEZVOUS_VAR: &str = "NIIN_RENDEZVOUS";

/// A reasonable timeout for [`exchange_unique_id`]: long enough for the processes of a
/// large job to start, short enough that a job whose rank 0 died fails in finite time.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// How the processes of a job meet to share the unique id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rendezvous {
    /// Through a file in a directory every process sees (niinrun's private directory, or
    /// one on a shared file system). The directory must exist.
    Dir(PathBuf),
    /// Through TCP: rank 0 listens on this address, the others connect to it. The port
    /// must be agreed in advance (not 0).
    Tcp(SocketAddr),
    /// Through the launcher's PMIx server (libpmix opened at run time): rank 0 puts the id,
    /// the job fences, the others get it.
    Pmix,
}

impl FromStr for Rendezvous {
    type Err = BootstrapError;

    /// Parses `dir:<directory>`, `tcp:<host>:<port>` (`host` an IP address, `[v6]`, or a
    /// name, resolved now; its first address is used) or `pmix`.
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let bad = |reason: String| BootstrapError::BadRendezvous {
            value: value.to_owned(),
            reason,
        };
        let trimmed = value.trim();
        if let Some(dir) = trimmed.strip_prefix("dir:") {
            if dir.is_empty() {
                return Err(bad("the directory is empty".into()));
            }
            return Ok(Rendezvous::Dir(PathBuf::from(dir)));
        }
        if trimmed == "pmix" {
            return Ok(Rendezvous::Pmix);
        }
        if let Some(hostport) = trimmed.strip_prefix("tcp:") {
            let addr = match hostport.parse::<SocketAddr>() {
                Ok(addr) => addr,
                Err(_) => hostport
                    .to_socket_addrs()
                    .map_err(|e| bad(format!("cannot resolve {hostport:?}: {e}")))?
                    .next()
                    .ok_or_else(|| bad(format!("{hostport:?} resolves to no address")))?,
            };
            if addr.port() == 0 {
                return Err(bad(
                    "port 0 is not allowed: every process must know rank 0's port in advance"
                        .into(),
                ));
            }
            return Ok(Rendezvous::Tcp(addr));
        }
        Err(bad("unknown kind of rendezvous".into()))
    }
}

impl fmt::Display for Rendezvous {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rendezvous::Dir(dir) => write!(f, "dir:{}", dir.display()),
            Rendezvous::Tcp(addr) => write!(f, "tcp:{addr}"),
            Rendezvous::Pmix => f.write_str("pmix"),
        }
    }
}

/// The rendezvous of this job: `NIIN_RENDEZVOUS` when set (looked up through `lookup`);
/// else niinrun's `NIIN_RENDEZVOUS_DIR` when niinrun started the job; else, for a job of
/// one process (which exchanges nothing) or of processes all on this node, the temporary
/// directory; else, under a launcher with a PMIx server (`PMIX_NAMESPACE` set), PMIx; else,
/// for torchrun, `tcp:` its master address at the port after `MASTER_PORT`
/// ([module docs](super#rendezvous)).
///
/// # Errors
///
/// [`BootstrapError::BadRendezvous`] when `NIIN_RENDEZVOUS` cannot be parsed;
/// [`BootstrapError::NoRendezvous`], which says how to set one, when nothing gives a
/// rendezvous to a job of several processes.
pub fn rendezvous_from_env(
    lookup: impl Fn(&str) -> Option<String>,
    placement: &Placement,
) -> Result<Rendezvous, BootstrapError> {
    let get = |var: &str| lookup(var).filter(|v| !v.trim().is_empty());
    if let Some(value) = get(RENDEZVOUS_VAR) {
        return value.parse();
    }
    if placement.source == Launcher::Niinrun {
        if let Some(dir) = get(crate::launch::env::RENDEZVOUS_DIR) {
            return Ok(Rendezvous::Dir(PathBuf::from(dir)));
        }
    }
    if placement.size == 1 || placement.local_size == Some(placement.size) {
        // One process, or every process on this node: a file in the node's temporary
        // directory, named after the job id (every launcher but niinrun's gives one, or
        // the launcher's per-node process stands for it: `detect`).
        return Ok(Rendezvous::Dir(std::env::temp_dir()));
    }
    if get(PMIX_NAMESPACE).is_some() && placement.source != Launcher::Torchrun {
        // Several nodes under a launcher with a PMIx server (Open MPI, srun --mpi=pmix).
        return Ok(Rendezvous::Pmix);
    }
    if placement.source == Launcher::Torchrun {
        if let (Some(addr), Some(port)) = (get(MASTER_ADDR), get(MASTER_PORT)) {
            // torchrun's store listens on MASTER_PORT of rank 0's node; rank 0 listens on the
            // next port of the same address.
            let next = port
                .trim()
                .parse::<u16>()
                .ok()
                .and_then(|p| p.checked_add(1))
                .ok_or_else(|| BootstrapError::Malformed {
                    var: MASTER_PORT.into(),
                    value: port.clone(),
                    expected: "a TCP port below 65535 (niin-rs's rendezvous takes the next one)",
                })?;
            return format!("tcp:{}:{next}", bracketed(addr.trim())).parse();
        }
    }
    Err(BootstrapError::NoRendezvous {
        launcher: placement.source,
        size: placement.size,
    })
}

/// `host` for `host:port`: an IPv6 address in brackets, anything else as it is.
fn bracketed(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

/// Gives every rank of the job the same unique id: rank 0 calls `make` (later
/// `ncclGetUniqueId`) and publishes the bytes through `rv`; the other ranks wait up to
/// `timeout` for them and never call `make`. A job of one process just calls `make`.
///
/// # Errors
///
/// [`BootstrapError::MakeFailed`] when `make` fails; timeouts naming the path or address
/// and the time waited; job-id or size mismatches naming both values; the directory or
/// address errors of the [module docs](super#rendezvous).
pub fn exchange_unique_id(
    rv: &Rendezvous,
    placement: &Placement,
    make: impl FnOnce() -> Result<[u8; UID_BYTES], String>,
    timeout: Duration,
) -> Result<[u8; UID_BYTES], BootstrapError> {
    let (rank, size) = (placement.rank, placement.size);
    if size == 0 || rank >= size {
        return Err(BootstrapError::InvalidPlacement { rank, size });
    }
    if size == 1 {
        return make().map_err(BootstrapError::MakeFailed);
    }
    if let Some(job) = &placement.job_id {
        if job.len() > MAX_JOB_ID_BYTES {
            return Err(BootstrapError::Malformed {
                var: "the job id".into(),
                value: job.clone(),
                expected: "at most 4096 bytes long",
            });
        }
    }
    let deadline = Deadline::after(timeout);
    match rv {
        Rendezvous::Dir(dir) => {
            let Some(job) = placement.job_id.as_deref() else {
                return Err(BootstrapError::NoJobId {
                    launcher: placement.source,
                });
            };
            check_dir(dir)?;
            let path = dir.join(uid_file_name(job));
            if rank == 0 {
                let uid = make().map_err(BootstrapError::MakeFailed)?;
                dir_publish(dir, &path, job, size, &uid, &deadline)?;
                Ok(uid)
            } else {
                dir_wait(&path, job, size, rank, &deadline)
            }
        }
        Rendezvous::Tcp(addr) => {
            if addr.port() == 0 {
                return Err(BootstrapError::PortZero { addr: *addr });
            }
            let job = placement.job_id.as_deref().unwrap_or("");
            if rank == 0 {
                let uid = make().map_err(BootstrapError::MakeFailed)?;
                tcp_serve(*addr, job, size, &uid, &deadline)?;
                Ok(uid)
            } else {
                tcp_ask(*addr, job, size, rank, &deadline)
            }
        }
        Rendezvous::Pmix => super::pmix::exchange(rank, size, make, timeout),
    }
}

/// The longest job id the formats carry.
const MAX_JOB_ID_BYTES: usize = 4096;

/// A point in time to give up at, and the timeout it came from (which errors report).
struct Deadline {
    end: Option<Instant>,
    timeout: Duration,
}

impl Deadline {
    fn after(timeout: Duration) -> Self {
        Deadline {
            end: Instant::now().checked_add(timeout),
            timeout,
        }
    }

    fn remaining(&self) -> Duration {
        match self.end {
            Some(end) => end.saturating_duration_since(Instant::now()),
            None => Duration::MAX,
        }
    }

    fn expired(&self) -> bool {
        self.remaining().is_zero()
    }

    /// A timeout for one socket operation: what is left, between 1 ms and `cap`.
    fn io_timeout(&self, cap: Duration) -> Duration {
        self.remaining().clamp(Duration::from_millis(1), cap)
    }
}

/// Sleeps of growing length between polls, never past the deadline.
struct Backoff {
    next: Duration,
    cap: Duration,
}

impl Backoff {
    fn new(cap: Duration) -> Self {
        Backoff {
            next: Duration::from_millis(1),
            cap,
        }
    }

    fn sleep(&mut self, deadline: &Deadline) {
        let pause = self.next.min(deadline.remaining());
        if !pause.is_zero() {
            thread::sleep(pause);
        }
        self.next = (self.next * 2).min(self.cap);
    }

    fn reset(&mut self) {
        self.next = Duration::from_millis(1);
    }
}

/// FNV-1a, 64 bits: the checksum of the unique-id file (against torn or damaged files,
/// not against tampering) and the hash of job ids that are not file-name safe.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A cursor over received or read bytes.
struct Cursor<'a> {
    buf: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        if self.buf.len() < n {
            return Err(format!("truncated: {what} is missing"));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn u32(&mut self, what: &str) -> Result<u32, String> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &str) -> Result<u64, String> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}

// ---- directory rendezvous --------------------------------------------------------------

/// The first bytes of a unique-id file.
const FILE_MAGIC: [u8; 8] = *b"NIINUID\0";
/// The unique-id file format this build writes and reads.
const FILE_VERSION: u32 = 1;
/// Ranks poll for the file (and rank 0 for the acknowledgements) at most this far apart.
const DIR_POLL_CAP: Duration = Duration::from_millis(50);

/// The name of the unique-id file of job `job_id`: `niin-uid-<job id>`, or, for a job id
/// that is not 1 to 64 characters of `[A-Za-z0-9_.-]`, its first 40 characters with the
/// others replaced by `_`, then `-` and the 16 hex digits of its FNV-1a hash.
fn uid_file_name(job_id: &str) -> String {
    let safe_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
    if (1..=64).contains(&job_id.len()) && job_id.chars().all(safe_char) {
        return format!("niin-uid-{job_id}");
    }
    let cleaned: String = job_id
        .chars()
        .take(40)
        .map(|c| if safe_char(c) { c } else { '_' })
        .collect();
    format!("niin-uid-{cleaned}-{:016x}", fnv1a64(job_id.as_bytes()))
}

/// `<file>.ack-<rank>`.
fn ack_path(path: &Path, rank: usize) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".ack-{rank}"));
    PathBuf::from(name)
}

/// The unique-id file: magic, version, job id, size, id, checksum (see the module docs).
fn encode_uid_file(job_id: &str, size: usize, uid: &[u8; UID_BYTES]) -> Vec<u8> {
    let mut b = Vec::with_capacity(8 + 4 + 4 + job_id.len() + 8 + UID_BYTES + 8);
    b.extend_from_slice(&FILE_MAGIC);
    b.extend_from_slice(&FILE_VERSION.to_le_bytes());
    b.extend_from_slice(&(job_id.len() as u32).to_le_bytes());
    b.extend_from_slice(job_id.as_bytes());
    b.extend_from_slice(&(size as u64).to_le_bytes());
    b.extend_from_slice(uid);
    let sum = fnv1a64(&b);
    b.extend_from_slice(&sum.to_le_bytes());
    b
}

/// What a unique-id file holds.
#[derive(Debug, PartialEq, Eq)]
struct UidFile {
    job_id: String,
    size: u64,
    uid: [u8; UID_BYTES],
}

fn decode_uid_file(bytes: &[u8]) -> Result<UidFile, String> {
    let mut c = Cursor { buf: bytes };
    let magic = c.take(FILE_MAGIC.len(), "the magic")?;
    if magic != FILE_MAGIC {
        return Err(format!("bad magic {magic:02x?}"));
    }
    let version = c.u32("the format version")?;
    if version != FILE_VERSION {
        return Err(format!(
            "format version {version}; this build reads version {FILE_VERSION}"
        ));
    }
    if bytes.len() < FILE_MAGIC.len() + 4 + 8 {
        return Err("truncated: the checksum is missing".into());
    }
    let (body, tail) = bytes.split_at(bytes.len() - 8);
    let mut stored = [0u8; 8];
    stored.copy_from_slice(tail);
    let (stored, actual) = (u64::from_le_bytes(stored), fnv1a64(body));
    if stored != actual {
        return Err(format!(
            "checksum {stored:#018x} does not match the contents ({actual:#018x})"
        ));
    }
    let mut c = Cursor {
        buf: &body[FILE_MAGIC.len() + 4..],
    };
    let len = c.u32("the job id length")? as usize;
    if len > MAX_JOB_ID_BYTES {
        return Err(format!("job id length {len} is over {MAX_JOB_ID_BYTES}"));
    }
    let job_id = String::from_utf8(c.take(len, "the job id")?.to_vec())
        .map_err(|_| "the job id is not UTF-8".to_string())?;
    let size = c.u64("the size")?;
    let mut uid = [0u8; UID_BYTES];
    uid.copy_from_slice(c.take(UID_BYTES, "the unique id")?);
    if !c.buf.is_empty() {
        return Err(format!(
            "{} unexpected bytes after the unique id",
            c.buf.len()
        ));
    }
    Ok(UidFile { job_id, size, uid })
}

fn check_dir(dir: &Path) -> Result<(), BootstrapError> {
    let reason = match fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => "it is not a directory".to_owned(),
        Err(e) => e.to_string(),
    };
    Err(BootstrapError::DirMissing {
        path: dir.to_owned(),
        reason,
    })
}

fn remove_quietly(path: &Path) {
    let _ = fs::remove_file(path);
}

fn io_error(what: String, error: &io::Error) -> BootstrapError {
    BootstrapError::Io {
        what,
        error: error.to_string(),
    }
}

/// Creates `path` (which must not exist, mode 0600), writes `bytes` and syncs them.
fn write_new_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Makes a rename in `dir` durable, where the file system allows syncing a directory.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Rank 0: publishes the file atomically, waits for every rank's acknowledgement (or the
/// deadline), then removes the file and the acknowledgements.
fn dir_publish(
    dir: &Path,
    path: &Path,
    job: &str,
    size: usize,
    uid: &[u8; UID_BYTES],
    deadline: &Deadline,
) -> Result<(), BootstrapError> {
    static TEMP_SERIAL: AtomicU64 = AtomicU64::new(0);
    let acks: Vec<PathBuf> = (1..size).map(|r| ack_path(path, r)).collect();
    // Acknowledgements left by an earlier, crashed job of the same id would count.
    acks.iter().for_each(|a| remove_quietly(a));
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(
        ".{}.tmp-{}-{}",
        file_name.unwrap_or_default(),
        std::process::id(),
        TEMP_SERIAL.fetch_add(1, Ordering::Relaxed)
    ));
    if let Err(e) = write_new_synced(&tmp, &encode_uid_file(job, size, uid)) {
        remove_quietly(&tmp);
        return Err(io_error(format!("rank 0 writing {}", tmp.display()), &e));
    }
    if let Err(e) = fs::rename(&tmp, path) {
        remove_quietly(&tmp);
        return Err(io_error(
            format!("rank 0 renaming {} to {}", tmp.display(), path.display()),
            &e,
        ));
    }
    sync_dir(dir);
    let mut missing: Vec<usize> = (1..size).collect();
    let mut backoff = Backoff::new(DIR_POLL_CAP);
    loop {
        missing.retain(|&r| !acks[r - 1].exists());
        if missing.is_empty() || deadline.expired() {
            break;
        }
        backoff.sleep(deadline);
    }
    remove_quietly(path);
    acks.iter().for_each(|a| remove_quietly(a));
    if missing.is_empty() {
        Ok(())
    } else {
        Err(BootstrapError::AckTimeout {
            path: path.to_owned(),
            waited: deadline.timeout,
            missing,
        })
    }
}

/// Rank `rank` > 0: polls until the file exists and parses, checks job id and size, and
/// acknowledges.
fn dir_wait(
    path: &Path,
    job: &str,
    size: usize,
    rank: usize,
    deadline: &Deadline,
) -> Result<[u8; UID_BYTES], BootstrapError> {
    let mut backoff = Backoff::new(DIR_POLL_CAP);
    let mut detail = String::from("it does not exist");
    loop {
        let corrupt = match fs::read(path) {
            Ok(bytes) => match decode_uid_file(&bytes) {
                Ok(file) => {
                    let at = path.display().to_string();
                    if file.job_id != job {
                        return Err(BootstrapError::JobMismatch {
                            at,
                            ours: job.to_owned(),
                            theirs: file.job_id,
                        });
                    }
                    if file.size != size as u64 {
                        return Err(BootstrapError::SizeMismatch {
                            at,
                            other: "rank 0".into(),
                            ours: size,
                            theirs: usize::try_from(file.size).unwrap_or(usize::MAX),
                        });
                    }
                    let ack = ack_path(path, rank);
                    fs::write(&ack, rank.to_string()).map_err(|e| {
                        io_error(format!("rank {rank} acknowledging {}", ack.display()), &e)
                    })?;
                    return Ok(file.uid);
                }
                Err(reason) => Some(reason),
            },
            Err(e) => {
                if e.kind() != io::ErrorKind::NotFound {
                    detail = format!("reading it failed: {e}");
                }
                None
            }
        };
        if deadline.expired() {
            return Err(match corrupt {
                Some(reason) => BootstrapError::Corrupt {
                    path: path.to_owned(),
                    reason,
                    waited: deadline.timeout,
                },
                None => BootstrapError::DirTimeout {
                    rank,
                    path: path.to_owned(),
                    waited: deadline.timeout,
                    detail,
                },
            });
        }
        backoff.sleep(deadline);
    }
}

// ---- TCP rendezvous --------------------------------------------------------------------

/// The first bytes of a client's hello.
const HELLO_MAGIC: [u8; 8] = *b"NIINHELO";
/// The wire protocol this build speaks.
const WIRE_VERSION: u32 = 1;
/// Reply status: the unique id follows.
const REPLY_OK: u8 = 0;
/// Reply status: a length and a UTF-8 message follow.
const REPLY_ERR: u8 = 1;
/// The longest error message rank 0 sends.
const MAX_MESSAGE_BYTES: usize = 64 * 1024;
/// The longest one socket operation may block, whatever the deadline.
const IO_CAP: Duration = Duration::from_secs(5);
/// Clients retry connecting at most this far apart.
const CONNECT_RETRY_CAP: Duration = Duration::from_millis(100);

/// What a client says: who it is.
#[derive(Debug, PartialEq, Eq)]
struct Hello {
    rank: u64,
    size: u64,
    job_id: String,
}

fn encode_hello(hello: &Hello) -> Vec<u8> {
    let mut b = Vec::with_capacity(8 + 4 + 8 + 8 + 4 + hello.job_id.len());
    b.extend_from_slice(&HELLO_MAGIC);
    b.extend_from_slice(&WIRE_VERSION.to_le_bytes());
    b.extend_from_slice(&hello.rank.to_le_bytes());
    b.extend_from_slice(&hello.size.to_le_bytes());
    b.extend_from_slice(&(hello.job_id.len() as u32).to_le_bytes());
    b.extend_from_slice(hello.job_id.as_bytes());
    b
}

/// Why a connection's hello was not read.
enum HelloError {
    /// Not a niin client (wrong magic, absurd length, not UTF-8), or it went away.
    Foreign,
    /// A niin client of another protocol version.
    Version(u32),
}

fn read_hello(stream: &mut impl Read) -> Result<Hello, HelloError> {
    let mut head = [0u8; 8 + 4 + 8 + 8 + 4];
    stream
        .read_exact(&mut head[..12])
        .map_err(|_| HelloError::Foreign)?;
    let mut c = Cursor { buf: &head[..12] };
    if c.take(8, "magic").map_err(|_| HelloError::Foreign)? != HELLO_MAGIC {
        return Err(HelloError::Foreign);
    }
    let version = c.u32("version").map_err(|_| HelloError::Foreign)?;
    if version != WIRE_VERSION {
        return Err(HelloError::Version(version));
    }
    stream
        .read_exact(&mut head[12..])
        .map_err(|_| HelloError::Foreign)?;
    let mut c = Cursor { buf: &head[12..] };
    let (rank, size, len) = match (c.u64("rank"), c.u64("size"), c.u32("length")) {
        (Ok(rank), Ok(size), Ok(len)) => (rank, size, len as usize),
        _ => return Err(HelloError::Foreign),
    };
    if len > MAX_JOB_ID_BYTES {
        return Err(HelloError::Foreign);
    }
    let mut job = vec![0u8; len];
    stream
        .read_exact(&mut job)
        .map_err(|_| HelloError::Foreign)?;
    let job_id = String::from_utf8(job).map_err(|_| HelloError::Foreign)?;
    Ok(Hello { rank, size, job_id })
}

fn reply_error(stream: &mut TcpStream, message: &str) {
    let mut end = message.len().min(MAX_MESSAGE_BYTES);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    let mut b = vec![REPLY_ERR];
    b.extend_from_slice(&(end as u32).to_le_bytes());
    b.extend_from_slice(&message.as_bytes()[..end]);
    let _ = stream.write_all(&b).and_then(|()| stream.flush());
}

/// Rank 0: listens on `addr` and gives the id to every rank 1..size, once each served.
fn tcp_serve(
    addr: SocketAddr,
    job: &str,
    size: usize,
    uid: &[u8; UID_BYTES],
    deadline: &Deadline,
) -> Result<(), BootstrapError> {
    let listener = TcpListener::bind(addr).map_err(|e| BootstrapError::Bind {
        addr,
        error: e.to_string(),
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| io_error(format!("rank 0 listening on {addr}"), &e))?;
    let mut served = vec![false; size];
    served[0] = true;
    let mut left = size - 1;
    let mut backoff = Backoff::new(Duration::from_millis(10));
    let mut last_error = String::new();
    while left > 0 {
        let idle = match listener.accept() {
            Ok((stream, _)) => {
                backoff.reset();
                if let Some(rank) = serve_one(stream, addr, job, size, uid, deadline)? {
                    if !served[rank] {
                        served[rank] = true;
                        left -= 1;
                    }
                }
                false
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => false,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => true,
            Err(e) => {
                last_error = format!("; last accept error: {e}");
                true
            }
        };
        if left > 0 && deadline.expired() {
            let missing: Vec<usize> = (0..size).filter(|&r| !served[r]).collect();
            return Err(BootstrapError::TcpTimeout {
                addr,
                waited: deadline.timeout,
                detail: format!(
                    "rank 0 gave the id to {} of {} ranks; rank(s) {} never asked{last_error}",
                    size - 1 - left,
                    size - 1,
                    super::ranks_list(&missing)
                ),
            });
        }
        if idle {
            backoff.sleep(deadline);
        }
    }
    Ok(())
}

/// Handles one connection. `Ok(Some(rank))`: rank served. `Ok(None)`: nothing to count
/// (a stranger, another job, a connection that failed; the client retries). `Err`: this
/// job is misconfigured.
fn serve_one(
    mut stream: TcpStream,
    addr: SocketAddr,
    job: &str,
    size: usize,
    uid: &[u8; UID_BYTES],
    deadline: &Deadline,
) -> Result<Option<usize>, BootstrapError> {
    let timeout = Some(deadline.io_timeout(IO_CAP));
    let setup = stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_read_timeout(timeout))
        .and_then(|()| stream.set_write_timeout(timeout));
    if setup.is_err() {
        return Ok(None);
    }
    let _ = stream.set_nodelay(true);
    let hello = match read_hello(&mut stream) {
        Ok(hello) => hello,
        Err(HelloError::Foreign) => return Ok(None),
        Err(HelloError::Version(v)) => {
            reply_error(
                &mut stream,
                &format!("protocol version {v}; rank 0 speaks version {WIRE_VERSION}"),
            );
            return Ok(None);
        }
    };
    if hello.job_id != job {
        reply_error(
            &mut stream,
            &format!(
                "job id mismatch: rank 0 has job id {job:?}, but rank {} sent job id {:?}",
                hello.rank, hello.job_id
            ),
        );
        return Ok(None);
    }
    if hello.size != size as u64 {
        reply_error(
            &mut stream,
            &format!(
                "size mismatch: rank 0 counts {size} processes, but rank {} counts {}",
                hello.rank, hello.size
            ),
        );
        return Err(BootstrapError::SizeMismatch {
            at: addr.to_string(),
            other: format!("rank {}", hello.rank),
            ours: size,
            theirs: usize::try_from(hello.size).unwrap_or(usize::MAX),
        });
    }
    let rank = match usize::try_from(hello.rank) {
        Ok(rank) if (1..size).contains(&rank) => rank,
        _ => {
            reply_error(
                &mut stream,
                &format!("rank {} is not in 1..{size}", hello.rank),
            );
            return Err(BootstrapError::PeerRankInvalid {
                addr,
                job_id: job.to_owned(),
                rank: hello.rank,
                size,
            });
        }
    };
    let mut reply = Vec::with_capacity(1 + UID_BYTES);
    reply.push(REPLY_OK);
    reply.extend_from_slice(uid);
    match stream.write_all(&reply).and_then(|()| stream.flush()) {
        Ok(()) => Ok(Some(rank)),
        Err(_) => Ok(None),
    }
}

/// What rank 0 answered.
enum Answer {
    Uid([u8; UID_BYTES]),
    Refused(String),
}

/// Rank `rank` > 0: connects to rank 0 (retrying until the deadline) and asks for the id.
fn tcp_ask(
    addr: SocketAddr,
    job: &str,
    size: usize,
    rank: usize,
    deadline: &Deadline,
) -> Result<[u8; UID_BYTES], BootstrapError> {
    let hello = encode_hello(&Hello {
        rank: rank as u64,
        size: size as u64,
        job_id: job.to_owned(),
    });
    let mut backoff = Backoff::new(CONNECT_RETRY_CAP);
    let mut last = String::from("no attempt was made");
    loop {
        if deadline.expired() {
            return Err(BootstrapError::TcpTimeout {
                addr,
                waited: deadline.timeout,
                detail: format!("rank {rank} could not get the id from rank 0; last: {last}"),
            });
        }
        match TcpStream::connect_timeout(&addr, deadline.io_timeout(Duration::from_secs(2))) {
            Err(e) => last = format!("connecting failed: {e}"),
            Ok(mut stream) => match ask_once(&mut stream, &hello, deadline) {
                Ok(Answer::Uid(uid)) => return Ok(uid),
                Ok(Answer::Refused(message)) => {
                    return Err(BootstrapError::Rejected { addr, message });
                }
                Err(e) => last = e,
            },
        }
        backoff.sleep(deadline);
    }
}

/// One exchange on a connected stream; `Err` describes a failure worth retrying.
fn ask_once(stream: &mut TcpStream, hello: &[u8], deadline: &Deadline) -> Result<Answer, String> {
    let timeout = Some(deadline.io_timeout(IO_CAP));
    stream
        .set_read_timeout(timeout)
        .and_then(|()| stream.set_write_timeout(timeout))
        .map_err(|e| format!("setting socket timeouts failed: {e}"))?;
    let _ = stream.set_nodelay(true);
    stream
        .write_all(hello)
        .and_then(|()| stream.flush())
        .map_err(|e| format!("sending the hello failed: {e}"))?;
    let mut status = [0u8; 1];
    stream
        .read_exact(&mut status)
        .map_err(|e| format!("reading rank 0's reply failed: {e}"))?;
    match status[0] {
        REPLY_OK => {
            let mut uid = [0u8; UID_BYTES];
            stream
                .read_exact(&mut uid)
                .map_err(|e| format!("reading the unique id failed: {e}"))?;
            Ok(Answer::Uid(uid))
        }
        REPLY_ERR => {
            let mut len = [0u8; 4];
            stream
                .read_exact(&mut len)
                .map_err(|e| format!("reading rank 0's refusal failed: {e}"))?;
            let len = (u32::from_le_bytes(len) as usize).min(MAX_MESSAGE_BYTES);
            let mut message = vec![0u8; len];
            stream
                .read_exact(&mut message)
                .map_err(|e| format!("reading rank 0's refusal failed: {e}"))?;
            Ok(Answer::Refused(
                String::from_utf8_lossy(&message).into_owned(),
            ))
        }
        other => Err(format!(
            "rank 0 answered with unknown status byte {other:#04x}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::atomic::AtomicUsize;

    fn pl(rank: usize, size: usize, job: Option<&str>) -> Placement {
        Placement {
            rank,
            size,
            local_rank: None,
            local_size: None,
            job_id: job.map(str::to_owned),
            source: Launcher::Niinrun,
        }
    }

    fn uid(seed: u8) -> [u8; UID_BYTES] {
        std::array::from_fn(|i| seed.wrapping_mul(31).wrapping_add(i as u8))
    }

    /// A fresh directory under the temporary directory, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> Self {
            static SERIAL: AtomicUsize = AtomicUsize::new(0);
            let path = std::env::temp_dir().join(format!(
                "niin-bootstrap-test-{}-{tag}-{}",
                std::process::id(),
                SERIAL.fetch_add(1, Ordering::Relaxed)
            ));
            fs::create_dir(&path).unwrap();
            TempDir(path)
        }

        fn entries(&self) -> Vec<String> {
            fs::read_dir(&self.0)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    /// A port that was free a moment ago. Racy: another process may take it between our
    /// release and rank 0's bind (rank 0 would then fail with `Bind`, or clients reach a
    /// stranger and retry); unlikely on loopback within a few milliseconds.
    fn free_port() -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    }

    fn loopback() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], free_port()))
    }

    const MS200: Duration = Duration::from_millis(200);
    const LONG: Duration = Duration::from_secs(5);

    /// Runs ranks `0..size` of one job on threads (rank 0 last, after `delay0`) and returns
    /// their results in rank order, and how often `make` ran.
    fn run_job(
        rv: &Rendezvous,
        size: usize,
        job: Option<&str>,
        delay0: Duration,
        timeout: Duration,
    ) -> (Vec<Result<[u8; UID_BYTES], BootstrapError>>, usize) {
        let made = AtomicUsize::new(0);
        let mut results: Vec<_> = thread::scope(|s| {
            let handles: Vec<_> = (0..size)
                .rev()
                .map(|rank| {
                    let made = &made;
                    s.spawn(move || {
                        if rank == 0 {
                            thread::sleep(delay0);
                        }
                        let make = || {
                            made.fetch_add(1, Ordering::SeqCst);
                            Ok(uid(42))
                        };
                        (
                            rank,
                            exchange_unique_id(rv, &pl(rank, size, job), make, timeout),
                        )
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        results.sort_by_key(|(rank, _)| *rank);
        (
            results.into_iter().map(|(_, r)| r).collect(),
            made.load(Ordering::SeqCst),
        )
    }

    #[test]
    fn parses_rendezvous_values() {
        assert_eq!(
            "dir:/scratch/job".parse::<Rendezvous>().unwrap(),
            Rendezvous::Dir("/scratch/job".into())
        );
        assert_eq!(
            "tcp:127.0.0.1:29500".parse::<Rendezvous>().unwrap(),
            Rendezvous::Tcp(SocketAddr::from(([127, 0, 0, 1], 29500)))
        );
        let v6 = "tcp:[::1]:29500".parse::<Rendezvous>().unwrap();
        assert_eq!(v6, Rendezvous::Tcp("[::1]:29500".parse().unwrap()));
        assert_eq!(v6.to_string(), "tcp:[::1]:29500");
        for bad in [
            "tcp:127.0.0.1:0",
            "dir:",
            "tcp:127.0.0.1",
            "file:/x",
            "/x",
            "tcp:1.2.3.4:99999",
        ] {
            let e = bad.parse::<Rendezvous>().unwrap_err();
            assert!(
                matches!(&e, BootstrapError::BadRendezvous { value, .. } if value == bad),
                "{bad}: {e}"
            );
        }
        let e = "tcp:127.0.0.1:0".parse::<Rendezvous>().unwrap_err();
        assert!(e.to_string().contains("port 0"), "{e}");
    }

    #[test]
    fn rendezvous_from_the_environment() {
        let lookup = |pairs: &'static [(&'static str, &'static str)]| {
            let m: HashMap<&str, &str> = pairs.iter().copied().collect();
            move |k: &str| m.get(k).map(|v| v.to_string())
        };
        let niin = pl(1, 4, Some("j"));
        let dir = &[("NIIN_RENDEZVOUS_DIR", "/tmp/niinrun-j")];
        assert_eq!(
            rendezvous_from_env(lookup(dir), &niin).unwrap(),
            Rendezvous::Dir("/tmp/niinrun-j".into())
        );
        let both = &[
            ("NIIN_RENDEZVOUS_DIR", "/tmp/niinrun-j"),
            ("NIIN_RENDEZVOUS", "tcp:10.1.2.3:4000"),
        ];
        assert_eq!(
            rendezvous_from_env(lookup(both), &niin).unwrap(),
            Rendezvous::Tcp("10.1.2.3:4000".parse().unwrap())
        );
        let slurm = Placement {
            source: Launcher::Slurm,
            ..pl(1, 4, Some("5.0"))
        };
        let e = rendezvous_from_env(lookup(dir), &slurm).unwrap_err();
        assert_eq!(
            e,
            BootstrapError::NoRendezvous {
                launcher: Launcher::Slurm,
                size: 4
            }
        );
        let msg = e.to_string();
        assert!(
            msg.contains("NIIN_RENDEZVOUS=dir:") && msg.contains("tcp:") && msg.contains("niinrun"),
            "{msg}"
        );
        let shared = &[("NIIN_RENDEZVOUS", "dir:/shared/jobs")];
        assert_eq!(
            rendezvous_from_env(lookup(shared), &slurm).unwrap(),
            Rendezvous::Dir("/shared/jobs".into())
        );
        let bad = &[("NIIN_RENDEZVOUS", "tcp:host-without-port")];
        assert!(matches!(
            rendezvous_from_env(lookup(bad), &slurm),
            Err(BootstrapError::BadRendezvous { .. })
        ));
        // One process needs none.
        let single = Placement {
            source: Launcher::Slurm,
            ..pl(0, 1, None)
        };
        assert!(rendezvous_from_env(lookup(&[]), &single).is_ok());
    }

    #[test]
    fn one_node_jobs_and_torchrun_have_a_default_rendezvous() {
        let lookup = |pairs: &'static [(&'static str, &'static str)]| {
            let m: HashMap<&str, &str> = pairs.iter().copied().collect();
            move |k: &str| m.get(k).map(|v| v.to_string())
        };
        // Every process on this node (mpirun -np 4 on one host): the temporary directory.
        let one_node = Placement {
            source: Launcher::OpenMpi,
            local_rank: Some(1),
            local_size: Some(4),
            ..pl(1, 4, Some("1234"))
        };
        assert_eq!(
            rendezvous_from_env(lookup(&[]), &one_node).unwrap(),
            Rendezvous::Dir(std::env::temp_dir())
        );
        // NIIN_RENDEZVOUS still wins.
        let set = &[("NIIN_RENDEZVOUS", "dir:/shared/jobs")];
        assert_eq!(
            rendezvous_from_env(lookup(set), &one_node).unwrap(),
            Rendezvous::Dir("/shared/jobs".into())
        );
        // Several nodes: torchrun's master address, the port after its store's.
        let torch = Placement {
            source: Launcher::Torchrun,
            local_rank: Some(0),
            local_size: Some(4),
            ..pl(5, 8, Some("run"))
        };
        let master = &[("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29500")];
        assert_eq!(
            rendezvous_from_env(lookup(master), &torch).unwrap(),
            Rendezvous::Tcp("127.0.0.1:29501".parse().unwrap())
        );
        let v6 = &[("MASTER_ADDR", "::1"), ("MASTER_PORT", "29500")];
        assert_eq!(
            rendezvous_from_env(lookup(v6), &torch).unwrap(),
            Rendezvous::Tcp("[::1]:29501".parse().unwrap())
        );
        for port in ["65535", "x"] {
            let pairs: &'static [(&str, &str)] = if port == "x" {
                &[("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "x")]
            } else {
                &[("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "65535")]
            };
            let e = rendezvous_from_env(lookup(pairs), &torch).unwrap_err();
            assert!(
                matches!(&e, BootstrapError::Malformed { var, value, .. } if var == "MASTER_PORT" && value == port),
                "{e}"
            );
        }
        // Several nodes, no master address: the error that says what to set.
        assert!(matches!(
            rendezvous_from_env(lookup(&[]), &torch),
            Err(BootstrapError::NoRendezvous { size: 8, .. })
        ));
        let two_nodes = Placement {
            local_size: Some(2),
            ..one_node
        };
        assert!(matches!(
            rendezvous_from_env(lookup(master), &two_nodes),
            Err(BootstrapError::NoRendezvous {
                launcher: Launcher::OpenMpi,
                size: 4
            })
        ));
        // ... unless the launcher runs a PMIx server.
        let pmix = &[("PMIX_NAMESPACE", "prterun-node01-4242@1")];
        assert_eq!(
            rendezvous_from_env(lookup(pmix), &two_nodes).unwrap(),
            Rendezvous::Pmix
        );
        assert_eq!("pmix".parse::<Rendezvous>().unwrap(), Rendezvous::Pmix);
        assert_eq!(Rendezvous::Pmix.to_string(), "pmix");
    }

    #[test]
    fn file_format_round_trips_and_names_are_safe() {
        let bytes = encode_uid_file("job-1", 4, &uid(1));
        assert_eq!(
            decode_uid_file(&bytes).unwrap(),
            UidFile {
                job_id: "job-1".into(),
                size: 4,
                uid: uid(1)
            }
        );
        assert_eq!(uid_file_name("4242-18a2b3c4"), "niin-uid-4242-18a2b3c4");
        let odd = uid_file_name("prterun-node01-73811@1");
        assert!(
            odd.starts_with("niin-uid-prterun-node01-73811_1-") && odd.len() == 9 + 22 + 1 + 16,
            "{odd}"
        );
        assert_ne!(odd, uid_file_name("prterun-node01-73811#1"));
        let long = uid_file_name(&"a/".repeat(100));
        assert!(!long.contains('/') && long.len() < 80, "{long}");
        assert!(ack_path(Path::new("/d/niin-uid-j"), 3).ends_with("niin-uid-j.ack-3"));
    }

    #[test]
    fn dir_four_ranks_share_one_id_and_clean_up() {
        let dir = TempDir::new("four");
        let rv = Rendezvous::Dir(dir.0.clone());
        let (results, made) = run_job(&rv, 4, Some("job-a"), Duration::from_millis(30), LONG);
        assert_eq!(made, 1);
        for r in results {
            assert_eq!(r.unwrap(), uid(42));
        }
        assert_eq!(dir.entries(), Vec::<String>::new());
    }

    #[test]
    fn dir_job_id_mismatch() {
        let dir = TempDir::new("job");
        // A file under job b's name that holds job a's id (two unsafe ids can share a name
        // only by a hash collision; this forges one).
        fs::write(
            dir.0.join(uid_file_name("b")),
            encode_uid_file("a", 2, &uid(1)),
        )
        .unwrap();
        let rv = Rendezvous::Dir(dir.0.clone());
        let e = exchange_unique_id(&rv, &pl(1, 2, Some("b")), || unreachable!(), LONG).unwrap_err();
        assert!(
            matches!(&e, BootstrapError::JobMismatch { ours, theirs, .. } if ours == "b" && theirs == "a"),
            "{e}"
        );
        assert!(
            e.to_string().contains("\"a\"") && e.to_string().contains("\"b\""),
            "{e}"
        );
    }

    #[test]
    fn dir_size_mismatch() {
        let dir = TempDir::new("size");
        let rv = Rendezvous::Dir(dir.0.clone());
        let (r0, r1) = thread::scope(|s| {
            let zero =
                s.spawn(|| exchange_unique_id(&rv, &pl(0, 4, Some("j")), || Ok(uid(3)), MS200));
            let one =
                s.spawn(|| exchange_unique_id(&rv, &pl(1, 3, Some("j")), || unreachable!(), LONG));
            (zero.join().unwrap(), one.join().unwrap())
        });
        let e = r1.unwrap_err();
        assert!(
            matches!(&e, BootstrapError::SizeMismatch { ours: 3, theirs: 4, other, .. } if other == "rank 0"),
            "{e}"
        );
        let e = r0.unwrap_err();
        assert!(
            matches!(&e, BootstrapError::AckTimeout { missing, waited, .. } if missing == &[1, 2, 3] && *waited == MS200),
            "{e}"
        );
        assert!(
            e.to_string().contains("1, 2, 3") && e.to_string().contains("200ms"),
            "{e}"
        );
        assert_eq!(dir.entries(), Vec::<String>::new());
    }

    #[test]
    fn dir_timeout_when_rank_0_never_comes() {
        let dir = TempDir::new("timeout");
        let rv = Rendezvous::Dir(dir.0.clone());
        let start = Instant::now();
        let e =
            exchange_unique_id(&rv, &pl(2, 3, Some("j")), || unreachable!(), MS200).unwrap_err();
        assert!(start.elapsed() >= MS200);
        let path = dir.0.join("niin-uid-j");
        assert_eq!(
            e,
            BootstrapError::DirTimeout {
                rank: 2,
                path: path.clone(),
                waited: MS200,
                detail: "it does not exist".into()
            }
        );
        assert!(
            e.to_string().contains(&path.display().to_string()) && e.to_string().contains("200ms"),
            "{e}"
        );
    }

    #[test]
    fn dir_corrupt_file_is_rejected() {
        let dir = TempDir::new("corrupt");
        let rv = Rendezvous::Dir(dir.0.clone());
        let path = dir.0.join(uid_file_name("j"));
        let mut bytes = encode_uid_file("j", 2, &uid(5));
        let n = bytes.len();
        bytes[n - 20] ^= 0x40; // a byte of the id
        fs::write(&path, &bytes).unwrap();
        let e =
            exchange_unique_id(&rv, &pl(1, 2, Some("j")), || unreachable!(), MS200).unwrap_err();
        assert!(
            matches!(&e, BootstrapError::Corrupt { reason, .. } if reason.contains("checksum")),
            "{e}"
        );
        fs::write(&path, &bytes[..30]).unwrap();
        let e =
            exchange_unique_id(&rv, &pl(1, 2, Some("j")), || unreachable!(), MS200).unwrap_err();
        assert!(
            matches!(&e, BootstrapError::Corrupt { reason, .. } if reason.contains("checksum") || reason.contains("truncated")),
            "{e}"
        );
        fs::write(&path, b"garbage!garbage!garbage!").unwrap();
        let e =
            exchange_unique_id(&rv, &pl(1, 2, Some("j")), || unreachable!(), MS200).unwrap_err();
        assert!(
            matches!(&e, BootstrapError::Corrupt { reason, .. } if reason.contains("magic")),
            "{e}"
        );
    }

    #[test]
    fn dir_needs_a_directory_and_a_job_id() {
        let dir = TempDir::new("needs");
        let missing = Rendezvous::Dir(dir.0.join("absent"));
        let e = exchange_unique_id(&missing, &pl(1, 2, Some("j")), || unreachable!(), MS200)
            .unwrap_err();
        assert!(matches!(e, BootstrapError::DirMissing { .. }), "{e}");
        let file = dir.0.join("a-file");
        fs::write(&file, b"").unwrap();
        let e = exchange_unique_id(
            &Rendezvous::Dir(file),
            &pl(0, 2, Some("j")),
            || Ok(uid(1)),
            MS200,
        )
        .unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
        let rv = Rendezvous::Dir(dir.0.clone());
        let e = exchange_unique_id(&rv, &pl(1, 2, None), || unreachable!(), MS200).unwrap_err();
        assert!(
            matches!(e, BootstrapError::NoJobId { .. }) && e.to_string().contains("NIIN_JOB_ID"),
            "{e}"
        );
        let e = exchange_unique_id(&rv, &pl(0, 2, Some("j")), || Err("no GPU".into()), MS200)
            .unwrap_err();
        assert_eq!(e, BootstrapError::MakeFailed("no GPU".into()));
        let e =
            exchange_unique_id(&rv, &pl(2, 2, Some("j")), || unreachable!(), MS200).unwrap_err();
        assert_eq!(e, BootstrapError::InvalidPlacement { rank: 2, size: 2 });
    }

    #[test]
    fn single_process_just_makes_the_id() {
        let rv = Rendezvous::Dir("/nonexistent/niin".into());
        assert_eq!(
            exchange_unique_id(&rv, &pl(0, 1, None), || Ok(uid(9)), MS200).unwrap(),
            uid(9)
        );
    }

    #[test]
    fn tcp_four_ranks_share_one_id() {
        let rv = Rendezvous::Tcp(loopback());
        // The clients start first and retry until rank 0 listens.
        let (results, made) = run_job(&rv, 4, Some("job-t"), Duration::from_millis(50), LONG);
        assert_eq!(made, 1);
        for r in results {
            assert_eq!(r.unwrap(), uid(42));
        }
        // Without a job id too (the address identifies the job).
        let rv = Rendezvous::Tcp(loopback());
        let (results, _) = run_job(&rv, 3, None, Duration::ZERO, LONG);
        assert!(results.iter().all(|r| r.as_ref() == Ok(&uid(42))));
    }

    #[test]
    fn tcp_rank_0_ignores_strangers() {
        let addr = loopback();
        let rv = Rendezvous::Tcp(addr);
        let (r0, r1) = thread::scope(|s| {
            let zero =
                s.spawn(|| exchange_unique_id(&rv, &pl(0, 2, Some("j")), || Ok(uid(7)), LONG));
            // A stranger speaking HTTP, then the real rank 1.
            let mut stranger = loop {
                match TcpStream::connect(addr) {
                    Ok(s) => break s,
                    Err(_) => thread::sleep(Duration::from_millis(2)),
                }
            };
            stranger.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
            let one =
                s.spawn(|| exchange_unique_id(&rv, &pl(1, 2, Some("j")), || unreachable!(), LONG));
            (zero.join().unwrap(), one.join().unwrap())
        });
        assert_eq!(r0.unwrap(), uid(7));
        assert_eq!(r1.unwrap(), uid(7));
    }

    #[test]
    fn tcp_job_id_mismatch() {
        let addr = loopback();
        let rv = Rendezvous::Tcp(addr);
        let (r0, r1) = thread::scope(|s| {
            let zero =
                s.spawn(|| exchange_unique_id(&rv, &pl(0, 2, Some("a")), || Ok(uid(1)), MS200));
            let one =
                s.spawn(|| exchange_unique_id(&rv, &pl(1, 2, Some("b")), || unreachable!(), LONG));
            (zero.join().unwrap(), one.join().unwrap())
        });
        let e = r1.unwrap_err();
        assert!(
            matches!(&e, BootstrapError::Rejected { message, .. } if message.contains("\"a\"") && message.contains("\"b\"")),
            "{e}"
        );
        // Rank 0 does not count another job's process, and times out naming rank 1.
        let e = r0.unwrap_err();
        assert!(
            matches!(&e, BootstrapError::TcpTimeout { waited, detail, .. } if *waited == MS200 && detail.contains("rank(s) 1 never asked")),
            "{e}"
        );
    }

    #[test]
    fn tcp_size_mismatch() {
        let rv = Rendezvous::Tcp(loopback());
        let (r0, r1) = thread::scope(|s| {
            let zero =
                s.spawn(|| exchange_unique_id(&rv, &pl(0, 3, Some("j")), || Ok(uid(1)), LONG));
            let one =
                s.spawn(|| exchange_unique_id(&rv, &pl(1, 2, Some("j")), || unreachable!(), LONG));
            (zero.join().unwrap(), one.join().unwrap())
        });
        let e = r1.unwrap_err();
        assert!(
            matches!(&e, BootstrapError::Rejected { message, .. } if message.contains("counts 3") && message.contains("counts 2")),
            "{e}"
        );
        let e = r0.unwrap_err();
        assert!(
            matches!(&e, BootstrapError::SizeMismatch { ours: 3, theirs: 2, other, .. } if other == "rank 1"),
            "{e}"
        );
    }

    #[test]
    fn tcp_timeout_and_bad_addresses() {
        let addr = loopback();
        let rv = Rendezvous::Tcp(addr);
        let start = Instant::now();
        let e =
            exchange_unique_id(&rv, &pl(1, 2, Some("j")), || unreachable!(), MS200).unwrap_err();
        assert!(start.elapsed() >= MS200 && start.elapsed() < LONG);
        assert!(
            matches!(&e, BootstrapError::TcpTimeout { addr: a, waited, detail } if *a == addr && *waited == MS200 && detail.contains("rank 1")),
            "{e}"
        );
        assert!(
            e.to_string().contains(&addr.to_string()) && e.to_string().contains("200ms"),
            "{e}"
        );
        let zero = Rendezvous::Tcp(SocketAddr::from(([127, 0, 0, 1], 0)));
        let e = exchange_unique_id(&zero, &pl(0, 2, None), || Ok(uid(1)), MS200).unwrap_err();
        assert!(matches!(e, BootstrapError::PortZero { .. }), "{e}");
        // Rank 0 cannot listen where another socket already does.
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let rv = Rendezvous::Tcp(taken.local_addr().unwrap());
        let e = exchange_unique_id(&rv, &pl(0, 2, None), || Ok(uid(1)), MS200).unwrap_err();
        assert!(matches!(e, BootstrapError::Bind { .. }), "{e}");
    }
}
