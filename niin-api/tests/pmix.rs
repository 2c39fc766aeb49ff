//! The unique-id exchange through a real PMIx server. CI has no MPI, so the test is ignored
//! there; run it where Open MPI is installed (Debian: `openmpi-bin`):
//! `cargo test -p niin-api --test pmix -- --ignored`. It starts itself under `mpirun -np 3`;
//! each process exchanges an id through `NIIN_RENDEZVOUS=pmix`'s path and prints it.

use std::process::Command;
use std::time::Duration;

use niin_api::bootstrap::{self, Rendezvous};

const CHILD: &str = "NIIN_PMIX_TEST_CHILD";

#[test]
#[ignore = "needs Open MPI's mpirun (a PMIx server); run with --ignored where it is installed"]
fn every_rank_gets_rank_zeros_id_through_pmix() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let exe = std::env::current_exe().expect("the test binary");
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "3", "-x"])
        .arg(format!("{CHILD}=1"))
        .arg(&exe)
        .args([
            "--ignored",
            "--exact",
            "every_rank_gets_rank_zeros_id_through_pmix",
            "--nocapture",
            "--test-threads=1",
        ])
        .output()
        .expect("mpirun starts");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    let mut ids: Vec<(usize, String, String)> = text
        .lines()
        .filter_map(|l| {
            // (libtest's own "test ... " may start the line)
            let mut f = l[l.find("UID ")? + 4..].split(' ');
            Some((
                f.next()?.parse().ok()?,
                f.next()?.to_owned(),
                f.next()?.to_owned(),
            ))
        })
        .collect();
    ids.sort();
    assert_eq!(ids.len(), 3, "{text}");
    // Rank 0 made its id; every rank has it (the others made none of their own).
    let made = &ids[0].2;
    assert_ne!(made, "-", "{text}");
    for (rank, got, own) in &ids {
        assert_eq!(got, made, "rank {rank}: {text}");
        if *rank > 0 {
            assert_eq!(own, "-", "rank {rank} made an id: {text}");
        }
    }
}

/// One process of the job: the exchange, then `UID <rank> <id got> <id made or ->`.
fn child() {
    let place = bootstrap::detect_from_env()
        .expect("the launcher's variables")
        .expect("a launcher");
    let made = std::cell::RefCell::new(None);
    let uid = bootstrap::exchange_unique_id(
        &Rendezvous::Pmix,
        &place,
        || {
            let seed = std::process::id().to_le_bytes();
            let id: [u8; 128] = std::array::from_fn(|i| seed[i % 4].wrapping_add(i as u8));
            *made.borrow_mut() = Some(id);
            Ok(id)
        },
        Duration::from_secs(60),
    )
    .expect("the PMIx exchange");
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let own = made.borrow().map_or_else(|| "-".to_owned(), |id| hex(&id));
    println!("UID {} {} {own}", place.rank, hex(&uid));
}
