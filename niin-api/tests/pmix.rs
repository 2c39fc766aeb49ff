//! The unique-id exchange under a real `mpirun`: through its PMIx server, and through the
//! default one-node rendezvous (no variable of ours). CI has no MPI, so the tests are
//! ignored there; run them where Open MPI is installed (Debian: `openmpi-bin`):
//! `cargo test -p niin-api --test pmix -- --ignored`. Each starts itself under
//! `mpirun -np 3`; each process exchanges an id and prints it.

use std::process::Command;
use std::time::Duration;

use niin_api::bootstrap::{self, Rendezvous};

const CHILD: &str = "NIIN_PMIX_TEST_CHILD";

#[test]
#[ignore = "needs Open MPI's mpirun (a PMIx server); run with --ignored where it is installed"]
fn every_rank_gets_rank_zeros_id_through_pmix() {
    if std::env::var_os(CHILD).is_some() {
        child(Some(Rendezvous::Pmix));
        return;
    }
    check_job("every_rank_gets_rank_zeros_id_through_pmix");
}

#[test]
#[ignore = "needs Open MPI's mpirun; run with --ignored where it is installed"]
fn plain_mpirun_on_one_node_needs_no_rendezvous_variable() {
    if std::env::var_os(CHILD).is_some() {
        child(None);
        return;
    }
    check_job("plain_mpirun_on_one_node_needs_no_rendezvous_variable");
}

/// Runs test `name` of this binary as 3 processes under mpirun and checks that each got the
/// id rank 0 made, and that only rank 0 made one.
fn check_job(name: &str) {
    let exe = std::env::current_exe().expect("the test binary");
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "3", "-x"])
        .arg(format!("{CHILD}=1"))
        .arg(&exe)
        .args([
            "--ignored",
            "--exact",
            name,
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

/// One process of the job: the exchange through `rv` (`None`: the environment's default),
/// then `UID <rank> <id got> <id made or ->`.
fn child(rv: Option<Rendezvous>) {
    let place = bootstrap::detect_from_env()
        .expect("the launcher's variables")
        .expect("a launcher");
    let rv = rv.unwrap_or_else(|| {
        bootstrap::rendezvous_from_env(|k| std::env::var(k).ok(), &place)
            .expect("a default rendezvous")
    });
    let made = std::cell::RefCell::new(None);
    let uid = bootstrap::exchange_unique_id(
        &rv,
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
