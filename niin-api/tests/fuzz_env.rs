//! Fuzzing of what niin-rs reads from the environment, on stable Rust: proptest with a
//! fixed seed and case count, so every CI run tries the same inputs. Everything goes through
//! the lookup-closure entry points, never through the process environment (tests run in
//! parallel).
//!
//! - [`WorldConfig::from_lookup`]: `NIIN_TRANSPORT`, `NVSHMEM_SYMMETRIC_SIZE`,
//!   `NIIN_TIMEOUT`, `NIIN_CHECK_SYMMETRY`, `NIIN_MOCK_NODE_SIZE`,
//!   `NIIN_CHECK_COLLECTIVES` with values of every shape (huge numbers, signs, suffixes,
//!   fractions, unicode, whitespace).
//! - [`bootstrap::detect`]: the variables of every launcher it reads, mixed.
//! - [`Rendezvous`]'s parser (`NIIN_RENDEZVOUS`) and [`bootstrap::rendezvous_from_env`].
//!
//! The property: no panic; either a value that satisfies the reader's contract, or an error
//! of one line that names the variable and quotes its value.

use std::collections::HashMap;
use std::time::Duration;

use niin_api::bootstrap::{self, Launcher, Placement, Rendezvous};
use niin_api::{TransportKind, WorldConfig};
use proptest::prelude::*;

#[path = "support/env.rs"]
mod env_support;
#[path = "support/fuzz.rs"]
mod fuzz_support;
use env_support::CONFIG_VARS;
use fuzz_support::fuzz;

/// This file's inputs (support/fuzz.rs).
const SEED: u64 = 0x006e_6969_6e65_6e76;

/// A value of a variable: near-valid words and numbers of every reader, and anything.
fn value() -> impl Strategy<Value = String> {
    let words = prop::sample::select(vec![
        "",
        " ",
        "0",
        "1",
        "2",
        "7",
        "-1",
        "+1",
        "-0",
        "mock",
        " nccl ",
        "auto",
        "MOCK",
        "true",
        "False",
        "yes",
        "off",
        "1K",
        "64M",
        "1.5G",
        "2T",
        "16T",
        "0.1K",
        "1KiB",
        "1 kb",
        "1e3",
        "1e-300",
        "0.0000000001",
        "0.000000001",
        "999999999",
        "1000000000",
        "inf",
        "NaN",
        "0x10",
        "1_000",
        "18446744073709551615",
        "18446744073709551616",
        "17179869184T",
        "99999999999999999999999999999999999999999",
        "\u{ff11}\u{ff12}",
        "\u{663}",
        "4\n",
        "1\u{0}",
        "2(x3),1",
        "4(x0)",
        "(x2)",
        "1,,2",
    ]);
    prop_oneof![
        4 => words.prop_map(str::to_owned),
        3 => "[-+ .0-9eE]{0,8}[kKmMgGtTbBiI]{0,3}",
        2 => "[0-9]{1,25}(\\.[0-9]{0,25})?",
        1 => "[0-9(x),]{0,12}",
        2 => any::<String>(),
    ]
}

/// The error message `msg` is one line and names `var` with the value as `{value:?}`
/// writes it.
fn names(msg: &str, var: &str, value: &str) -> bool {
    msg.contains(&format!("{var}={value:?}"))
}

fn one_line(msg: &str) -> Result<(), TestCaseError> {
    prop_assert!(!msg.is_empty(), "empty message");
    prop_assert!(!msg.contains('\n') && !msg.contains('\r'), "{msg:?}");
    Ok(())
}

/// Checks one `from_lookup` of the variables `set` (the others unset).
fn check_config(set: &HashMap<&'static str, String>) -> Result<(), TestCaseError> {
    match WorldConfig::from_lookup(|k| set.get(k).cloned()) {
        Ok(c) => {
            prop_assert!(
                c.validate().is_ok(),
                "{set:?} gave {c:?}, which validate refuses"
            );
            prop_assert!(c.heap_size >= niin_api::min_heap_size(), "{set:?}: {c:?}");
            prop_assert!(c.timeout > Duration::ZERO, "{set:?}: {c:?}");
            prop_assert_ne!(c.mock_node_size, Some(0));
            if let Some(t) = set.get("NIIN_TRANSPORT") {
                let want = match t.trim() {
                    "mock" => TransportKind::Mock,
                    "nccl" => TransportKind::Nccl,
                    "auto" => TransportKind::Auto,
                    other => return Err(TestCaseError::fail(format!("accepted {other:?}"))),
                };
                prop_assert_eq!(c.transport, want);
            }
            if let Some(s) = set.get("NVSHMEM_SYMMETRIC_SIZE") {
                prop_assert_eq!(Ok(c.heap_size), niin_heap::parse_symmetric_size(s));
            }
            if let Some(n) = set.get("NIIN_MOCK_NODE_SIZE") {
                prop_assert_eq!(c.mock_node_size, n.trim().parse().ok());
            }
        }
        Err(e) => {
            let msg = e.to_string();
            one_line(&msg)?;
            prop_assert!(
                set.iter().any(|(var, value)| names(&msg, var, value)),
                "{msg:?} names none of {set:?}"
            );
        }
    }
    Ok(())
}

#[test]
fn world_config_one_variable_at_a_time() {
    let var = prop::sample::select(CONFIG_VARS.to_vec());
    fuzz(SEED, 3000, (var, value()), |(var, value)| {
        check_config(&HashMap::from([(var, value)]))
    });
}

#[test]
fn world_config_all_variables_at_once() {
    let all = prop::collection::vec(prop::option::of(value()), CONFIG_VARS.len());
    fuzz(SEED, 1500, all, |values| {
        let set = CONFIG_VARS
            .iter()
            .zip(values)
            .filter_map(|(var, v)| v.map(|v| (*var, v)))
            .collect();
        check_config(&set)
    });
}

/// Regression (found by the fuzzing above): a timeout so small that it rounds to zero
/// nanoseconds was accepted by the variable's parser, then refused by `validate` with a
/// message about `WorldConfig::timeout 0ns` that quoted neither the value nor its variable.
#[test]
fn a_timeout_below_a_nanosecond_is_refused_by_name() {
    for v in ["0.0000000001", "1e-10", "1e-300"] {
        let msg = WorldConfig::from_lookup(|k| (k == "NIIN_TIMEOUT").then(|| v.to_owned()))
            .unwrap_err()
            .to_string();
        assert!(names(&msg, "NIIN_TIMEOUT", v), "{msg}");
    }
    let ns = WorldConfig::from_lookup(|k| (k == "NIIN_TIMEOUT").then(|| "0.000000001".into()));
    assert_eq!(ns.unwrap().timeout, Duration::from_nanos(1));
}

/// Regression (found by the fuzzing above): a symmetric size too small for niin-rs's system
/// area was refused with its byte count only, not the value that was written.
#[test]
fn a_heap_too_small_names_the_value_written() {
    let msg = WorldConfig::from_lookup(|k| (k == "NVSHMEM_SYMMETRIC_SIZE").then(|| "0.5K".into()))
        .unwrap_err()
        .to_string();
    assert!(names(&msg, "NVSHMEM_SYMMETRIC_SIZE", "0.5K"), "{msg}");
    assert!(msg.contains("512 bytes"), "{msg}");
}

/// Regression (found by the fuzzing above): a bad `NIIN_TRANSPORT` was quoted trimmed, so
/// a value of spaces read `NIIN_TRANSPORT=""`, as if it were empty.
#[test]
fn a_bad_transport_is_quoted_as_written() {
    for v in [" ", " gpu ", "mo ck\n"] {
        let msg = WorldConfig::from_lookup(|k| (k == "NIIN_TRANSPORT").then(|| v.to_owned()))
            .unwrap_err()
            .to_string();
        assert!(names(&msg, "NIIN_TRANSPORT", v), "{msg}");
    }
}

/// Every variable `detect` reads, grouped by launcher (the first of each group is its rank).
const LAUNCHERS: [(Launcher, &[&str]); 7] = [
    (
        Launcher::Niinrun,
        &[
            "NIIN_PE",
            "NIIN_NPES",
            "NIIN_LOCAL_PE",
            "NIIN_LOCAL_NPES",
            "NIIN_JOB_ID",
            "NIIN_LAUNCHER",
        ],
    ),
    (
        Launcher::Torchrun,
        &[
            "RANK",
            "WORLD_SIZE",
            "LOCAL_RANK",
            "LOCAL_WORLD_SIZE",
            "TORCHELASTIC_RUN_ID",
            "MASTER_ADDR",
            "MASTER_PORT",
        ],
    ),
    (
        Launcher::OpenMpi,
        &[
            "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_SIZE",
            "OMPI_COMM_WORLD_LOCAL_RANK",
            "OMPI_COMM_WORLD_LOCAL_SIZE",
            "OMPI_MCA_ess_base_jobid",
            "OMPI_MCA_orte_ess_jobid",
        ],
    ),
    (
        Launcher::Mvapich,
        &[
            "MV2_COMM_WORLD_RANK",
            "MV2_COMM_WORLD_SIZE",
            "MV2_COMM_WORLD_LOCAL_RANK",
            "MV2_COMM_WORLD_LOCAL_SIZE",
        ],
    ),
    (
        Launcher::Pmi,
        &[
            "PMI_RANK",
            "PMI_SIZE",
            "PMI_ID",
            "PMI_JOBID",
            "MPI_LOCALRANKID",
            "PMI_LOCAL_RANK",
            "MPI_LOCALNRANKS",
            "PMI_LOCAL_SIZE",
        ],
    ),
    (Launcher::Pmix, &["PMIX_RANK", "PMIX_NAMESPACE"]),
    (
        Launcher::Slurm,
        &[
            "SLURM_PROCID",
            "SLURM_STEP_NUM_TASKS",
            "SLURM_NTASKS",
            "SLURM_NPROCS",
            "SLURM_LOCALID",
            "SLURM_NODEID",
            "SLURM_STEP_TASKS_PER_NODE",
            "SLURM_TASKS_PER_NODE",
            "SLURM_NTASKS_PER_NODE",
            "SLURM_JOB_ID",
            "SLURM_JOBID",
            "SLURM_STEP_ID",
            "SLURM_STEPID",
        ],
    ),
];

/// A value of a launcher variable: mostly small numbers, so that consistent sets occur.
fn launcher_value() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (0usize..6).prop_map(|n| n.to_string()),
        1 => prop::sample::select(vec!["niinrun", "job-1", "slurm.pmix.7.0", "none", "x/y", ".."])
            .prop_map(str::to_owned),
        3 => value(),
    ]
}

/// The variables of a launch that `detect` accepts: launcher `i`'s rank and size (and what
/// else it requires), `rank < size`.
fn consistent(i: usize, rank: usize, size: usize) -> Vec<(&'static str, String)> {
    let vars = LAUNCHERS[i].1;
    let mut env = vec![(vars[0], rank.to_string())];
    match LAUNCHERS[i].0 {
        Launcher::Pmix => env.extend([
            ("PMIX_NAMESPACE", "ns".to_owned()),
            ("NIIN_NPES", size.to_string()),
        ]),
        Launcher::Slurm => env.extend([
            ("SLURM_NTASKS", size.to_string()),
            ("SLURM_STEP_ID", "0".to_owned()),
        ]),
        Launcher::Niinrun => env.extend([
            ("NIIN_NPES", size.to_string()),
            ("NIIN_JOB_ID", "job-1".to_owned()),
        ]),
        _ => env.push((vars[1], size.to_string())),
    }
    env
}

/// An environment: a launch `detect` accepts or one launcher's variables (some of them),
/// perhaps a second launcher's, and a few of any; later pairs override earlier ones.
fn launcher_env() -> impl Strategy<Value = Vec<(&'static str, String)>> {
    let family = |i: usize| {
        let vars = LAUNCHERS[i].1;
        prop::collection::vec(
            (prop::sample::select(vars.to_vec()), launcher_value()),
            0..7,
        )
    };
    let base = prop_oneof![
        (0..LAUNCHERS.len(), 1usize..6)
            .prop_flat_map(|(i, size)| (Just(i), 0..size, Just(size)))
            .prop_map(|(i, rank, size)| consistent(i, rank, size)),
        (0..LAUNCHERS.len()).prop_flat_map(family),
    ];
    let all: Vec<&'static str> = LAUNCHERS
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .collect();
    (
        base,
        (0..LAUNCHERS.len()).prop_flat_map(family),
        prop::collection::vec((prop::sample::select(all), launcher_value()), 0..3),
        0..3u8,
    )
        .prop_map(|(a, b, c, extra)| {
            let mut env = a;
            if extra == 1 {
                env.extend(b);
            }
            if extra == 2 {
                env.extend(c);
            }
            env
        })
}

/// The launcher's rank variable, which must hold the detected rank.
fn rank_var(source: Launcher) -> &'static str {
    LAUNCHERS
        .iter()
        .find(|(l, _)| *l == source)
        .map(|(_, vars)| vars[0])
        .unwrap_or("")
}

fn check_placement(env: &HashMap<&str, String>, p: &Placement) -> Result<(), TestCaseError> {
    prop_assert!(p.size >= 1 && p.rank < p.size, "{env:?}: {p:?}");
    if let Some(l) = p.local_size {
        prop_assert!(l >= 1 && l <= p.size, "{env:?}: {p:?}");
        if let Some(r) = p.local_rank {
            prop_assert!(r < l, "{env:?}: {p:?}");
        }
    }
    if let Some(r) = p.local_rank {
        prop_assert!(r < p.size, "{env:?}: {p:?}");
    }
    let var = rank_var(p.source);
    let rank = env.get(var).and_then(|v| v.trim().parse::<usize>().ok());
    prop_assert_eq!(
        rank,
        Some(p.rank),
        "{:?}: {} does not hold the rank",
        env,
        var
    );
    Ok(())
}

#[test]
fn launcher_detection() {
    let placed = std::cell::Cell::new(0u32);
    fuzz(SEED, 4000, launcher_env(), |pairs| {
        let env: HashMap<&str, String> = pairs.into_iter().collect();
        match bootstrap::detect(|k| env.get(k).cloned()) {
            Ok(Some(p)) => {
                placed.set(placed.get() + 1);
                check_placement(&env, &p)?;
            }
            Ok(None) => {}
            Err(e) => {
                let msg = e.to_string();
                one_line(&msg)?;
                let set: Vec<&&str> = env.keys().filter(|k| !env[**k].trim().is_empty()).collect();
                prop_assert!(
                    set.iter().any(|var| msg.contains(**var)),
                    "{msg:?} names none of the variables set: {env:?}"
                );
                if let bootstrap::BootstrapError::Malformed { var, value, .. } = &e {
                    prop_assert_eq!(env.get(var.as_str()), Some(value), "{}", msg);
                    prop_assert!(names(&msg, var, value), "{msg:?}");
                }
            }
        }
        Ok(())
    });
    // The generator reaches valid placements too, not only errors.
    assert!(placed.get() > 100, "only {} placements", placed.get());
}

/// A `NIIN_RENDEZVOUS` value. Host names are IP literals only: a name would be resolved
/// through DNS, which a test must not wait for.
fn rendezvous_value() -> impl Strategy<Value = String> {
    let host = prop::sample::select(vec![
        "127.0.0.1",
        "10.1.2.3",
        "0.0.0.0",
        "[::1]",
        "[fe80::1]",
        "::1",
    ]);
    let port = prop_oneof![(0u32..70000).prop_map(|p| p.to_string()), "[-+0-9a-z]{0,7}",];
    prop_oneof![
        (host, any::<bool>(), port)
            .prop_map(|(h, colon, p)| { format!("tcp:{h}{}{p}", if colon { ":" } else { "" }) }),
        any::<String>().prop_map(|s| format!("dir:{s}")),
        prop::sample::select(vec!["pmix", " pmix ", "PMIX", "dir:", "tcp:", "dir", ""])
            .prop_map(str::to_owned),
        any::<String>().prop_filter("no name lookups", |s| !s.contains("tcp:")),
    ]
}

#[test]
fn rendezvous_values() {
    fuzz(SEED, 3000, rendezvous_value(), |value| {
        match value.parse::<Rendezvous>() {
            Ok(Rendezvous::Dir(dir)) => {
                let rest = value.trim().strip_prefix("dir:");
                prop_assert_eq!(rest.map(std::path::PathBuf::from), Some(dir));
            }
            Ok(Rendezvous::Tcp(addr)) => {
                prop_assert!(value.trim().starts_with("tcp:"), "{value:?}");
                prop_assert_ne!(addr.port(), 0);
            }
            Ok(Rendezvous::Pmix) => prop_assert_eq!(value.trim(), "pmix"),
            Err(e) => {
                let msg = e.to_string();
                one_line(&msg)?;
                prop_assert!(names(&msg, "NIIN_RENDEZVOUS", &value), "{msg:?}");
            }
        }
        Ok(())
    });
}

#[test]
fn rendezvous_from_torchrun_variables() {
    let place = Placement {
        rank: 1,
        size: 4,
        local_rank: Some(1),
        local_size: Some(2),
        job_id: Some("j".into()),
        source: Launcher::Torchrun,
    };
    let addr = prop::sample::select(vec!["127.0.0.1", "::1", " 10.0.0.7 ", "[::1]"]);
    fuzz(SEED, 1000, (addr, value()), |(addr, port)| {
        let env = HashMap::from([
            ("MASTER_ADDR", addr.to_owned()),
            ("MASTER_PORT", port.clone()),
        ]);
        match bootstrap::rendezvous_from_env(|k| env.get(k).cloned(), &place) {
            Ok(Rendezvous::Tcp(a)) => {
                let p: u16 = port.trim().parse().unwrap_or(0);
                prop_assert_eq!(u32::from(a.port()), u32::from(p) + 1, "{:?}", port);
            }
            Ok(other) => {
                prop_assert!(port.trim().is_empty(), "{port:?} gave {other:?}");
            }
            Err(e) => {
                let msg = e.to_string();
                one_line(&msg)?;
                prop_assert!(
                    names(&msg, "MASTER_PORT", &port) || port.trim().is_empty(),
                    "{msg:?}"
                );
            }
        }
        Ok(())
    });
}
