//! The errors of launcher detection and of the unique-id rendezvous.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::launcher::Launcher;

/// What went wrong while working out this process's place in its job, or while exchanging
/// the unique id. Every message names the variables, values, paths or addresses that explain
/// it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BootstrapError {
    /// A launcher variable does not hold what it should.
    #[error("{var}={value:?} is not {expected}")]
    Malformed {
        /// The variable.
        var: String,
        /// Its value.
        value: String,
        /// What it should be.
        expected: &'static str,
    },
    /// Some of a launcher's variables are set, but not all of those it always sets.
    #[error(
        "incomplete {launcher} environment: {} set, but {} not; start the program with its launcher (or with niinrun), or set none of these variables for a single process",
        .set.join(", "),
        .missing.join(", ")
    )]
    Incomplete {
        /// The launcher the variables belong to.
        launcher: Launcher,
        /// The variables that are set, as `NAME="value"`.
        set: Vec<String>,
        /// The variables that are missing.
        missing: Vec<String>,
    },
    /// The job size is 0.
    #[error("{var}=0 ({launcher}): a job has at least one process")]
    ZeroSize {
        /// The launcher.
        launcher: Launcher,
        /// The variable that says 0.
        var: String,
    },
    /// The rank is not below the size.
    #[error("{rank_var}={rank} does not fit {size_var}={size} ({launcher}): need 0 <= rank < size")]
    RankOutOfRange {
        /// The launcher.
        launcher: Launcher,
        /// The variable holding the rank.
        rank_var: String,
        /// The rank.
        rank: usize,
        /// The variable holding the size.
        size_var: String,
        /// The size.
        size: usize,
    },
    /// The node-local rank is not below the node-local size.
    #[error(
        "{local_rank_var}={local_rank} does not fit {local_size_var}={local_size} ({launcher}): need 0 <= local rank < local size"
    )]
    LocalRankOutOfRange {
        /// The launcher.
        launcher: Launcher,
        /// The variable holding the local rank.
        local_rank_var: String,
        /// The local rank.
        local_rank: usize,
        /// The variable holding the local size.
        local_size_var: String,
        /// The local size.
        local_size: usize,
    },
    /// More processes on this node than in the whole job.
    #[error(
        "{local_size_var}={local_size} is more than {size_var}={size} ({launcher}): a node cannot hold more processes than the job"
    )]
    LocalSizeTooLarge {
        /// The launcher.
        launcher: Launcher,
        /// The variable holding the local size.
        local_size_var: String,
        /// The local size.
        local_size: usize,
        /// The variable holding the size.
        size_var: String,
        /// The size.
        size: usize,
    },
    /// Two sources that describe the same launch give different ranks or sizes.
    #[error(
        "{first} and {second} disagree about this process: {first_says}, but {second_says}; the environment mixes variables of different jobs"
    )]
    Disagree {
        /// The source that was chosen.
        first: Launcher,
        /// What it says, as `NAME=value, ...`.
        first_says: String,
        /// The source that contradicts it.
        second: Launcher,
        /// What that one says.
        second_says: String,
    },
    /// PMIx gives a rank but, as always, no job size.
    #[error(
        "PMIx gives this process PMIX_RANK={rank} in namespace {namespace:?}, but no job size (PMIx keeps it in its server, not in the environment): set NIIN_NPES to the number of processes in every process, or start the job with niinrun, srun or mpirun"
    )]
    PmixWithoutSize {
        /// `PMIX_RANK`.
        rank: usize,
        /// `PMIX_NAMESPACE`.
        namespace: String,
    },
    /// `NIIN_NPES` is set, but no launcher gives this process a rank.
    #[error(
        "NIIN_NPES={size} is set, but no launcher variable gives this process its rank (NIIN_PE, RANK, OMPI_COMM_WORLD_RANK, MV2_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID): start the job with a launcher, or unset NIIN_NPES for a single process"
    )]
    SizeWithoutRank {
        /// The value of `NIIN_NPES`.
        size: usize,
    },
    /// `SLURM_NODEID` is beyond the nodes of the tasks-per-node list.
    #[error("SLURM_NODEID={node_id} is beyond the {nodes} nodes of {var}={list:?}")]
    SlurmNodeOutOfRange {
        /// `SLURM_NODEID`.
        node_id: usize,
        /// The list variable.
        var: &'static str,
        /// Its value.
        list: String,
        /// The number of nodes the list describes.
        nodes: usize,
    },
    /// `NIIN_RENDEZVOUS` cannot be parsed.
    #[error("NIIN_RENDEZVOUS={value:?}: {reason}; expected dir:<directory> or tcp:<host>:<port>")]
    BadRendezvous {
        /// The value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The exchange through the launcher's PMIx server failed (libpmix missing, or a PMIx
    /// call failed: which, and PMIx's words for it).
    #[error("PMIx rendezvous: {what}")]
    Pmix {
        /// What failed.
        what: String,
    },
    /// No rendezvous is configured for a job of several processes on several nodes.
    #[error(
        "no rendezvous for the {size} processes started by {launcher} on several nodes: set NIIN_RENDEZVOUS=dir:<a directory every process sees>, NIIN_RENDEZVOUS=tcp:<rank 0's host>:<port> or NIIN_RENDEZVOUS=pmix (a launcher with a PMIx server) in every process, or start the job with niinrun (a job on one node needs none)"
    )]
    NoRendezvous {
        /// The launcher.
        launcher: Launcher,
        /// The job size.
        size: usize,
    },
    /// A directory rendezvous needs a job id, and the launcher gives none.
    #[error(
        "a dir: rendezvous needs a job id, and {launcher} gives none: set NIIN_JOB_ID (1 to 64 characters of [A-Za-z0-9_.-], unique to this job) in every process, or use NIIN_RENDEZVOUS=tcp:<host>:<port>"
    )]
    NoJobId {
        /// The launcher.
        launcher: Launcher,
    },
    /// The placement handed to the exchange is impossible.
    #[error("invalid placement: rank {rank} of {size} processes")]
    InvalidPlacement {
        /// The rank.
        rank: usize,
        /// The size.
        size: usize,
    },
    /// The rendezvous directory does not exist or is not a directory.
    #[error(
        "rendezvous directory {} is not usable: {reason}; it must exist and be shared by all processes of the job (niinrun creates one)",
        .path.display()
    )]
    DirMissing {
        /// The directory.
        path: PathBuf,
        /// Why it is not usable.
        reason: String,
    },
    /// The closure that makes the unique id failed on rank 0.
    #[error("rank 0 could not create the unique id: {0}")]
    MakeFailed(String),
    /// A file or socket operation failed.
    #[error("{what}: {error}")]
    Io {
        /// What was being done, with the path or address.
        what: String,
        /// The operating system's error.
        error: String,
    },
    /// A rank gave up waiting for rank 0's unique-id file.
    #[error(
        "rank {rank} waited {waited:?} for {} and rank 0 did not publish it ({detail}); is rank 0 running, with the same job id, and does it see the same directory?",
        .path.display()
    )]
    DirTimeout {
        /// The waiting rank.
        rank: usize,
        /// The file waited for.
        path: PathBuf,
        /// How long it waited.
        waited: Duration,
        /// What it saw last.
        detail: String,
    },
    /// The unique-id file exists but is not valid, and did not become valid before the timeout.
    #[error("{} is not a valid unique-id file after {waited:?}: {reason}", .path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
        /// How long the reader waited for a valid one.
        waited: Duration,
    },
    /// Rank 0 published the unique id, but not every rank acknowledged it in time.
    #[error(
        "rank 0 published {} but rank(s) {} did not acknowledge it within {waited:?}",
        .path.display(),
        super::ranks_list(.missing)
    )]
    AckTimeout {
        /// The published file (removed again).
        path: PathBuf,
        /// How long rank 0 waited.
        waited: Duration,
        /// The ranks that did not acknowledge.
        missing: Vec<usize>,
    },
    /// The unique id was published for another job.
    #[error(
        "job id mismatch at {at}: this process has job id {ours:?}, but rank 0 published job id {theirs:?}"
    )]
    JobMismatch {
        /// The file or address.
        at: String,
        /// This process's job id.
        ours: String,
        /// The job id found there.
        theirs: String,
    },
    /// Two ranks of the job count a different number of processes.
    #[error(
        "size mismatch at {at}: this process counts {ours} processes, but {other} counts {theirs}"
    )]
    SizeMismatch {
        /// The file or address.
        at: String,
        /// Who counts `theirs` (e.g. `rank 0`).
        other: String,
        /// This process's size.
        ours: usize,
        /// The other one's size.
        theirs: usize,
    },
    /// A rank of this job sent rank 0 a rank that cannot be.
    #[error("at {addr}: a process of job {job_id:?} claims rank {rank}, which is not in 1..{size}")]
    PeerRankInvalid {
        /// Rank 0's address.
        addr: SocketAddr,
        /// The job id.
        job_id: String,
        /// The rank it claims.
        rank: u64,
        /// The job size.
        size: usize,
    },
    /// A TCP rendezvous address with port 0.
    #[error(
        "tcp rendezvous address {addr} has port 0: every process must know rank 0's port in advance"
    )]
    PortZero {
        /// The address.
        addr: SocketAddr,
    },
    /// Rank 0 cannot listen on the rendezvous address.
    #[error(
        "rank 0 cannot listen on {addr}: {error} (another job may be using this port, or the address is not one of this host's)"
    )]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The operating system's error.
        error: String,
    },
    /// Rank 0 refused this process's hello.
    #[error("rank 0 at {addr} refused this process: {message}")]
    Rejected {
        /// Rank 0's address.
        addr: SocketAddr,
        /// Rank 0's explanation.
        message: String,
    },
    /// The TCP rendezvous did not complete in time.
    #[error("tcp rendezvous at {addr} timed out after {waited:?}: {detail}")]
    TcpTimeout {
        /// Rank 0's address.
        addr: SocketAddr,
        /// How long this process waited.
        waited: Duration,
        /// Who was waiting for what, and the last error seen.
        detail: String,
    },
}
