//! The host-API conformance checks on the NCCL transport, one process per PE. These need
//! a GPU with NCCL, so they are `#[ignore]`d: on a CPU machine they are reported as
//! ignored, never as passed. On a GPU machine: `cargo test -p niin-tests --test gpu --
//! --ignored` (scripts/gpu/host-tests.sh runs the same checks from a carried build).

use std::time::Duration;

use niin_api::launch::{self, LaunchSpec, OutputMode};

const WORKER: &str = env!("CARGO_BIN_EXE_check_worker");

fn run_on_gpu(n_pes: usize, checks: &[&str]) {
    assert!(
        niin_transport::probe::gpu_stack().is_some(),
        "no GPU stack (libcuda.so.1 and libnccl.so.2) on this machine"
    );
    let mut spec = LaunchSpec::new(n_pes, WORKER);
    spec.args = checks.iter().map(Into::into).collect();
    spec.timeout = Some(Duration::from_secs(240));
    spec.output = OutputMode::Capture;
    spec.extra_env = vec![
        ("NIIN_TRANSPORT".into(), "nccl".into()),
        ("NCCL_MULTI_RANK_GPU_ENABLE".into(), "1".into()),
        ("NCCL_NVLS_ENABLE".into(), "0".into()),
    ];
    let outcome = launch::run(&spec).expect("the launcher starts the job");
    let text: String = outcome
        .pes
        .iter()
        .enumerate()
        .map(|(pe, r)| {
            format!(
                "--- PE {pe}: {}\n{}{}",
                r.status,
                String::from_utf8_lossy(&r.stdout),
                String::from_utf8_lossy(&r.stderr)
            )
        })
        .collect();
    assert!(outcome.success(), "{:?}\n{text}", outcome.message());
}

#[test]
#[ignore = "needs a GPU with NCCL: run with --ignored on a GPU machine"]
fn checks_on_one_pe() {
    run_on_gpu(1, &["bad_input", "heap_symmetric"]);
}

#[test]
#[ignore = "needs a GPU with NCCL >= 2.30 (several PEs on one GPU): run with --ignored"]
fn checks_on_two_pes() {
    run_on_gpu(
        2,
        &[
            "rma_every_type",
            "put_signal_set_and_add",
            "atomic_contention",
            "barrier_repeated",
            "stream_operations",
            "collectives_every_type",
            "collectives_team_shapes",
            "collectives_bad_input",
        ],
    );
}
