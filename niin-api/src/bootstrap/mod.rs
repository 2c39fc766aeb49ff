//! Bootstrap without MPI: where this process sits in its job, read from its launcher's
//! environment ([`detect`]), and the exchange of NCCL's 128-byte unique id between the job's
//! processes ([`exchange_unique_id`]).
//!
//! ```no_run
//! use niin_api::bootstrap::{self, DEFAULT_TIMEOUT};
//!
//! let env = |k: &str| std::env::var(k).ok();
//! if let Some(place) = bootstrap::detect(env)? {
//!     let rv = bootstrap::rendezvous_from_env(env, &place)?;
//!     let make = || Ok([7u8; bootstrap::UID_BYTES]); // ncclGetUniqueId, on rank 0 only
//!     let uid = bootstrap::exchange_unique_id(&rv, &place, make, DEFAULT_TIMEOUT)?;
//!     # let _ = uid;
//! }
//! # Ok::<(), bootstrap::BootstrapError>(())
//! ```
//!
//! # Launchers
//!
//! A launcher is *present* when one of the variables of the second column is set (empty
//! values count as unset). Its rank and size variables are then required; the local ones
//! and the job id are read when set.
//!
//! | launcher ([`Launcher`]) | present when set | rank | size | local rank | local size | job id |
//! |---|---|---|---|---|---|---|
//! | `Niinrun` | `NIIN_PE`, `NIIN_LAUNCHER` | `NIIN_PE` | `NIIN_NPES` | `NIIN_LOCAL_PE` | `NIIN_LOCAL_NPES` | `NIIN_JOB_ID` (required) |
//! | `Torchrun` | `RANK`, `WORLD_SIZE` | `RANK` | `WORLD_SIZE` | `LOCAL_RANK` | `LOCAL_WORLD_SIZE` | `TORCHELASTIC_RUN_ID` |
//! | `OpenMpi` | `OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}` | `OMPI_COMM_WORLD_RANK` | `OMPI_COMM_WORLD_SIZE` | `OMPI_COMM_WORLD_LOCAL_RANK` | `OMPI_COMM_WORLD_LOCAL_SIZE` | `OMPI_MCA_ess_base_jobid`, else `OMPI_MCA_orte_ess_jobid`, else `PMIX_NAMESPACE` |
//! | `Mvapich` | `MV2_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}` | `MV2_COMM_WORLD_RANK` | `MV2_COMM_WORLD_SIZE` | `MV2_COMM_WORLD_LOCAL_RANK` | `MV2_COMM_WORLD_LOCAL_SIZE` | none |
//! | `Pmi` | `PMI_RANK`, `PMI_SIZE`, `PMI_ID`, `MPI_LOCALRANKID`, `MPI_LOCALNRANKS` | `PMI_RANK` | `PMI_SIZE` | `MPI_LOCALRANKID`, else `PMI_LOCAL_RANK` | `MPI_LOCALNRANKS`, else `PMI_LOCAL_SIZE` | `PMI_JOBID` |
//! | `Pmix` | `PMIX_RANK`, `PMIX_NAMESPACE` | `PMIX_RANK` | none: `NIIN_NPES` | none | none | `PMIX_NAMESPACE` |
//! | `Slurm` | `SLURM_STEP_ID`, `SLURM_STEPID` | `SLURM_PROCID` | `SLURM_STEP_NUM_TASKS`, else `SLURM_NTASKS`, else `SLURM_NPROCS` | `SLURM_LOCALID` | this node's entry (`SLURM_NODEID`) of `SLURM_STEP_TASKS_PER_NODE`, else of `SLURM_TASKS_PER_NODE`, else `SLURM_NTASKS_PER_NODE` | `SLURM_JOB_ID` (or `SLURM_JOBID`) `.` `SLURM_STEP_ID` (or `SLURM_STEPID`) |
//!
//! Where the variables come from:
//!
//! - niinrun: its environment contract, [`crate::launch`].
//! - torchrun: "torchrun (Elastic Launch)", *Environment Variables*,
//!   <https://pytorch.org/docs/stable/elastic/run.html>. `TORCHELASTIC_RUN_ID` is
//!   `--rdzv-id`: `none` unless given (random with `--standalone`), so give each job its own
//!   for a `dir:` rendezvous. Other launchers of the `RANK`/`WORLD_SIZE` convention (the
//!   legacy `torch.distributed.launch`, DeepSpeed's) read the same.
//! - Open MPI: "Environment variables set for MPI applications",
//!   <https://docs.open-mpi.org/en/v5.0.x/tuning-apps/environment-var.html> (the four
//!   `OMPI_COMM_WORLD_*`, the same in Open MPI 4's `mpirun(1)`). The job id is
//!   `OMPI_MCA_ess_base_jobid` in Open MPI 2 to 4 (set by ORTE's odls for each process),
//!   `OMPI_MCA_orte_ess_jobid` in Open MPI 1.x; Open MPI 5 (PRRTE) sets neither, and its
//!   PMIx namespace names the job.
//! - MVAPICH2 `mpirun_rsh`: `setup_local_environment` in `src/pm/mpirun/mpispawn.c` sets
//!   `MV2_COMM_WORLD_{RANK,LOCAL_RANK,LOCAL_SIZE,SIZE}` (and `PMI_ID`). MVAPICH2 started by
//!   Hydra `mpiexec` is read as `Pmi`.
//! - PMI: MPICH's Hydra proxy (`launch_procs` in `src/pm/hydra/proxy/pmip_cb.c`, also behind
//!   Intel MPI's `mpiexec.hydra`) sets `PMI_RANK`, `PMI_SIZE`, `PMI_FD`, `MPI_LOCALRANKID`
//!   and `MPI_LOCALNRANKS`; in its PMI-port mode it sets `PMI_ID` and no size, which is
//!   reported as incomplete. Slurm's `--mpi=pmi2` plugin
//!   (`src/plugins/mpi/pmi2/mpi_pmi2.c`) sets `PMI_RANK`, `PMI_SIZE`, `PMI_JOBID`. Cray
//!   PALS names the local pair `PMI_LOCAL_RANK`/`PMI_LOCAL_SIZE`.
//! - PMIx: `PMIx_server_setup_fork` (OpenPMIx, `src/server/pmix_server.c`) gives each
//!   client `PMIX_NAMESPACE` and `PMIX_RANK` only; the job size lives in the server
//!   (`PMIX_JOB_SIZE` through `PMIx_Get`), so it must come from `NIIN_NPES` (below), or
//!   detection fails with [`BootstrapError::PmixWithoutSize`], which says so.
//! - Slurm: `srun(1)`, *OUTPUT ENVIRONMENT VARIABLES* (<https://slurm.schedmd.com/srun.html>):
//!   `SLURM_PROCID` "the MPI rank", `SLURM_LOCALID` "node local task ID",
//!   `SLURM_NODEID` "the relative node ID", `SLURM_STEP_TASKS_PER_NODE` /
//!   `SLURM_TASKS_PER_NODE` "comma separated ... if two or more consecutive nodes are to have
//!   the same task count, that count is followed by `(x#)`" (`2(x3),1`: three nodes of 2, one
//!   of 1). Only job steps get `SLURM_STEP_ID` (`setup_env` in `src/common/env.c` sets it
//!   for step ids ≥ 0; the batch script's is not): a program run directly in a batch script,
//!   where `SLURM_PROCID=0` and `SLURM_NTASKS` is the allocation's, is a single process.
//!   `SLURM_NTASKS_PER_NODE` is only the requested maximum (`--ntasks-per-node`), so the
//!   per-node list wins. `srun --mpi=pmix` also sets PMIx variables, in namespace
//!   `slurm.pmix.<job>.<step>` (`src/plugins/mpi/pmix/pmixp_info.c`).
//!
//! Two niinrun variables also serve the other launchers, when `NIIN_PE` is not set:
//! `NIIN_NPES` gives the size to a launcher without one (PMIx) and must agree with any
//! launcher's size; `NIIN_JOB_ID` (validated as niinrun does) names the job when the
//! launcher gives no id (MVAPICH, Hydra, torchrun without `TORCHELASTIC_RUN_ID`).
//! `NIIN_NPES` other than 1 with no launcher at all is an error.
//!
//! # Precedence
//!
//! Launchers nest: niinrun or torchrun started by `srun`, `mpirun` inside `salloc`
//! (which starts its daemons with `srun`, so the processes inherit `SLURM_PROCID` = the
//! node's index), Hydra's proxies started by `srun`. The innermost launcher started this
//! process, so the most specific variables win, and the outer launchers' variables, which
//! legitimately describe other processes, are not read:
//!
//! 1. `Niinrun`, whose variables always win (its contract sets them last);
//! 2. `Torchrun`, `OpenMpi`, `Mvapich`: launcher-specific names;
//! 3. `Pmi`, then `Pmix`: the generic process-manager protocols, which any of the above may
//!    also have set for its processes, or inherited from an outer launcher;
//! 4. `Slurm`, the outermost (resource manager) layer; PMIx variables in Slurm's own
//!    namespace belong to it (`srun --mpi=pmix`), and do not make a `Pmix` launcher.
//!
//! The first present launcher is chosen, and its errors (incomplete, malformed, out of
//! range) are reported; the variables of later ones are not read. Variables that the same
//! launch sets for the same process must agree with the chosen ones, and a disagreement is
//! [`BootstrapError::Disagree`], naming both sources and values: `PMIX_RANK` with Open MPI's
//! rank (Open MPI 2+ sets both), `PMIX_RANK` in a `slurm.pmix.*` namespace with
//! `SLURM_PROCID`, and `NIIN_NPES` with any launcher's size.
//!
//! Errors name the variable and value: numbers that are not non-negative decimal integers,
//! rank ≥ size, size 0, local rank ≥ local size, local size 0 or above the size, a
//! `SLURM_NODEID` beyond the tasks-per-node list, and incomplete sets (which variables are
//! set, which are missing).
//!
//! # Rendezvous
//!
//! [`rendezvous_from_env`] reads `NIIN_RENDEZVOUS`: `dir:<directory>`,
//! `tcp:<host>:<port>` (port 0 is refused: the port must be agreed in advance) or `pmix`
//! (the launcher's PMIx server, libpmix opened at run time: `pmix.rs` has the protocol).
//! Unset:
//!
//! - a job started by niinrun uses `dir:$NIIN_RENDEZVOUS_DIR` (niinrun creates it, mode
//!   0700, and removes it at exit);
//! - a job of one process needs none, and a job whose processes all run on this node (its
//!   local size is its size: `mpirun -np 4`, `srun -N1`, `torchrun --nproc-per-node 4` on
//!   one host) uses `dir:` the temporary directory (`$TMPDIR`, else `/tmp`), its file named
//!   after the job id;
//! - a job on several nodes under a launcher with a PMIx server (`PMIX_NAMESPACE` set: Open
//!   MPI's `mpirun`, `srun --mpi=pmix`) uses `pmix`, as NVSHMEM's PMIx bootstrap does;
//! - torchrun across nodes uses `tcp:$MASTER_ADDR:<$MASTER_PORT + 1>` (torchrun's store
//!   holds `MASTER_PORT` on rank 0's node, and rank 0 listens on the next port);
//! - any other job (several nodes under mpirun or srun) gets
//!   [`BootstrapError::NoRendezvous`], which says how to set one (or to use niinrun).
//!
//! The job id a one-node job's file is named after: the launcher's (table above); torchrun's
//! default run id `none`, which every job has, is replaced by
//! `torchrun-<MASTER_ADDR>-<MASTER_PORT>`; a launcher that gives none (MPICH's Hydra,
//! MVAPICH) on one node is named after the processes' common parent, the launcher's per-node
//! process (`ppid-<pid>`), which lives as long as the job. A process started through a
//! wrapper of its own (`mpiexec -n 2 sh -c ./app`) has another parent than its peers: such
//! jobs set `NIIN_JOB_ID`.
//!
//! [`exchange_unique_id`]: rank 0 calls the `make` closure (NCCL's `ncclGetUniqueId`), the
//! others never do; a job of one process only calls `make`. `timeout` bounds each rank's
//! whole exchange (errors report it as the time waited); [`DEFAULT_TIMEOUT`] is 120 s.
//!
//! ## `dir:` — a file in a shared directory
//!
//! The directory must exist (and, across nodes, be on a file system all of them see); the
//! job needs a job id. The file is `<dir>/niin-uid-<job id>` (a job id that is not 1 to 64
//! characters of `[A-Za-z0-9_.-]` becomes its first 40 characters with the others replaced
//! by `_`, then `-` and its 64-bit FNV-1a hash in hex). Its content, integers little-endian:
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `NIINUID\0` |
//! | 4 | format version, 1 |
//! | 4 | job id length `n` (≤ 4096) |
//! | `n` | job id, UTF-8 |
//! | 8 | world size |
//! | 128 | the unique id |
//! | 8 | FNV-1a-64 checksum of all the bytes before it |
//!
//! - Rank 0 removes stale acknowledgements `<file>.ack-<r>`, writes the file as
//!   `<dir>/.niin-uid-<job id>.tmp-<pid>-<n>` (mode 0600), fsyncs it, renames it to its name
//!   (atomic: readers see all of it or nothing) and fsyncs the directory.
//! - Every rank `r` > 0 polls for the file (backoff from 1 ms, doubling, up to 50 ms) until it
//!   exists and parses. A file that does not parse (bad magic, version or checksum,
//!   truncated) is read again until the timeout, which then reports it
//!   ([`BootstrapError::Corrupt`]); otherwise the timeout is [`BootstrapError::DirTimeout`],
//!   naming the path and the time waited. A valid file of another job id or size is an error
//!   at once ([`BootstrapError::JobMismatch`], [`BootstrapError::SizeMismatch`], both values
//!   named). Having read it, rank `r` creates `<file>.ack-<r>`.
//! - Cleanup: rank 0 polls for the acknowledgements of ranks 1..size; when it has seen all
//!   of them, or at its timeout, it removes the file and every acknowledgement, so nothing
//!   is left behind. At the timeout it fails with [`BootstrapError::AckTimeout`], naming the
//!   ranks that did not acknowledge (a rank that comes later finds no file and times out).
//!   Files of a job that crashed before cleanup stay; job ids must be unique per job.
//!
//! ## `tcp:` — a connection to rank 0
//!
//! Rank 0 listens on the given address (which must be one of its host's) and accepts
//! connections until it has served ranks 1..size. Every other rank connects (retrying, with
//! backoff up to 100 ms, until its timeout) and sends a hello; rank 0 answers with the id,
//! or with an error and a message. Integers little-endian:
//!
//! | message | bytes |
//! |---|---|
//! | hello | magic `NIINHELO` (8), protocol version 1 (4), rank (8), size (8), job id length `n` ≤ 4096 (4), job id (`n`, UTF-8; empty without one) |
//! | reply | status 0 (1), unique id (128) |
//! | refusal | status 1 (1), message length `m` ≤ 65536 (4), message (`m`, UTF-8) |
//!
//! Rank 0 drops connections that do not start with the magic (strangers), refuses other
//! protocol versions and other job ids (another job's process; rank 0 goes on waiting for
//! its own), and refuses a different size or a rank outside 1..size and then fails itself
//! ([`BootstrapError::SizeMismatch`], [`BootstrapError::PeerRankInvalid`]). A rank that asks
//! twice is served twice. A refused client fails with [`BootstrapError::Rejected`], which
//! carries rank 0's message (naming both values). Every read and write has a timeout (what
//! is left of the exchange's, at most 5 s per operation); connection attempts at most 2 s.
//! When the timeout passes, rank 0 fails naming the ranks that never asked, a client naming
//! the address and its last error ([`BootstrapError::TcpTimeout`]). Whoever can reach the
//! port can ask for the id, as with NCCL's own bootstrap.

mod error;
mod launcher;
mod pmix;
mod rendezvous;

pub use error::BootstrapError;
pub use launcher::{Launcher, Placement, detect, detect_from_env};
pub use rendezvous::{
    DEFAULT_TIMEOUT, RENDEZVOUS_VAR, Rendezvous, UID_BYTES, exchange_unique_id, rendezvous_from_env,
};

/// `1, 2, 3` for error messages, shortened past 16 ranks.
fn ranks_list(ranks: &[usize]) -> String {
    const SHOWN: usize = 16;
    let head: Vec<String> = ranks.iter().take(SHOWN).map(usize::to_string).collect();
    if ranks.len() > SHOWN {
        format!("{}, ... ({} in all)", head.join(", "), ranks.len())
    } else {
        head.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_lists_are_short() {
        assert_eq!(ranks_list(&[1, 2, 3]), "1, 2, 3");
        let many: Vec<usize> = (1..100).collect();
        let s = ranks_list(&many);
        assert!(
            s.starts_with("1, 2,") && s.ends_with("... (99 in all)"),
            "{s}"
        );
    }
}
