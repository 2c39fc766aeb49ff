//! One PE of a multi-process conformance run: `niinrun -n N check_worker [CHECK...]`.
//! Joins the world from the environment (NIIN_TRANSPORT=mock is the default here, as the
//! mock is what the CPU suite tests), runs the named checks (all without names) and exits
//! non-zero on the first failure.

use std::process::ExitCode;

use niin_api::{World, WorldConfig};
use niin_tests::checks::{self, CHECKS};

fn main() -> ExitCode {
    let names: Vec<String> = std::env::args().skip(1).collect();
    let selected: Vec<checks::Check> = if names.is_empty() {
        CHECKS.to_vec()
    } else {
        match names.iter().map(|n| checks::by_name(n).ok_or(n)).collect() {
            Ok(v) => v,
            Err(n) => {
                eprintln!("check_worker: no check named {n:?}");
                return ExitCode::from(2);
            }
        }
    };
    let world = WorldConfig::from_lookup(|k| {
        std::env::var(k)
            .ok()
            .or_else(|| (k == niin_api::TransportKind::VAR).then(|| "mock".into()))
    })
    .and_then(|config| World::init_with_config(&config));
    let w = match world {
        Ok(w) => w,
        Err(e) => {
            eprintln!("check_worker: init: {e}");
            return ExitCode::FAILURE;
        }
    };
    for (name, check) in selected {
        if let Err(e) = check(&w) {
            eprintln!("check_worker: {name} FAILED: {e}");
            return ExitCode::FAILURE;
        }
        if w.my_pe() == 0 {
            println!("{name} ok");
        }
    }
    if let Err(e) = w.finalize() {
        eprintln!("check_worker: finalize: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
