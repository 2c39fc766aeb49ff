//! The host-API conformance checks as real multi-process jobs on the mock transport: one
//! process per PE, started by niinrun's launcher (the library the `niinrun` binary is a
//! thin layer over), and once through the `niinrun` binary itself.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use niin_api::launch::{self, CleanupHook, JobEnd, LaunchSpec, OutputMode, PeStatus};
use niin_api::{World, WorldConfig};

const WORKER: &str = env!("CARGO_BIN_EXE_check_worker");

fn spec(n_pes: usize, args: &[&str]) -> LaunchSpec {
    let mut spec = LaunchSpec::new(n_pes, WORKER);
    spec.args = args.iter().map(Into::into).collect();
    spec.timeout = Some(Duration::from_secs(120));
    spec.output = OutputMode::Capture;
    spec.extra_env = vec![
        ("NIIN_TRANSPORT".into(), "mock".into()),
        ("NIIN_TIMEOUT".into(), "60".into()),
        // Small heaps: the checks need little, and the job must fit a container's
        // 64 MiB /dev/shm (the mock refuses a job that would not).
        ("NVSHMEM_SYMMETRIC_SIZE".into(), "4M".into()),
    ];
    spec.cleanup.push(CleanupHook::mock_transport());
    spec
}

fn run_ok(n_pes: usize, args: &[&str]) -> String {
    let outcome = launch::run(&spec(n_pes, args)).expect("the launcher starts the job");
    let mut text = String::new();
    for (pe, r) in outcome.pes.iter().enumerate() {
        text += &format!(
            "--- PE {pe}: {}\n{}{}",
            r.status,
            String::from_utf8_lossy(&r.stdout),
            String::from_utf8_lossy(&r.stderr)
        );
    }
    assert!(
        outcome.success(),
        "job failed: {:?}\n{text}",
        outcome.message()
    );
    // No PE left the job's shared-memory file behind.
    for path in launch::mock_transport_paths(&outcome.job.job_id) {
        assert!(!path.exists(), "{} was left behind", path.display());
    }
    text
}

#[test]
fn every_check_passes_with_four_processes() {
    let out = run_ok(4, &[]);
    for (name, _) in niin_tests::checks::CHECKS {
        assert!(
            out.contains(&format!("{name} ok")),
            "{name} did not report ok:\n{out}"
        );
    }
}

#[test]
fn checks_pass_with_two_and_three_processes() {
    run_ok(
        2,
        &[
            "rma_every_type",
            "atomic_contention",
            "barrier_repeated",
            "stream_orders_put_after_wait",
        ],
    );
    run_ok(
        3,
        &[
            "all_to_all_put",
            "teams_split_translate_barrier",
            "heap_symmetric",
        ],
    );
}

#[test]
fn a_failing_pe_fails_the_job_and_the_others_are_stopped() {
    // An unknown check name makes every PE exit 2 before joining the world.
    let outcome = launch::run(&spec(2, &["no_such_check"])).unwrap();
    assert_eq!(outcome.exit_code(), 2);
    // The first PE to fail is reported; the launcher may stop the other before it writes.
    let pe = outcome.failed_pe().expect("a PE failed");
    let stderr = String::from_utf8_lossy(&outcome.pes[pe].stderr);
    assert!(stderr.contains("no check named"), "PE {pe}: {stderr}");
}

/// The `niinrun` binary, built by cargo beside this test's executable; built on demand
/// when this package's tests run alone.
fn niinrun() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|d| d.parent()).unwrap().to_path_buf();
    let path = dir.join("niinrun");
    if !path.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "niin-api", "--bin", "niinrun"])
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building niinrun failed");
    }
    assert!(path.exists(), "niinrun not found at {}", path.display());
    path
}

#[test]
fn niinrun_binary_runs_the_checks_with_four_pes() {
    let out = Command::new(niinrun())
        .args([
            "-n",
            "4",
            "--timeout",
            "120",
            WORKER,
            "ring_put",
            "signal_ping_pong",
            "atomic_contention",
        ])
        .env("NIIN_TRANSPORT", "mock")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "niinrun failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in ["ring_put", "signal_ping_pong", "atomic_contention"] {
        assert!(
            stdout.contains(&format!("[pe 0] {name} ok")),
            "{name}:\n{stdout}"
        );
    }
}

/// Tells this test binary, re-executed by the launcher as a PE, what to do.
const ROLE_VAR: &str = "NIIN_TESTS_PE_ROLE";

/// A PE's part, when [`ROLE_VAR`] is set (otherwise this test does nothing): joins the
/// world, then `kill-pe-1`: PE 1 kills itself with SIGKILL, the others go into a barrier
/// and exit 5 with its error on stderr.
#[test]
fn pe_entry() {
    let Ok(role) = std::env::var(ROLE_VAR) else {
        return;
    };
    let w = WorldConfig::from_env()
        .and_then(|c| World::init_with_config(&c))
        .unwrap_or_else(|e| {
            eprintln!("pe_entry: init: {e}");
            std::process::exit(3)
        });
    match role.as_str() {
        "kill-pe-1" if w.my_pe() == 1 => {
            let me = std::process::id().to_string();
            let _ = Command::new("kill").args(["-9", &me]).status();
            std::thread::sleep(Duration::from_secs(60));
        }
        "kill-pe-1" => {
            if let Err(e) = w.barrier_all() {
                eprintln!("survivor: {e}");
                std::process::exit(5);
            }
        }
        other => panic!("unknown role {other:?}"),
    }
}

/// A job of `n_pes` processes of this test binary playing `role` (see [`pe_entry`]).
fn role_spec(n_pes: usize, role: &str) -> LaunchSpec {
    let mut spec = spec(n_pes, &["pe_entry", "--exact", "--nocapture", "-q"]);
    spec.program = std::env::current_exe().unwrap();
    spec.extra_env.push((ROLE_VAR.into(), role.into()));
    spec
}

#[test]
fn the_pe_that_died_is_blamed_and_the_survivors_say_how_it_died() {
    let outcome = launch::run(&role_spec(3, "kill-pe-1")).unwrap();
    let stderr = |pe: usize| String::from_utf8_lossy(&outcome.pes[pe].stderr).into_owned();
    assert_eq!(
        outcome.end,
        JobEnd::PeFailed {
            pe: 1,
            status: PeStatus::Signaled {
                signal: 9,
                core_dumped: false
            }
        },
        "PE 0: {}\nPE 2: {}",
        stderr(0),
        stderr(2)
    );
    assert_eq!(outcome.exit_code(), 137);
    for pe in [0, 2] {
        assert_eq!(
            outcome.pes[pe].status,
            PeStatus::Exited(5),
            "{}",
            stderr(pe)
        );
        assert!(
            stderr(pe).contains(&format!(
                "survivor: PE {pe}: PE 1 died (killed by signal 9 (SIGKILL)); barrier cannot \
                 complete"
            )),
            "PE {pe}: {}",
            stderr(pe)
        );
    }
    for path in launch::mock_transport_paths(&outcome.job.job_id) {
        assert!(!path.exists(), "{} was left behind", path.display());
    }
    assert!(!outcome.job.rendezvous_dir.exists());
}

#[test]
fn sixty_four_processes_start_and_run_a_ring() {
    let outcome = launch::run(&spec(64, &["ring_put", "barrier_repeated"])).unwrap();
    let failed: Vec<String> = outcome
        .pes
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.status.success())
        .map(|(pe, r)| {
            format!(
                "PE {pe}: {}: {}",
                r.status,
                String::from_utf8_lossy(&r.stderr)
            )
        })
        .collect();
    assert!(
        outcome.success(),
        "{:?}\n{}",
        outcome.message(),
        failed.join("\n")
    );
    let out = String::from_utf8_lossy(&outcome.pes[0].stdout);
    assert!(
        out.contains("ring_put ok") && out.contains("barrier_repeated ok"),
        "{out}"
    );
}
