//! Multi-process jobs through `/dev/shm/niin-mock-<job_id>`: real processes (this test
//! binary re-executed as PEs, running [`child_entry`]), attach from threads, header
//! mismatches, stale files, cleanup, unlinking after init.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Instant;

use super::barrier::rounds_with_checks;
use super::*;
use crate::error::{Departure, TransportError};
use crate::mock::{cleanup_job, job_file_path};
use crate::ops::{AmoOp, Cmp, SignalOp, WaitKind};
use crate::status::{PeEnd, STATUS_FILE_NAME, StatusBoard};

/// Tells a re-executed test binary to act as a PE: `check:job:pe:n_pes`.
const CHILD_VAR: &str = "NIIN_MOCK_TEST_CHILD";

/// The test a child runs.
const CHILD_TEST: &str = "mock::tests::multiprocess::child_entry";

/// A job id unique to this test process and test.
fn job(name: &str) -> String {
    format!("t{}-{name}", std::process::id())
}

fn spawn_child(check: &str, job: &str, pe: usize, n: usize) -> Child {
    child_command(check, job, pe, n).spawn().unwrap()
}

fn child_command(check: &str, job: &str, pe: usize, n: usize) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        CHILD_TEST,
        "--exact",
        "--test-threads=1",
        "--nocapture",
        "-q",
    ])
    .env(CHILD_VAR, format!("{check}:{job}:{pe}:{n}"))
    .env_remove("NIIN_LAUNCHER")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    cmd
}

/// Reads lines of `child`'s stdout until one is `line` (the child's test harness prints
/// its own lines around).
fn await_line(out: &mut impl std::io::BufRead, line: &str) {
    let mut buf = String::new();
    loop {
        buf.clear();
        assert!(
            out.read_line(&mut buf).unwrap() > 0,
            "the child ended before printing {line:?}"
        );
        if buf.trim_end() == line {
            return;
        }
    }
}

fn describe(pe: usize, out: &Output) -> String {
    format!(
        "PE {pe} exited with {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Waits until `path` exists (PE 0 created the job file).
fn await_file(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} did not appear",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The entry point of a child process: does nothing unless [`CHILD_VAR`] is set.
#[test]
fn child_entry() {
    let Ok(spec) = std::env::var(CHILD_VAR) else {
        return;
    };
    let parts: Vec<&str> = spec.split(':').collect();
    let [check, job, pe, n] = parts[..] else {
        panic!("bad {CHILD_VAR}={spec:?}");
    };
    let (pe, n): (usize, usize) = (pe.parse().unwrap(), n.parse().unwrap());
    match check {
        "all" => check_all(job, pe, n),
        "crash" => {
            let _t = MockTransport::attach(job, pe, n, cfg()).unwrap();
            // Leave without finalizing, as a crash would.
            std::process::exit(0);
        }
        "create-and-crash" => {
            let path = job_file_path(job).unwrap();
            let job = job.to_string();
            std::thread::spawn(move || MockTransport::attach(&job, 0, n, cfg()));
            await_file(&path);
            std::thread::sleep(Duration::from_millis(200));
            std::process::exit(0);
        }
        "barrier-report" => {
            // Attach, say so, then report how the barrier ends.
            let t = MockTransport::attach(job, pe, n, cfg()).unwrap();
            println!("attached");
            match t.barrier(Order::Now, world_team(n)) {
                Ok(()) => println!("barrier passed"),
                Err(e) => println!("barrier: {e}"),
            }
            std::process::exit(0);
        }
        "hang" => {
            let _t = MockTransport::attach(job, pe, n, cfg()).unwrap();
            println!("attached");
            std::thread::sleep(Duration::from_secs(60));
        }
        other => panic!("unknown check {other:?}"),
    }
}

/// One PE of a multi-process job: ring of put-with-signal, contended atomics on PE 0,
/// barrier rounds with visibility checks.
fn check_all(job: &str, pe: usize, n: usize) {
    let t = MockTransport::attach(job, pe, n, cfg()).unwrap();
    let data: Vec<u8> = (0..4096).map(|i| (i + pe * 13) as u8).collect();
    // SAFETY: `data` outlives the blocking call.
    unsafe {
        t.put_signal(
            Order::Now,
            (pe + 1) % n,
            SymAddr(8192),
            data.as_ptr(),
            4096,
            SymAddr(0),
            1,
            SignalOp::Set,
        )
    }
    .unwrap();
    t.wait_until(Order::Now, SymAddr(0), WaitKind::SIGNAL, Cmp::Eq, 1)
        .unwrap();
    let prev = (pe + n - 1) % n;
    let expect: Vec<u8> = (0..4096).map(|i| (i + prev * 13) as u8).collect();
    assert_eq!(get(&t, pe, 8192, 4096).unwrap(), expect);
    for _ in 0..1000 {
        t.atomic(0, SymAddr(64), AmoOp::FetchAdd, Width::W8, 1, 0)
            .unwrap();
    }
    t.barrier(Order::Now, world_team(n)).unwrap();
    assert_eq!(g64(&t, 0, 64), 1000 * n as u64);
    rounds_with_checks(&t, world_team(n), 100, 16384);
    t.barrier(Order::Now, world_team(n)).unwrap();
    t.finalize().unwrap();
}

#[test]
fn processes_share_a_job_put_signal_atomics_and_barriers() {
    let job = job("procs");
    let n = 4;
    let children: Vec<Child> = (0..n).map(|pe| spawn_child("all", &job, pe, n)).collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    for (pe, out) in outputs.iter().enumerate() {
        assert!(out.status.success(), "{}", describe(pe, out));
    }
    assert!(
        !job_file_path(&job).unwrap().exists(),
        "PE 0 unlinked the file after init"
    );
    assert!(!cleanup_job(&job).unwrap());
}

#[test]
fn a_crashed_process_is_peer_gone_for_the_barrier() {
    let job = job("crash");
    let child = spawn_child("crash", &job, 1, 2);
    let t = MockTransport::attach(&job, 0, 2, cfg()).unwrap();
    let start = Instant::now();
    let e = t.barrier(Order::Now, world_team(2)).unwrap_err();
    assert_eq!(
        e,
        TransportError::PeerGone {
            pe: 1,
            op: "barrier",
            why: Departure::Died {
                how: "its process ended without finalizing".into()
            },
        }
    );
    assert!(start.elapsed() < Duration::from_secs(10));
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", describe(1, &out));
}

#[test]
fn a_file_left_by_a_crashed_pe0_is_reported_stale() {
    let job = job("stalepe0");
    let out = spawn_child("create-and-crash", &job, 0, 2)
        .wait_with_output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(0, &out));
    let path = job_file_path(&job).unwrap();
    assert!(path.exists());
    match MockTransport::attach(&job, 1, 2, short(2000)) {
        Err(TransportError::BadArgument { op: "attach", what }) => {
            assert!(
                what.contains("stale") && what.contains("no longer running"),
                "{what}"
            );
            assert!(what.contains(&path.display().to_string()), "{what}");
        }
        other => panic!("{other:?}"),
    }
    assert!(cleanup_job(&job).unwrap());
}

#[test]
fn threads_attach_to_one_job_and_the_file_is_unlinked_after_init() {
    let job = job("threads");
    let path = job_file_path(&job).unwrap();
    let n = 3;
    std::thread::scope(|s| {
        for pe in 0..n {
            let (job, path) = (&job, &path);
            s.spawn(move || {
                let t = MockTransport::attach(job, pe, n, cfg()).unwrap();
                if pe == 0 {
                    assert!(!path.exists(), "the file is gone once every PE attached");
                }
                put(&t, (pe + 1) % n, 0, &[pe as u8 + 1; 100]).unwrap();
                t.barrier(Order::Now, world_team(n)).unwrap();
                assert_eq!(
                    get(&t, pe, 0, 100).unwrap(),
                    [((pe + n - 1) % n) as u8 + 1; 100]
                );
                t.barrier(Order::Now, world_team(n)).unwrap();
            });
        }
    });
    assert!(!path.exists());
}

#[test]
fn header_mismatch_names_both_values() {
    let job = job("mismatch");
    let path = job_file_path(&job).unwrap();
    std::thread::scope(|s| {
        let pe0 = s.spawn(|| MockTransport::attach(&job, 0, 2, cfg()));
        await_file(&path);
        let mismatch = |pe: usize, n: usize, config: MockConfig| match MockTransport::attach(
            &job, pe, n, config,
        ) {
            Err(TransportError::BadArgument { op: "attach", what }) => what,
            other => panic!("{other:?}"),
        };
        let what = mismatch(1, 3, cfg());
        assert!(
            what.contains("n_pes = 2") && what.contains("n_pes = 3"),
            "{what}"
        );
        assert!(what.contains(&path.display().to_string()), "{what}");
        let what = mismatch(
            1,
            2,
            MockConfig {
                heap_size: 2 * HEAP,
                ..cfg()
            },
        );
        assert!(
            what.contains("heap_size = 65536") && what.contains("heap_size = 131072"),
            "{what}"
        );
        let what = mismatch(
            1,
            2,
            MockConfig {
                node_size: 1,
                ..cfg()
            },
        );
        assert!(what.contains("node_size"), "{what}");
        // The right parameters join the job.
        let pe1 = MockTransport::attach(&job, 1, 2, cfg()).unwrap();
        let pe0 = pe0.join().unwrap().unwrap();
        p64(&pe1, 0, 0, 11);
        assert_eq!(g64(&pe0, 0, 0), 11);
    });
    assert!(!path.exists());
}

#[test]
fn a_duplicate_pe_number_is_refused() {
    let job = job("dup");
    let path = job_file_path(&job).unwrap();
    std::thread::scope(|s| {
        let pe0 = s.spawn(|| MockTransport::attach(&job, 0, 3, cfg()));
        await_file(&path);
        // Two processes claim PE 1: one is refused at once, the other waits for PE 2.
        let (tx, rx) = std::sync::mpsc::channel();
        for _ in 0..2 {
            let (tx, job) = (tx.clone(), &job);
            s.spawn(move || tx.send(MockTransport::attach(job, 1, 3, cfg())).unwrap());
        }
        match rx.recv().unwrap() {
            Err(TransportError::BadArgument { what, .. }) => {
                assert!(
                    what.contains("PE 1") && what.contains("already attached"),
                    "{what}"
                );
            }
            other => panic!("{other:?}"),
        }
        let pe2 = MockTransport::attach(&job, 2, 3, cfg()).unwrap();
        let pe1 = rx.recv().unwrap().unwrap();
        pe0.join().unwrap().unwrap();
        drop((pe1, pe2));
    });
}

#[test]
fn an_existing_file_is_a_stale_file_error_and_cleanup_job_removes_it() {
    let job = job("stale");
    let path = job_file_path(&job).unwrap();
    std::fs::write(&path, b"left over").unwrap();
    match MockTransport::attach(&job, 0, 1, cfg()) {
        Err(TransportError::Os { what, cause }) => {
            assert!(what.contains(&path.display().to_string()), "{what}");
            assert!(
                cause.contains("stale") && cause.contains("cleanup_job"),
                "{cause}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(cleanup_job(&job).unwrap());
    assert!(!cleanup_job(&job).unwrap());
    // Now the job starts, and its file is gone after init.
    let t = MockTransport::attach(&job, 0, 1, cfg()).unwrap();
    assert!(!path.exists());
    assert!(!cleanup_job(&job).unwrap());
    drop(t);
}

#[test]
fn attach_times_out_without_pe0_and_pe0_without_the_others() {
    let job = job("timeout");
    match MockTransport::attach(&job, 1, 2, short(200)) {
        Err(TransportError::Timeout {
            pe: 1,
            op: "attach",
            detail,
            ..
        }) => {
            assert!(
                detail.contains("niin-mock-") && detail.contains("was not created"),
                "{detail}"
            );
        }
        other => panic!("{other:?}"),
    }
    match MockTransport::attach(&job, 0, 2, short(200)) {
        Err(TransportError::Timeout {
            pe: 0,
            op: "attach",
            detail,
            ..
        }) => {
            assert!(detail.contains("1 of 2 PEs attached"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        !job_file_path(&job).unwrap().exists(),
        "a failed init leaves no file"
    );
}

#[test]
fn attach_rejects_bad_job_ids_and_pes() {
    assert!(matches!(
        MockTransport::attach("no/slash", 0, 1, cfg()),
        Err(TransportError::BadArgument { .. })
    ));
    assert!(matches!(
        MockTransport::attach("", 0, 1, cfg()),
        Err(TransportError::BadArgument { .. })
    ));
    assert_eq!(
        MockTransport::attach(&job("oor"), 2, 2, cfg()).map(|_| ()),
        Err(TransportError::PeOutOfRange { pe: 2, n_pes: 2 })
    );
}

#[test]
fn a_pe_killed_under_a_launcher_is_named_with_its_signal() {
    // This test plays niinrun: it keeps the status board, starts the PEs with niinrun's
    // variables, and records how a PE ended when it reaps it.
    let job = job("killed");
    let dir = std::env::temp_dir().join(format!("niin-mock-unit-rdv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let board = StatusBoard::create(&dir.join(STATUS_FILE_NAME), 2).unwrap();
    let launch = |check: &str, pe: usize| {
        let mut cmd = child_command(check, &job, pe, 2);
        cmd.env("NIIN_LAUNCHER", "niinrun")
            .env("NIIN_RENDEZVOUS_DIR", &dir);
        cmd.spawn().unwrap()
    };
    let mut reporter = launch("barrier-report", 0);
    let mut victim = launch("hang", 1);
    let mut victim_out = std::io::BufReader::new(victim.stdout.take().unwrap());
    await_line(&mut victim_out, "attached");
    victim.kill().unwrap();
    victim.wait().unwrap();
    board.record(1, &PeEnd::Failed("killed by signal 9 (SIGKILL)".into()));
    let mut out = std::io::BufReader::new(reporter.stdout.take().unwrap());
    await_line(&mut out, "attached");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    reporter.wait().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        board.is_consequence(0),
        "PE 0 marked its failure a consequence"
    );
    assert!(!board.is_consequence(1));
    assert!(
        rest.contains("barrier: PE 1 died (killed by signal 9 (SIGKILL)); barrier cannot complete"),
        "{rest}"
    );
}

#[test]
fn a_heap_larger_than_the_free_shared_memory_is_refused_with_both_sizes() {
    let job = job("nospace");
    let path = job_file_path(&job).unwrap();
    let free = super::super::job::free_space(path.parent().unwrap()).expect("statvfs works here");
    let config = MockConfig {
        heap_size: free / 2 + (1 << 20),
        ..cfg()
    };
    match MockTransport::attach(&job, 0, 2, config) {
        Err(TransportError::Os { what, cause }) => {
            assert!(what.contains(&path.display().to_string()), "{what}");
            assert!(
                cause.contains(&format!("{}-byte heaps", config.heap_size))
                    && cause.contains(&format!("{} MiB) free", free >> 20))
                    && cause.contains("NVSHMEM_SYMMETRIC_SIZE"),
                "{cause}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(!path.exists(), "nothing was created");
}

#[test]
fn an_attach_timeout_names_the_pes_that_never_attached() {
    let job = job("absent");
    let e = MockTransport::attach(&job, 0, 4, short(300)).unwrap_err();
    match e {
        TransportError::Timeout {
            op: "attach",
            detail,
            ..
        } => {
            assert!(
                detail.ends_with("1 of 4 PEs attached; not attached: PEs 1, 2, 3"),
                "{detail}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(!job_file_path(&job).unwrap().exists());
}
