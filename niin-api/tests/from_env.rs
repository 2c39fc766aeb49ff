//! `WorldConfig::from_env` reads the process environment, and SPMD init uses it: a variable
//! set in the environment reaches the world, a malformed one stops init naming it, and
//! `WorldConfig::default` reads nothing.
//!
//! The process environment is global: this binary holds this one test only.

use std::time::Duration;

use niin_api::{Error, TransportKind, World, WorldConfig};

#[path = "support/env.rs"]
mod env_support;
use env_support::{CONFIG_VARS, LAUNCHER_VARS, set, unset};

#[test]
fn from_env_reads_the_environment_and_init_uses_it() {
    // No launcher: SPMD init makes a one-PE world.
    for var in CONFIG_VARS.iter().chain(&LAUNCHER_VARS) {
        unset(var);
    }
    // Unset: the defaults.
    let c = WorldConfig::from_env().unwrap();
    assert_eq!(c.transport, TransportKind::Auto);
    assert_eq!(c.heap_size, 256 << 20);
    assert_eq!(c.timeout, Duration::from_secs(60));

    // Good values reach the configuration...
    set("NIIN_TRANSPORT", "mock");
    set("NVSHMEM_SYMMETRIC_SIZE", "8M");
    set("NIIN_TIMEOUT", "7.5");
    set("NIIN_CHECK_COLLECTIVES", "1");
    let c = WorldConfig::from_env().unwrap();
    assert_eq!(
        (c.transport, c.heap_size, c.timeout, c.check_collectives),
        (
            TransportKind::Mock,
            8 << 20,
            Duration::from_millis(7500),
            Some(niin_api::CollectiveChecks::All)
        )
    );
    // ...and WorldConfig::default ignores them: pure defaults.
    assert_eq!(WorldConfig::default().heap_size, 16 << 20);
    assert_eq!(WorldConfig::default().timeout, Duration::from_secs(60));

    // ...and the world SPMD init makes.
    let w = World::init().unwrap();
    assert_eq!(w.config(), &c);
    assert_eq!(w.heap_stats().size, 8 << 20);
    w.finalize().unwrap();

    // A malformed value is an error naming the variable and the value, from from_env and
    // from init alike; nothing falls back to a default.
    for (var, bad) in [
        ("NIIN_TIMEOUT", "abc"),
        ("NVSHMEM_SYMMETRIC_SIZE", "12Q"),
        ("NIIN_CHECK_SYMMETRY", "perhaps"),
        ("NIIN_MOCK_NODE_SIZE", "none"),
    ] {
        set(var, bad);
        for e in [
            WorldConfig::from_env().unwrap_err(),
            World::init().map(drop).unwrap_err(),
        ] {
            assert!(
                matches!(e, Error::Config(_) | Error::HeapSize(_)),
                "{var}={bad}: {e:#?}"
            );
            let msg = e.to_string();
            assert!(msg.contains(var) && msg.contains(bad), "{msg}");
        }
        unset(var);
    }
    for var in CONFIG_VARS {
        unset(var);
    }
}
