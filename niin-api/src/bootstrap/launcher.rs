//! Launcher detection: this process's rank, size, node-local rank and size and job id, from
//! the variables its launcher set. See the [module docs](super) for the table and the rules.

use std::fmt;

use super::BootstrapError;
use crate::launch::env as niin;

/// Where this process sits in its job, as its launcher says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// This process's rank in the job, `0..size`.
    pub rank: usize,
    /// The number of processes in the job.
    pub size: usize,
    /// This process's rank among the job's processes on this node, when the launcher says.
    pub local_rank: Option<usize>,
    /// The number of the job's processes on this node, when the launcher says.
    pub local_size: Option<usize>,
    /// An identifier shared by all processes of the job, when the launcher gives one.
    pub job_id: Option<String>,
    /// The launcher whose variables these are.
    pub source: Launcher,
}

/// The launchers whose variables [`detect`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Launcher {
    /// niin-rs's own `niinrun` (`NIIN_*`).
    Niinrun,
    /// Open MPI's `mpirun` / `mpiexec` / `prterun` (`OMPI_COMM_WORLD_*`).
    OpenMpi,
    /// Slurm's `srun` (`SLURM_*`, in job steps only).
    Slurm,
    /// MVAPICH2's `mpirun_rsh` (`MV2_COMM_WORLD_*`).
    Mvapich,
    /// A PMI-1/PMI-2 process manager: MPICH's and Intel MPI's Hydra `mpiexec`, `srun
    /// --mpi=pmi2`, Cray PALS (`PMI_*`).
    Pmi,
    /// A PMIx server (`PMIX_RANK`, `PMIX_NAMESPACE`) with no other launcher variables.
    Pmix,
    /// PyTorch's `torchrun` and launchers of the same convention (`RANK`, `WORLD_SIZE`, ...).
    Torchrun,
}

impl fmt::Display for Launcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Launcher::Niinrun => "niinrun",
            Launcher::OpenMpi => "Open MPI",
            Launcher::Slurm => "Slurm",
            Launcher::Mvapich => "MVAPICH",
            Launcher::Pmi => "PMI",
            Launcher::Pmix => "PMIx",
            Launcher::Torchrun => "torchrun",
        })
    }
}

/// Reads this process's place in its job from its launcher's variables, looked up through
/// `lookup` (empty values count as unset). `Ok(None)`: no launcher variables, a single
/// process. Which launcher wins when several left variables, and which errors are reported,
/// is in the [module docs](super#precedence).
///
/// # Errors
///
/// A [`BootstrapError`] naming the variables and values: malformed numbers, incomplete
/// sets, rank not below size, size 0, local rank not below local size, sources of one
/// launch that disagree, PMIx without a size.
pub fn detect(
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Option<Placement>, BootstrapError> {
    let env = Env { lookup: &lookup };
    if let Some(reading) = read_niinrun(&env)? {
        return reading.into_placement().map(Some);
    }
    let size_hint = env.num(niin::NPES)?;
    let job_hint = match env.get(niin::JOB_ID) {
        Some(id) => Some(valid_niin_job_id(id)?),
        None => None,
    };
    let slurm_present = env.get(SLURM_STEP_ID).is_some() || env.get(SLURM_STEPID).is_some();
    let pmix_is_slurms = slurm_present
        && env
            .get(PMIX_NAMESPACE)
            .is_some_and(|ns| ns.starts_with(SLURM_PMIX_PREFIX));

    let chosen = if let Some(r) = read_torchrun(&env)? {
        Some((r, None))
    } else if let Some(r) = read_openmpi(&env)? {
        Some((r, read_pmix(&env)?))
    } else if let Some(r) = read_mvapich(&env)? {
        Some((r, None))
    } else if let Some(r) = read_pmi(&env)? {
        Some((r, None))
    } else if let Some(r) = read_pmix(&env)?.filter(|_| !pmix_is_slurms) {
        Some((r, None))
    } else if let Some(r) = read_slurm(&env)? {
        let companion = if pmix_is_slurms {
            read_pmix(&env)?
        } else {
            None
        };
        Some((r, companion))
    } else {
        None
    };

    let Some((mut reading, companion)) = chosen else {
        return match size_hint {
            Some(n) if n.value != 1 => Err(BootstrapError::SizeWithoutRank { size: n.value }),
            _ => Ok(None),
        };
    };
    if let Some(companion) = companion {
        reading.check_agrees(&companion)?;
    }
    if let Some(hint) = size_hint {
        match &reading.size {
            Some(size) if size.value != hint.value => {
                return Err(BootstrapError::Disagree {
                    first: reading.launcher,
                    first_says: size.to_string(),
                    second: Launcher::Niinrun,
                    second_says: hint.to_string(),
                });
            }
            Some(_) => {}
            None => reading.size = Some(hint),
        }
    }
    if reading.job_id.is_none() {
        reading.job_id = job_hint;
    }
    if reading.job_id.is_none() && reading.on_one_node() {
        reading.job_id = Some(parent_job_id(std::os::unix::process::parent_id()));
    }
    reading.into_placement().map(Some)
}

/// The job id of a one-node job whose launcher names none (MPICH's Hydra, MVAPICH,
/// torchrun without a run id or master port): its processes' common parent, the launcher's
/// per-node process (`hydra_pmi_proxy`, `mpispawn`, torchrun's agent), which lives as long
/// as the job. A process started through a wrapper of its own (`mpiexec -n 2 sh -c ./app`)
/// has another parent than its peers; such jobs set `NIIN_JOB_ID`.
pub(crate) fn parent_job_id(ppid: u32) -> String {
    format!("ppid-{ppid}")
}

/// torchrun's job id: `TORCHELASTIC_RUN_ID` (`--rdzv-id`), unless it is unset or `none`
/// (torchrun's default without `--rdzv-id`, the same for every job); then
/// `torchrun-<MASTER_ADDR>-<MASTER_PORT>`, which no two running jobs share (the port is
/// their store's); `None` without a master port.
fn torchrun_job_id(env: &Env<'_>) -> Option<String> {
    match env.get(TORCHELASTIC_RUN_ID) {
        Some(id) if id != "none" => Some(id),
        _ => env.get(MASTER_PORT).map(|port| {
            let addr = env.get(MASTER_ADDR).unwrap_or_else(|| "localhost".into());
            format!("torchrun-{addr}-{port}")
        }),
    }
}

/// [`detect`] on this process's environment (values that are not UTF-8 are read lossily:
/// a number among them is then reported as malformed).
///
/// # Errors
///
/// As [`detect`].
pub fn detect_from_env() -> Result<Option<Placement>, BootstrapError> {
    detect(|var| std::env::var_os(var).map(|v| v.to_string_lossy().into_owned()))
}

// Variable names not owned by niinrun (whose names are in `crate::launch::env`).
const RANK: &str = "RANK";
const WORLD_SIZE: &str = "WORLD_SIZE";
const LOCAL_RANK: &str = "LOCAL_RANK";
const LOCAL_WORLD_SIZE: &str = "LOCAL_WORLD_SIZE";
const TORCHELASTIC_RUN_ID: &str = "TORCHELASTIC_RUN_ID";
/// torchrun's store address (rank 0's node) and port.
pub(crate) const MASTER_ADDR: &str = "MASTER_ADDR";
pub(crate) const MASTER_PORT: &str = "MASTER_PORT";
const OMPI_RANK: &str = "OMPI_COMM_WORLD_RANK";
const OMPI_SIZE: &str = "OMPI_COMM_WORLD_SIZE";
const OMPI_LOCAL_RANK: &str = "OMPI_COMM_WORLD_LOCAL_RANK";
const OMPI_LOCAL_SIZE: &str = "OMPI_COMM_WORLD_LOCAL_SIZE";
const OMPI_JOB_IDS: [&str; 2] = ["OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid"];
const MV2_RANK: &str = "MV2_COMM_WORLD_RANK";
const MV2_SIZE: &str = "MV2_COMM_WORLD_SIZE";
const MV2_LOCAL_RANK: &str = "MV2_COMM_WORLD_LOCAL_RANK";
const MV2_LOCAL_SIZE: &str = "MV2_COMM_WORLD_LOCAL_SIZE";
const PMI_RANK: &str = "PMI_RANK";
const PMI_SIZE: &str = "PMI_SIZE";
const PMI_ID: &str = "PMI_ID";
const PMI_JOBID: &str = "PMI_JOBID";
const PMI_LOCAL_RANKS: [&str; 2] = ["MPI_LOCALRANKID", "PMI_LOCAL_RANK"];
const PMI_LOCAL_SIZES: [&str; 2] = ["MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"];
const PMIX_RANK: &str = "PMIX_RANK";
pub(crate) const PMIX_NAMESPACE: &str = "PMIX_NAMESPACE";
const SLURM_PMIX_PREFIX: &str = "slurm.pmix.";
const SLURM_PROCID: &str = "SLURM_PROCID";
const SLURM_SIZES: [&str; 3] = ["SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"];
const SLURM_LOCALID: &str = "SLURM_LOCALID";
const SLURM_NODEID: &str = "SLURM_NODEID";
const SLURM_TASK_LISTS: [&str; 2] = ["SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"];
const SLURM_NTASKS_PER_NODE: &str = "SLURM_NTASKS_PER_NODE";
const SLURM_JOB_IDS: [&str; 2] = ["SLURM_JOB_ID", "SLURM_JOBID"];
const SLURM_STEP_ID: &str = "SLURM_STEP_ID";
const SLURM_STEPID: &str = "SLURM_STEPID";

/// The lookup, with empty values treated as unset.
struct Env<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl Env<'_> {
    fn get(&self, var: &str) -> Option<String> {
        (self.lookup)(var).filter(|v| !v.trim().is_empty())
    }

    /// The first of `vars` that is set, with its name.
    fn first(&self, vars: &[&'static str]) -> Option<(&'static str, String)> {
        vars.iter().find_map(|&var| self.get(var).map(|v| (var, v)))
    }

    fn any(&self, vars: &[&str]) -> bool {
        vars.iter().any(|var| self.get(var).is_some())
    }

    fn num(&self, var: &'static str) -> Result<Option<Num>, BootstrapError> {
        self.get(var).map(|v| parse_num(var, &v)).transpose()
    }

    fn first_num(&self, vars: &[&'static str]) -> Result<Option<Num>, BootstrapError> {
        self.first(vars)
            .map(|(var, v)| parse_num(var, &v))
            .transpose()
    }

    /// `Err(Incomplete)` unless every one of `required` is set.
    fn require(
        &self,
        launcher: Launcher,
        family: &[&str],
        required: &[&[&str]],
    ) -> Result<(), BootstrapError> {
        let missing: Vec<String> = required
            .iter()
            .filter(|alternatives| !self.any(alternatives))
            .map(|alternatives| alternatives.join(" or "))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let set = family
            .iter()
            .filter_map(|&var| self.get(var).map(|v| format!("{var}={v:?}")))
            .collect();
        Err(BootstrapError::Incomplete {
            launcher,
            set,
            missing,
        })
    }
}

/// A number read from a variable.
#[derive(Clone, Debug)]
struct Num {
    var: String,
    value: usize,
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.var, self.value)
    }
}

fn parse_num(var: &'static str, value: &str) -> Result<Num, BootstrapError> {
    let digits = value.trim();
    match digits.parse::<usize>() {
        Ok(n) if digits.bytes().all(|b| b.is_ascii_digit()) => Ok(Num {
            var: var.to_owned(),
            value: n,
        }),
        _ => Err(BootstrapError::Malformed {
            var: var.to_owned(),
            value: value.to_owned(),
            expected: "a non-negative integer",
        }),
    }
}

fn valid_niin_job_id(id: String) -> Result<String, BootstrapError> {
    match crate::launch::validate_job_id(&id) {
        Ok(()) => Ok(id),
        Err(_) => Err(BootstrapError::Malformed {
            var: niin::JOB_ID.to_owned(),
            value: id,
            expected: "a job id of 1 to 64 characters of [A-Za-z0-9_.-]",
        }),
    }
}

/// What one launcher's variables say.
#[derive(Clone, Debug)]
struct Reading {
    launcher: Launcher,
    rank: Num,
    size: Option<Num>,
    local_rank: Option<Num>,
    local_size: Option<Num>,
    job_id: Option<String>,
}

impl Reading {
    /// Whether every process of the job runs on this node (the local size is the size).
    fn on_one_node(&self) -> bool {
        matches!((&self.size, &self.local_size), (Some(n), Some(l)) if n.value == l.value)
    }

    fn says(&self) -> String {
        match &self.size {
            Some(size) => format!("{}, {size}", self.rank),
            None => self.rank.to_string(),
        }
    }

    /// A companion (set by the same launch) must give the same rank, and the same size if
    /// it gives one.
    fn check_agrees(&self, other: &Reading) -> Result<(), BootstrapError> {
        let sizes_differ =
            matches!((&self.size, &other.size), (Some(a), Some(b)) if a.value != b.value);
        if self.rank.value != other.rank.value || sizes_differ {
            return Err(BootstrapError::Disagree {
                first: self.launcher,
                first_says: self.says(),
                second: other.launcher,
                second_says: other.says(),
            });
        }
        Ok(())
    }

    fn into_placement(self) -> Result<Placement, BootstrapError> {
        let launcher = self.launcher;
        let Some(size) = self.size else {
            return Err(BootstrapError::PmixWithoutSize {
                rank: self.rank.value,
                namespace: self.job_id.unwrap_or_default(),
            });
        };
        if size.value == 0 {
            return Err(BootstrapError::ZeroSize {
                launcher,
                var: size.var,
            });
        }
        if self.rank.value >= size.value {
            return Err(BootstrapError::RankOutOfRange {
                launcher,
                rank_var: self.rank.var,
                rank: self.rank.value,
                size_var: size.var,
                size: size.value,
            });
        }
        if let Some(local_size) = &self.local_size {
            if local_size.value == 0 {
                return Err(BootstrapError::ZeroSize {
                    launcher,
                    var: local_size.var.clone(),
                });
            }
            if local_size.value > size.value {
                return Err(BootstrapError::LocalSizeTooLarge {
                    launcher,
                    local_size_var: local_size.var.clone(),
                    local_size: local_size.value,
                    size_var: size.var,
                    size: size.value,
                });
            }
            if let Some(local_rank) = &self.local_rank {
                if local_rank.value >= local_size.value {
                    return Err(BootstrapError::LocalRankOutOfRange {
                        launcher,
                        local_rank_var: local_rank.var.clone(),
                        local_rank: local_rank.value,
                        local_size_var: local_size.var.clone(),
                        local_size: local_size.value,
                    });
                }
            }
        }
        if let Some(local_rank) = &self.local_rank {
            if local_rank.value >= size.value {
                return Err(BootstrapError::RankOutOfRange {
                    launcher,
                    rank_var: local_rank.var.clone(),
                    rank: local_rank.value,
                    size_var: size.var,
                    size: size.value,
                });
            }
        }
        Ok(Placement {
            rank: self.rank.value,
            size: size.value,
            local_rank: self.local_rank.map(|n| n.value),
            local_size: self.local_size.map(|n| n.value),
            job_id: self.job_id,
            source: launcher,
        })
    }
}

/// A launcher of the common shape: rank, size, local rank and local size in four variables.
struct Quad {
    launcher: Launcher,
    /// Any of these set makes the launcher present.
    presence: &'static [&'static str],
    rank: &'static str,
    size: &'static str,
    local_rank: &'static [&'static str],
    local_size: &'static [&'static str],
}

impl Quad {
    fn read(
        &self,
        env: &Env<'_>,
        job_id: Option<String>,
    ) -> Result<Option<Reading>, BootstrapError> {
        if !env.any(self.presence) {
            return Ok(None);
        }
        let mut family: Vec<&str> = self.presence.to_vec();
        family.extend(self.local_rank.iter().chain(self.local_size));
        env.require(self.launcher, &family, &[&[self.rank], &[self.size]])?;
        Ok(Some(Reading {
            launcher: self.launcher,
            rank: parse_num(self.rank, &env.get(self.rank).unwrap_or_default())?,
            size: env.num(self.size)?,
            local_rank: env.first_num(self.local_rank)?,
            local_size: env.first_num(self.local_size)?,
            job_id,
        }))
    }
}

fn read_niinrun(env: &Env<'_>) -> Result<Option<Reading>, BootstrapError> {
    if !env.any(&[niin::PE, niin::LAUNCHER]) {
        return Ok(None);
    }
    env.require(
        Launcher::Niinrun,
        &niin::ALL,
        &[&[niin::PE], &[niin::NPES], &[niin::JOB_ID]],
    )?;
    let job_id = valid_niin_job_id(env.get(niin::JOB_ID).unwrap_or_default())?;
    Quad {
        launcher: Launcher::Niinrun,
        presence: &[niin::PE, niin::LAUNCHER],
        rank: niin::PE,
        size: niin::NPES,
        local_rank: &[niin::LOCAL_PE],
        local_size: &[niin::LOCAL_NPES],
    }
    .read(env, Some(job_id))
}

fn read_torchrun(env: &Env<'_>) -> Result<Option<Reading>, BootstrapError> {
    Quad {
        launcher: Launcher::Torchrun,
        presence: &[RANK, WORLD_SIZE],
        rank: RANK,
        size: WORLD_SIZE,
        local_rank: &[LOCAL_RANK],
        local_size: &[LOCAL_WORLD_SIZE],
    }
    .read(env, torchrun_job_id(env))
}

fn read_openmpi(env: &Env<'_>) -> Result<Option<Reading>, BootstrapError> {
    let job_id = env
        .first(&OMPI_JOB_IDS)
        .map(|(_, id)| id)
        .or_else(|| env.get(PMIX_NAMESPACE));
    Quad {
        launcher: Launcher::OpenMpi,
        presence: &[OMPI_RANK, OMPI_SIZE, OMPI_LOCAL_RANK, OMPI_LOCAL_SIZE],
        rank: OMPI_RANK,
        size: OMPI_SIZE,
        local_rank: &[OMPI_LOCAL_RANK],
        local_size: &[OMPI_LOCAL_SIZE],
    }
    .read(env, job_id)
}

fn read_mvapich(env: &Env<'_>) -> Result<Option<Reading>, BootstrapError> {
    Quad {
        launcher: Launcher::Mvapich,
        presence: &[MV2_RANK, MV2_SIZE, MV2_LOCAL_RANK, MV2_LOCAL_SIZE],
        rank: MV2_RANK,
        size: MV2_SIZE,
        local_rank: &[MV2_LOCAL_RANK],
        local_size: &[MV2_LOCAL_SIZE],
    }
    .read(env, None)
}

fn read_pmi(env: &Env<'_>) -> Result<Option<Reading>, BootstrapError> {
    Quad {
        launcher: Launcher::Pmi,
        presence: &[
            PMI_RANK,
            PMI_SIZE,
            PMI_ID,
            PMI_LOCAL_RANKS[0],
            PMI_LOCAL_SIZES[0],
        ],
        rank: PMI_RANK,
        size: PMI_SIZE,
        local_rank: &PMI_LOCAL_RANKS,
        local_size: &PMI_LOCAL_SIZES,
    }
    .read(env, env.get(PMI_JOBID))
}

fn read_pmix(env: &Env<'_>) -> Result<Option<Reading>, BootstrapError> {
    let family = [PMIX_RANK, PMIX_NAMESPACE];
    if !env.any(&family) {
        return Ok(None);
    }
    env.require(Launcher::Pmix, &family, &[&[PMIX_RANK], &[PMIX_NAMESPACE]])?;
    Ok(Some(Reading {
        launcher: Launcher::Pmix,
        rank: parse_num(PMIX_RANK, &env.get(PMIX_RANK).unwrap_or_default())?,
        size: None,
        local_rank: None,
        local_size: None,
        job_id: env.get(PMIX_NAMESPACE),
    }))
}

fn read_slurm(env: &Env<'_>) -> Result<Option<Reading>, BootstrapError> {
    // Only tasks of a job step (srun) have a step id; a batch script has SLURM_PROCID=0
    // and the allocation's SLURM_NTASKS, but is a single process.
    let Some((step_var, step)) = env.first(&[SLURM_STEP_ID, SLURM_STEPID]) else {
        return Ok(None);
    };
    let mut family = vec![step_var, SLURM_PROCID];
    family.extend(SLURM_SIZES);
    family.extend([SLURM_LOCALID, SLURM_NODEID]);
    family.extend(SLURM_JOB_IDS);
    env.require(Launcher::Slurm, &family, &[&[SLURM_PROCID], &SLURM_SIZES])?;
    parse_num(step_var, &step)?;
    let local_rank = env.num(SLURM_LOCALID)?;
    let local_size = slurm_local_size(env)?;
    let job_id = env
        .first(&SLURM_JOB_IDS)
        .map(|(_, job)| format!("{}.{}", job.trim(), step.trim()));
    Ok(Some(Reading {
        launcher: Launcher::Slurm,
        rank: parse_num(SLURM_PROCID, &env.get(SLURM_PROCID).unwrap_or_default())?,
        size: env.first_num(&SLURM_SIZES)?,
        local_rank,
        local_size,
        job_id,
    }))
}

/// This node's share of the step's tasks: its entry (by `SLURM_NODEID`) of the
/// tasks-per-node list, else `SLURM_NTASKS_PER_NODE`.
fn slurm_local_size(env: &Env<'_>) -> Result<Option<Num>, BootstrapError> {
    let node = env.num(SLURM_NODEID)?;
    let Some((var, list)) = env.first(&SLURM_TASK_LISTS) else {
        return env.num(SLURM_NTASKS_PER_NODE);
    };
    let groups = parse_tasks_per_node(&list).map_err(|_| BootstrapError::Malformed {
        var: var.to_owned(),
        value: list.clone(),
        expected: "a list of task counts like 2(x3),1",
    })?;
    let nodes = node_count(&groups);
    match node {
        Some(node) => match tasks_on_node(&groups, node.value) {
            Some(tasks) => Ok(Some(Num {
                var: format!("{var}[node {}]", node.value),
                value: tasks,
            })),
            None => Err(BootstrapError::SlurmNodeOutOfRange {
                node_id: node.value,
                var,
                list,
                nodes,
            }),
        },
        None if nodes == 1 => Ok(Some(Num {
            var: format!("{var}[node 0]"),
            value: groups[0].0,
        })),
        None => env.num(SLURM_NTASKS_PER_NODE),
    }
}

/// Parses Slurm's tasks-per-node list (`4`, `2(x3),1`, `3,2(x2)`) into `(tasks, nodes)`
/// groups: `2(x3)` is 3 consecutive nodes of 2 tasks each.
fn parse_tasks_per_node(list: &str) -> Result<Vec<(usize, usize)>, ()> {
    fn count(s: &str) -> Result<usize, ()> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(());
        }
        s.parse().map_err(|_| ())
    }
    list.trim()
        .split(',')
        .map(|item| {
            let item = item.trim();
            match item.split_once('(') {
                None => Ok((count(item)?, 1)),
                Some((tasks, rest)) => {
                    let reps = rest.strip_prefix('x').and_then(|r| r.strip_suffix(')'));
                    let reps = count(reps.ok_or(())?)?;
                    if reps == 0 {
                        return Err(());
                    }
                    Ok((count(tasks.trim())?, reps))
                }
            }
        })
        .collect()
}

fn node_count(groups: &[(usize, usize)]) -> usize {
    groups
        .iter()
        .fold(0, |n, &(_, reps)| n.saturating_add(reps))
}

/// The number of tasks on node `node` (0-based), or `None` beyond the list.
fn tasks_on_node(groups: &[(usize, usize)], node: usize) -> Option<usize> {
    let mut first = 0usize;
    for &(tasks, reps) in groups {
        if node.checked_sub(first).is_some_and(|d| d < reps) {
            return Some(tasks);
        }
        first = first.saturating_add(reps);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    type Vars<'a> = &'a [(&'a str, &'a str)];

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn run(pairs: &[(&str, &str)]) -> Result<Option<Placement>, BootstrapError> {
        let m = env(pairs);
        detect(|k| m.get(k).cloned())
    }

    fn place(pairs: &[(&str, &str)]) -> Placement {
        run(pairs).unwrap().expect("a launcher")
    }

    fn err(pairs: &[(&str, &str)]) -> BootstrapError {
        run(pairs).unwrap_err()
    }

    fn p(
        source: Launcher,
        rank: usize,
        size: usize,
        local: Option<(usize, usize)>,
        job: Option<&str>,
    ) -> Placement {
        Placement {
            rank,
            size,
            local_rank: local.map(|l| l.0),
            local_size: local.map(|l| l.1),
            job_id: job.map(str::to_owned),
            source,
        }
    }

    /// What `srun -N4 -n7 --mpi=pmix` gives task 5 (on the third node) of step 0 of job
    /// 200505, tasks spread 2,2,2,1.
    const SRUN: &[(&str, &str)] = &[
        ("SLURM_JOB_ID", "200505"),
        ("SLURM_JOBID", "200505"),
        ("SLURM_STEP_ID", "0"),
        ("SLURM_STEPID", "0"),
        ("SLURM_PROCID", "5"),
        ("SLURM_LOCALID", "1"),
        ("SLURM_NODEID", "2"),
        ("SLURM_NNODES", "4"),
        ("SLURM_NTASKS", "7"),
        ("SLURM_NPROCS", "7"),
        ("SLURM_STEP_NUM_TASKS", "7"),
        ("SLURM_STEP_NUM_NODES", "4"),
        ("SLURM_TASKS_PER_NODE", "2(x3),1"),
        ("SLURM_STEP_TASKS_PER_NODE", "2(x3),1"),
        ("SLURM_STEP_NODELIST", "gnode[10,20,25,37]"),
        ("SLURM_GTIDS", "4,5"),
        ("SLURM_TASK_PID", "16360"),
        ("SLURMD_NODENAME", "gnode25"),
    ];

    /// A batch script's environment (sbatch -n 4): no step id.
    const SBATCH: &[(&str, &str)] = &[
        ("SLURM_JOB_ID", "200505"),
        ("SLURM_JOBID", "200505"),
        ("SLURM_PROCID", "0"),
        ("SLURM_LOCALID", "0"),
        ("SLURM_NODEID", "0"),
        ("SLURM_NTASKS", "4"),
        ("SLURM_NPROCS", "4"),
        ("SLURM_TASKS_PER_NODE", "1(x4)"),
        ("SLURM_NTASKS_PER_NODE", "4"),
        ("SLURM_GTIDS", "0"),
    ];

    fn with<'a>(
        base: &[(&'a str, &'a str)],
        extra: &[(&'a str, &'a str)],
    ) -> Vec<(&'a str, &'a str)> {
        let mut all: Vec<_> = base
            .iter()
            .filter(|(k, _)| !extra.iter().any(|(e, _)| e == k))
            .copied()
            .collect();
        all.extend_from_slice(extra);
        all
    }

    #[test]
    fn no_launcher_is_none() {
        assert_eq!(run(&[]).unwrap(), None);
        assert_eq!(
            run(&[("HOME", "/root"), ("LOCAL_RANK", "0")]).unwrap(),
            None
        );
        // A Slurm batch script is a single process, whatever SLURM_NTASKS says.
        assert_eq!(run(SBATCH).unwrap(), None);
        // NIIN_JOB_ID alone names a job; NIIN_NPES=1 alone is consistent with one process.
        assert_eq!(
            run(&[("NIIN_JOB_ID", "j"), ("NIIN_NPES", "1")]).unwrap(),
            None
        );
    }

    #[test]
    fn niinrun() {
        let vars = [
            ("NIIN_PE", "2"),
            ("NIIN_NPES", "4"),
            ("NIIN_LOCAL_PE", "2"),
            ("NIIN_LOCAL_NPES", "4"),
            ("NIIN_JOB_ID", "4242-18a2b3c4d5e6f"),
            ("NIIN_RENDEZVOUS_DIR", "/tmp/niinrun-4242-18a2b3c4d5e6f"),
            ("NIIN_LAUNCHER", "niinrun"),
        ];
        assert_eq!(
            place(&vars),
            p(
                Launcher::Niinrun,
                2,
                4,
                Some((2, 4)),
                Some("4242-18a2b3c4d5e6f")
            )
        );
        // The three variables niinrun's contract has always had are enough.
        let p3 = place(&[("NIIN_PE", "0"), ("NIIN_NPES", "1"), ("NIIN_JOB_ID", "j")]);
        assert_eq!(p3, p(Launcher::Niinrun, 0, 1, None, Some("j")));
    }

    #[test]
    fn open_mpi_4() {
        // mpirun -np 4 (Open MPI 4.1, ORTE): rank 1 on the first node of two.
        let vars = [
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
            ("OMPI_COMM_WORLD_NODE_RANK", "1"),
            ("OMPI_UNIVERSE_SIZE", "4"),
            ("OMPI_MCA_ess", "pmi"),
            ("OMPI_MCA_ess_base_jobid", "3236233217"),
            ("OMPI_MCA_ess_base_vpid", "1"),
            ("OMPI_MCA_orte_hnp_uri", "3236233216.0;tcp://10.0.0.1:33559"),
            ("PMIX_NAMESPACE", "3236233217"),
            ("PMIX_RANK", "1"),
            (
                "PMIX_SERVER_URI3",
                "pmix-server.1234;tcp4://127.0.0.1:41231",
            ),
        ];
        assert_eq!(
            place(&vars),
            p(Launcher::OpenMpi, 1, 4, Some((1, 2)), Some("3236233217"))
        );
    }

    #[test]
    fn open_mpi_5() {
        // mpirun -np 8 (Open MPI 5, PRRTE): no OMPI_MCA_ess_base_jobid; the PMIx namespace
        // names the job.
        let vars = [
            ("OMPI_COMM_WORLD_RANK", "6"),
            ("OMPI_COMM_WORLD_SIZE", "8"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "2"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "4"),
            ("OMPI_UNIVERSE_SIZE", "8"),
            ("PMIX_NAMESPACE", "prterun-node01-73811@1"),
            ("PMIX_RANK", "6"),
            (
                "PMIX_SERVER_URI41",
                "prterun-node01-73811@0.0;tcp4://10.0.0.1:46423",
            ),
        ];
        assert_eq!(
            place(&vars),
            p(
                Launcher::OpenMpi,
                6,
                8,
                Some((2, 4)),
                Some("prterun-node01-73811@1")
            )
        );
    }

    #[test]
    fn open_mpi_1_job_id() {
        let vars = [
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "1"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "1"),
            ("OMPI_MCA_orte_ess_jobid", "3236233217"),
            ("OMPI_MCA_orte_ess_vpid", "0"),
        ];
        assert_eq!(place(&vars).job_id.as_deref(), Some("3236233217"));
    }

    #[test]
    fn slurm_srun() {
        assert_eq!(
            place(SRUN),
            p(Launcher::Slurm, 5, 7, Some((1, 2)), Some("200505.0"))
        );
        // The fourth node holds one task.
        let last = with(
            SRUN,
            &[
                ("SLURM_PROCID", "6"),
                ("SLURM_LOCALID", "0"),
                ("SLURM_NODEID", "3"),
            ],
        );
        assert_eq!(
            place(&last),
            p(Launcher::Slurm, 6, 7, Some((0, 1)), Some("200505.0"))
        );
        // The old names alone, and --ntasks-per-node without a tasks-per-node list.
        let old = [
            ("SLURM_JOBID", "77"),
            ("SLURM_STEPID", "3"),
            ("SLURM_PROCID", "1"),
            ("SLURM_NPROCS", "4"),
            ("SLURM_LOCALID", "1"),
            ("SLURM_NTASKS_PER_NODE", "2"),
        ];
        assert_eq!(
            place(&old),
            p(Launcher::Slurm, 1, 4, Some((1, 2)), Some("77.3"))
        );
    }

    #[test]
    fn slurm_with_its_pmix() {
        let ok = with(
            SRUN,
            &[
                ("PMIX_NAMESPACE", "slurm.pmix.200505.0"),
                ("PMIX_RANK", "5"),
            ],
        );
        assert_eq!(place(&ok).source, Launcher::Slurm);
        let bad = with(
            SRUN,
            &[
                ("PMIX_NAMESPACE", "slurm.pmix.200505.0"),
                ("PMIX_RANK", "4"),
            ],
        );
        let e = err(&bad);
        assert!(
            matches!(
                e,
                BootstrapError::Disagree {
                    first: Launcher::Slurm,
                    second: Launcher::Pmix,
                    ..
                }
            ),
            "{e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains("SLURM_PROCID=5") && msg.contains("PMIX_RANK=4"),
            "{msg}"
        );
    }

    #[test]
    fn slurm_tasks_per_node_lists() {
        let cases: &[(&str, &[usize])] = &[
            ("4", &[4]),
            ("2(x3),1", &[2, 2, 2, 1]),
            ("3,2(x2)", &[3, 2, 2]),
            ("1(x4)", &[1, 1, 1, 1]),
            (" 8 ", &[8]),
        ];
        for &(list, per_node) in cases {
            let groups = parse_tasks_per_node(list).unwrap();
            assert_eq!(node_count(&groups), per_node.len(), "{list}");
            for (node, &tasks) in per_node.iter().enumerate() {
                assert_eq!(
                    tasks_on_node(&groups, node),
                    Some(tasks),
                    "{list} node {node}"
                );
                // Through detection, with SLURM_NODEID.
                let node_s = node.to_string();
                let total = per_node.iter().sum::<usize>().to_string();
                let vars = with(
                    SRUN,
                    &[
                        ("SLURM_STEP_NUM_TASKS", total.as_str()),
                        ("SLURM_STEP_TASKS_PER_NODE", list),
                        ("SLURM_NODEID", node_s.as_str()),
                        ("SLURM_LOCALID", "0"),
                        ("SLURM_PROCID", "0"),
                    ],
                );
                assert_eq!(place(&vars).local_size, Some(tasks), "{list} node {node}");
            }
            assert_eq!(tasks_on_node(&groups, per_node.len()), None, "{list}");
        }
        for bad in [
            "", "x", "2(x3", "2(3)", "2(x)", "2(x0)", "(x2)", "-1", "2,,1", "2(x3)1", "+2",
        ] {
            assert!(parse_tasks_per_node(bad).is_err(), "{bad:?}");
        }
        // A huge repeat count is counted, not expanded.
        let groups = parse_tasks_per_node("1(x1000000000000),3").unwrap();
        assert_eq!(tasks_on_node(&groups, 1_000_000_000_000), Some(3));
    }

    #[test]
    fn slurm_list_errors() {
        let e = err(&with(SRUN, &[("SLURM_STEP_TASKS_PER_NODE", "2(x3")]));
        assert!(
            e.to_string().contains("SLURM_STEP_TASKS_PER_NODE=\"2(x3\""),
            "{e}"
        );
        let e = err(&with(SRUN, &[("SLURM_NODEID", "4")]));
        assert_eq!(
            e,
            BootstrapError::SlurmNodeOutOfRange {
                node_id: 4,
                var: "SLURM_STEP_TASKS_PER_NODE",
                list: "2(x3),1".into(),
                nodes: 4
            }
        );
        // SLURM_LOCALID must fit the node's share.
        let e = err(&with(
            SRUN,
            &[
                ("SLURM_NODEID", "3"),
                ("SLURM_PROCID", "6"),
                ("SLURM_LOCALID", "1"),
            ],
        ));
        let msg = e.to_string();
        assert!(
            msg.contains("SLURM_LOCALID=1") && msg.contains("[node 3]=1"),
            "{msg}"
        );
    }

    #[test]
    fn mvapich() {
        // mpirun_rsh -np 4: rank 3, second of two on its node.
        let vars = [
            ("MV2_COMM_WORLD_RANK", "3"),
            ("MV2_COMM_WORLD_SIZE", "4"),
            ("MV2_COMM_WORLD_LOCAL_RANK", "1"),
            ("MV2_COMM_WORLD_LOCAL_SIZE", "2"),
            ("PMI_ID", "3"),
            ("MPISPAWN_ID", "1"),
            ("MPISPAWN_LOCAL_NPROCS", "2"),
            ("MPIRUN_RSH_LAUNCH", "1"),
        ];
        assert_eq!(place(&vars), p(Launcher::Mvapich, 3, 4, Some((1, 2)), None));
    }

    #[test]
    fn pmi_hydra_and_srun_pmi2() {
        // mpiexec.hydra -n 5 -ppn 3: rank 4 is the second on the second node.
        let hydra = [
            ("PMI_RANK", "4"),
            ("PMI_SIZE", "5"),
            ("PMI_FD", "7"),
            ("MPI_LOCALRANKID", "1"),
            ("MPI_LOCALNRANKS", "2"),
            ("I_MPI_HYDRA_TOPOLIB", "hwloc"),
        ];
        assert_eq!(place(&hydra), p(Launcher::Pmi, 4, 5, Some((1, 2)), None));
        // srun --mpi=pmi2 also sets PMI_*: PMI wins, and agrees with Slurm.
        let pmi2 = with(
            SRUN,
            &[
                ("PMI_RANK", "5"),
                ("PMI_SIZE", "7"),
                ("PMI_FD", "9"),
                ("PMI_JOBID", "200505.0"),
            ],
        );
        assert_eq!(place(&pmi2), p(Launcher::Pmi, 5, 7, None, Some("200505.0")));
        // Cray PALS' local names.
        let pals = [
            ("PMI_RANK", "3"),
            ("PMI_SIZE", "8"),
            ("PMI_LOCAL_RANK", "3"),
            ("PMI_LOCAL_SIZE", "4"),
        ];
        assert_eq!(place(&pals), p(Launcher::Pmi, 3, 8, Some((3, 4)), None));
        // Hydra in PMI-port mode gives PMI_ID and no size: incomplete.
        let e = err(&[
            ("PMI_ID", "1"),
            ("PMI_PORT", "node1:4000"),
            ("MPI_LOCALRANKID", "1"),
        ]);
        let msg = e.to_string();
        assert!(msg.contains("PMI_RANK, PMI_SIZE not"), "{msg}");
    }

    #[test]
    fn pmix_without_size() {
        let vars = [
            ("PMIX_RANK", "3"),
            ("PMIX_NAMESPACE", "prterun-node01-9@1"),
            (
                "PMIX_SERVER_URI41",
                "prterun-node01-9@0.0;tcp4://10.0.0.1:4000",
            ),
        ];
        let e = err(&vars);
        assert_eq!(
            e,
            BootstrapError::PmixWithoutSize {
                rank: 3,
                namespace: "prterun-node01-9@1".into()
            }
        );
        assert!(e.to_string().contains("NIIN_NPES"), "{e}");
        // NIIN_NPES gives the size.
        let with_size = with(&vars, &[("NIIN_NPES", "8")]);
        assert_eq!(
            place(&with_size),
            p(Launcher::Pmix, 3, 8, None, Some("prterun-node01-9@1"))
        );
        // PMIx inside a Slurm step, from a launcher other than Slurm: PMIx wins.
        let nested = with(SRUN, &vars);
        assert!(matches!(
            err(&nested),
            BootstrapError::PmixWithoutSize { .. }
        ));
    }

    #[test]
    fn torchrun() {
        // torchrun --nnodes=2 --nproc-per-node=4: worker 6 (node 1, local 2).
        let vars = [
            ("RANK", "6"),
            ("WORLD_SIZE", "8"),
            ("LOCAL_RANK", "2"),
            ("LOCAL_WORLD_SIZE", "4"),
            ("GROUP_RANK", "1"),
            ("ROLE_RANK", "6"),
            ("ROLE_WORLD_SIZE", "8"),
            ("MASTER_ADDR", "node01"),
            ("MASTER_PORT", "29500"),
            ("TORCHELASTIC_RUN_ID", "a3f1c2d4-5e6f"),
            ("TORCHELASTIC_RESTART_COUNT", "0"),
            ("TORCHELASTIC_MAX_RESTARTS", "0"),
        ];
        assert_eq!(
            place(&vars),
            p(
                Launcher::Torchrun,
                6,
                8,
                Some((2, 4)),
                Some("a3f1c2d4-5e6f")
            )
        );
    }

    #[test]
    fn precedence() {
        // srun -n1 niinrun -n4 prog: niinrun wins over the outer step.
        let niin_in_srun = with(
            SRUN,
            &[
                ("NIIN_PE", "3"),
                ("NIIN_NPES", "4"),
                ("NIIN_JOB_ID", "j"),
                ("NIIN_LAUNCHER", "niinrun"),
            ],
        );
        assert_eq!(place(&niin_in_srun).source, Launcher::Niinrun);
        // mpirun -np 16 under salloc -N4: mpirun started its daemons with srun, so
        // SLURM_PROCID is the node's index; Open MPI's variables win.
        let mpirun_in_salloc = with(
            SRUN,
            &[
                ("SLURM_PROCID", "2"),
                ("SLURM_NTASKS", "4"),
                ("SLURM_STEP_NUM_TASKS", "4"),
                ("OMPI_COMM_WORLD_RANK", "9"),
                ("OMPI_COMM_WORLD_SIZE", "16"),
                ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
                ("OMPI_COMM_WORLD_LOCAL_SIZE", "4"),
                ("OMPI_MCA_ess_base_jobid", "1234"),
            ],
        );
        assert_eq!(
            place(&mpirun_in_salloc),
            p(Launcher::OpenMpi, 9, 16, Some((1, 4)), Some("1234"))
        );
        // Hydra under Slurm (its proxies started by srun): PMI wins.
        let hydra_in_slurm = with(
            SRUN,
            &[("PMI_RANK", "0"), ("PMI_SIZE", "28"), ("PMI_FD", "6")],
        );
        assert_eq!(place(&hydra_in_slurm), p(Launcher::Pmi, 0, 28, None, None));
        // torchrun started per node by srun --mpi=pmix: torchrun wins over both.
        let torch_in_srun = with(
            SRUN,
            &[
                ("PMIX_NAMESPACE", "slurm.pmix.200505.0"),
                ("PMIX_RANK", "5"),
                ("RANK", "21"),
                ("WORLD_SIZE", "28"),
                ("LOCAL_RANK", "1"),
                ("LOCAL_WORLD_SIZE", "4"),
            ],
        );
        assert_eq!(
            place(&torch_in_srun),
            p(Launcher::Torchrun, 21, 28, Some((1, 4)), None)
        );
        // A launcher without a job id takes NIIN_JOB_ID's.
        let named = [
            ("PMI_RANK", "0"),
            ("PMI_SIZE", "2"),
            ("NIIN_JOB_ID", "run-42"),
        ];
        assert_eq!(place(&named).job_id.as_deref(), Some("run-42"));
        // One with its own keeps it.
        let mut own = SRUN.to_vec();
        own.push(("NIIN_JOB_ID", "run-42"));
        assert_eq!(place(&own).job_id.as_deref(), Some("200505.0"));
    }

    #[test]
    fn disagreement_is_an_error() {
        let vars = [
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("PMIX_NAMESPACE", "prterun-n-1@1"),
            ("PMIX_RANK", "2"),
        ];
        let e = err(&vars);
        assert_eq!(
            e,
            BootstrapError::Disagree {
                first: Launcher::OpenMpi,
                first_says: "OMPI_COMM_WORLD_RANK=1, OMPI_COMM_WORLD_SIZE=4".into(),
                second: Launcher::Pmix,
                second_says: "PMIX_RANK=2".into(),
            }
        );
        // NIIN_NPES must agree with the launcher's size.
        let e = err(&[("RANK", "0"), ("WORLD_SIZE", "4"), ("NIIN_NPES", "8")]);
        let msg = e.to_string();
        assert!(
            msg.contains("WORLD_SIZE=4") && msg.contains("NIIN_NPES=8"),
            "{msg}"
        );
    }

    #[test]
    fn malformed_values() {
        let cases: &[(Vars<'_>, &str, &str)] = &[
            (
                &[("NIIN_PE", "x"), ("NIIN_NPES", "4"), ("NIIN_JOB_ID", "j")],
                "NIIN_PE",
                "x",
            ),
            (
                &[("NIIN_PE", "0"), ("NIIN_NPES", "-4"), ("NIIN_JOB_ID", "j")],
                "NIIN_NPES",
                "-4",
            ),
            (
                &[("NIIN_PE", "0"), ("NIIN_NPES", "4"), ("NIIN_JOB_ID", "a/b")],
                "NIIN_JOB_ID",
                "a/b",
            ),
            (
                &[
                    ("NIIN_PE", "0"),
                    ("NIIN_NPES", "4"),
                    ("NIIN_JOB_ID", "j"),
                    ("NIIN_LOCAL_PE", "1.5"),
                ],
                "NIIN_LOCAL_PE",
                "1.5",
            ),
            (
                &[("RANK", "99999999999999999999999"), ("WORLD_SIZE", "4")],
                "RANK",
                "99999999999999999999999",
            ),
            (
                &[
                    ("RANK", "0"),
                    ("WORLD_SIZE", "4"),
                    ("LOCAL_WORLD_SIZE", "four"),
                ],
                "LOCAL_WORLD_SIZE",
                "four",
            ),
            (
                &[
                    ("OMPI_COMM_WORLD_RANK", "+1"),
                    ("OMPI_COMM_WORLD_SIZE", "4"),
                ],
                "OMPI_COMM_WORLD_RANK",
                "+1",
            ),
            (
                &[("MV2_COMM_WORLD_RANK", "0"), ("MV2_COMM_WORLD_SIZE", "0x4")],
                "MV2_COMM_WORLD_SIZE",
                "0x4",
            ),
            (
                &[
                    ("PMI_RANK", "0"),
                    ("PMI_SIZE", "2"),
                    ("MPI_LOCALRANKID", "a"),
                ],
                "MPI_LOCALRANKID",
                "a",
            ),
            (
                &[("PMIX_RANK", "r"), ("PMIX_NAMESPACE", "ns")],
                "PMIX_RANK",
                "r",
            ),
            (
                &[
                    ("SLURM_STEP_ID", "0"),
                    ("SLURM_PROCID", "0"),
                    ("SLURM_NTASKS", "2 tasks"),
                ],
                "SLURM_NTASKS",
                "2 tasks",
            ),
            (
                &[
                    ("SLURM_STEP_ID", "s"),
                    ("SLURM_PROCID", "0"),
                    ("SLURM_NTASKS", "2"),
                ],
                "SLURM_STEP_ID",
                "s",
            ),
            (
                &[
                    ("SLURM_STEP_ID", "0"),
                    ("SLURM_PROCID", "0"),
                    ("SLURM_NTASKS", "2"),
                    ("SLURM_NODEID", "n1"),
                ],
                "SLURM_NODEID",
                "n1",
            ),
            (&[("NIIN_NPES", "many")], "NIIN_NPES", "many"),
        ];
        for &(vars, var, value) in cases {
            let e = err(vars);
            assert!(
                matches!(&e, BootstrapError::Malformed { var: v, value: x, .. } if v == var && x == value),
                "{vars:?}: {e}"
            );
            assert!(e.to_string().contains(&format!("{var}={value:?}")), "{e}");
        }
    }

    #[test]
    fn out_of_range_values() {
        let e = err(&[("NIIN_PE", "4"), ("NIIN_NPES", "4"), ("NIIN_JOB_ID", "j")]);
        assert_eq!(
            e,
            BootstrapError::RankOutOfRange {
                launcher: Launcher::Niinrun,
                rank_var: "NIIN_PE".into(),
                rank: 4,
                size_var: "NIIN_NPES".into(),
                size: 4
            }
        );
        assert!(
            e.to_string().contains("NIIN_PE=4 does not fit NIIN_NPES=4"),
            "{e}"
        );
        let e = err(&[("RANK", "0"), ("WORLD_SIZE", "0")]);
        assert_eq!(
            e,
            BootstrapError::ZeroSize {
                launcher: Launcher::Torchrun,
                var: "WORLD_SIZE".into()
            }
        );
        let e = err(&[
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "2"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
        ]);
        assert!(
            e.to_string()
                .contains("OMPI_COMM_WORLD_LOCAL_RANK=2 does not fit OMPI_COMM_WORLD_LOCAL_SIZE=2"),
            "{e}"
        );
        let e = err(&[
            ("MV2_COMM_WORLD_RANK", "0"),
            ("MV2_COMM_WORLD_SIZE", "2"),
            ("MV2_COMM_WORLD_LOCAL_SIZE", "0"),
        ]);
        assert!(e.to_string().contains("MV2_COMM_WORLD_LOCAL_SIZE=0"), "{e}");
        let e = err(&[
            ("PMI_RANK", "0"),
            ("PMI_SIZE", "2"),
            ("MPI_LOCALNRANKS", "3"),
        ]);
        assert!(
            matches!(
                e,
                BootstrapError::LocalSizeTooLarge {
                    local_size: 3,
                    size: 2,
                    ..
                }
            ),
            "{e}"
        );
        let e = err(&[
            ("PMI_RANK", "0"),
            ("PMI_SIZE", "2"),
            ("MPI_LOCALRANKID", "2"),
        ]);
        assert!(
            e.to_string()
                .contains("MPI_LOCALRANKID=2 does not fit PMI_SIZE=2"),
            "{e}"
        );
        let e = err(&with(SRUN, &[("SLURM_PROCID", "7")]));
        assert!(
            e.to_string()
                .contains("SLURM_PROCID=7 does not fit SLURM_STEP_NUM_TASKS=7"),
            "{e}"
        );
        let e = err(&[
            ("PMIX_RANK", "8"),
            ("PMIX_NAMESPACE", "ns"),
            ("NIIN_NPES", "8"),
        ]);
        assert!(
            e.to_string()
                .contains("PMIX_RANK=8 does not fit NIIN_NPES=8"),
            "{e}"
        );
    }

    #[test]
    fn partial_sets() {
        let e = err(&[("RANK", "1")]);
        assert_eq!(
            e,
            BootstrapError::Incomplete {
                launcher: Launcher::Torchrun,
                set: vec!["RANK=\"1\"".into()],
                missing: vec!["WORLD_SIZE".into()],
            }
        );
        assert!(e.to_string().contains("WORLD_SIZE not"), "{e}");
        let e = err(&[("NIIN_PE", "0")]);
        assert!(
            matches!(&e, BootstrapError::Incomplete { missing, .. } if missing == &["NIIN_NPES", "NIIN_JOB_ID"]),
            "{e}"
        );
        let e = err(&[("NIIN_LAUNCHER", "niinrun"), ("NIIN_NPES", "2")]);
        assert!(
            matches!(&e, BootstrapError::Incomplete { missing, .. } if missing == &["NIIN_PE", "NIIN_JOB_ID"]),
            "{e}"
        );
        let e = err(&[
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
        ]);
        assert!(
            matches!(&e, BootstrapError::Incomplete { launcher: Launcher::OpenMpi, missing, .. } if missing == &["OMPI_COMM_WORLD_RANK"]),
            "{e}"
        );
        let e = err(&[("MV2_COMM_WORLD_RANK", "0")]);
        assert!(e.to_string().contains("MV2_COMM_WORLD_SIZE not"), "{e}");
        let e = err(&[("PMI_SIZE", "4")]);
        assert!(e.to_string().contains("PMI_RANK not"), "{e}");
        let e = err(&[("PMIX_NAMESPACE", "ns")]);
        assert!(e.to_string().contains("PMIX_RANK not"), "{e}");
        let e = err(&[("SLURM_STEP_ID", "0"), ("SLURM_JOB_ID", "5")]);
        assert!(
            e.to_string()
                .contains("SLURM_PROCID, SLURM_STEP_NUM_TASKS or SLURM_NTASKS or SLURM_NPROCS not"),
            "{e}"
        );
        let e = err(&[("NIIN_NPES", "4")]);
        assert_eq!(e, BootstrapError::SizeWithoutRank { size: 4 });
    }

    #[test]
    fn one_node_jobs_without_a_job_id_are_named_after_the_launchers_process() {
        // mpiexec (Hydra) -n 2 on one host gives no job id: the ranks' common parent (the
        // proxy) names the job.
        let hydra = [
            ("PMI_RANK", "1"),
            ("PMI_SIZE", "2"),
            ("PMI_FD", "7"),
            ("MPI_LOCALRANKID", "1"),
            ("MPI_LOCALNRANKS", "2"),
        ];
        let ppid = std::os::unix::process::parent_id();
        assert_eq!(
            place(&hydra).job_id,
            Some(format!("ppid-{ppid}")),
            "{:?}",
            place(&hydra)
        );
        assert_eq!(parent_job_id(4242), "ppid-4242");
        // NIIN_JOB_ID still wins; several nodes get no made-up id.
        let named = with(&hydra, &[("NIIN_JOB_ID", "mine")]);
        assert_eq!(place(&named).job_id.as_deref(), Some("mine"));
        let two_nodes = [
            ("PMI_RANK", "4"),
            ("PMI_SIZE", "5"),
            ("PMI_FD", "7"),
            ("MPI_LOCALRANKID", "1"),
            ("MPI_LOCALNRANKS", "2"),
        ];
        assert_eq!(place(&two_nodes).job_id, None);
    }

    #[test]
    fn torchrun_without_a_run_id_is_named_after_its_store() {
        let base = [
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("LOCAL_RANK", "1"),
            ("LOCAL_WORLD_SIZE", "2"),
            ("MASTER_ADDR", "127.0.0.1"),
            ("MASTER_PORT", "29500"),
        ];
        // torchrun's default run id, "none", is every job's.
        let default = with(&base, &[("TORCHELASTIC_RUN_ID", "none")]);
        assert_eq!(
            place(&default).job_id.as_deref(),
            Some("torchrun-127.0.0.1-29500")
        );
        assert_eq!(
            place(&base).job_id.as_deref(),
            Some("torchrun-127.0.0.1-29500")
        );
        let given = with(&base, &[("TORCHELASTIC_RUN_ID", "job-7")]);
        assert_eq!(place(&given).job_id.as_deref(), Some("job-7"));
    }
}
