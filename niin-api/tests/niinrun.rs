//! Integration tests of the `niinrun` binary, with `/bin/sh -c '...'` PEs.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

const NIINRUN: &str = env!("CARGO_BIN_EXE_niinrun");

/// A safety net: no test job may outlive this (exit 124 then fails the test).
const SAFETY_TIMEOUT: &str = "--timeout=20";

/// Shell functions for PEs: `announce` prints `ready <pid>` and then marks the PE ready in
/// the rendezvous directory; `wait_others` waits until all other PEs announced.
const SYNC: &str = r#"announce() { echo "ready $$"; : > "$NIIN_RENDEZVOUS_DIR/ready-$NIIN_PE"; }
wait_others() {
    while [ "$(ls "$NIIN_RENDEZVOUS_DIR" | wc -l)" -lt $((NIIN_NPES - 1)) ]; do sleep 0.01; done
}
"#;

/// `niinrun` with a clean job-id environment.
fn niinrun() -> Command {
    let mut cmd = Command::new(NIINRUN);
    cmd.env_remove("NIIN_JOB_ID");
    cmd
}

/// `niinrun ARGS... /bin/sh -c SCRIPT`.
fn sh_job(args: &[&str], script: &str) -> Command {
    let mut cmd = niinrun();
    cmd.args(args).args(["/bin/sh", "-c", script]);
    cmd
}

/// Runs `cmd` to completion; returns the output and how long it took.
fn run(cmd: &mut Command) -> (Output, Duration) {
    let start = Instant::now();
    let output = cmd.stdin(Stdio::null()).output().expect("niinrun starts");
    (output, start.elapsed())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A job id unique to this test process and `tag`.
fn job_id(tag: &str) -> String {
    format!("niinrun-it-{}-{tag}", std::process::id())
}

/// Lines of `[pe N] rest`, as (N, rest).
fn prefixed_lines(out: &[u8]) -> Vec<(usize, String)> {
    text(out)
        .lines()
        .map(|line| {
            let rest = line
                .strip_prefix("[pe ")
                .unwrap_or_else(|| panic!("no prefix: {line:?}"));
            let (pe, rest) = rest
                .split_once("] ")
                .unwrap_or_else(|| panic!("bad prefix: {line:?}"));
            (pe.parse().unwrap(), rest.to_owned())
        })
        .collect()
}

/// The processes of process group `pgid` that are alive (not zombies).
fn live_group_members(pgid: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...; comm may contain spaces and parentheses.
        let Some((_, fields)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = fields.split_whitespace().collect();
        if fields.len() > 2 && fields[2] == pgid.to_string() && !matches!(fields[0], "Z" | "X") {
            members.push(pid);
        }
    }
    members
}

/// Waits (up to 5 s) until no live process is left in the groups `pgids`.
fn assert_groups_die(pgids: &[u32]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let alive: Vec<u32> = pgids.iter().flat_map(|&g| live_group_members(g)).collect();
        if alive.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes still alive in groups {pgids:?}: {alive:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// Reads lines from a running niinrun's stdout until `n` lines ended with `ready <pid>`
/// have come; returns the pids.
fn wait_ready(child: &mut Child, n: usize) -> (Vec<u32>, BufReader<std::process::ChildStdout>) {
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut pids = Vec::new();
    while pids.len() < n {
        let mut line = String::new();
        assert_ne!(
            reader.read_line(&mut line).unwrap(),
            0,
            "niinrun ended early"
        );
        if let Some((_, pid)) = line.trim_end().split_once("ready ") {
            pids.push(pid.parse().unwrap());
        }
    }
    (pids, reader)
}

#[test]
fn environment_of_four_pes() {
    let id = job_id("env");
    let script = concat!(
        r#"echo "pe=$NIIN_PE npes=$NIIN_NPES local=$NIIN_LOCAL_PE lnpes=$NIIN_LOCAL_NPES"#,
        r#" job=$NIIN_JOB_ID launcher=$NIIN_LAUNCHER rdv=$NIIN_RENDEZVOUS_DIR extra=$EXTRA""#
    );
    let (out, _) = run(sh_job(&["-n", "4", SAFETY_TIMEOUT], script)
        .env("NIIN_JOB_ID", &id)
        .env("EXTRA", "kept"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    let lines = prefixed_lines(&out.stdout);
    assert_eq!(lines.len(), 4);
    let by_pe: BTreeMap<usize, String> = lines.into_iter().collect();
    let rdv = std::env::temp_dir().join(format!("niinrun-{id}"));
    for pe in 0..4 {
        let expected = format!(
            "pe={pe} npes=4 local={pe} lnpes=4 job={id} launcher=niinrun rdv={} extra=kept",
            rdv.display()
        );
        assert_eq!(by_pe[&pe], expected);
    }
    assert!(!rdv.exists(), "rendezvous directory removed");
}

#[test]
fn generated_job_id_is_shared_and_safe() {
    let (out, _) = run(&mut sh_job(&["-n", "3"], r#"echo "$NIIN_JOB_ID""#));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ids: Vec<String> = prefixed_lines(&out.stdout)
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    assert_eq!(ids.len(), 3);
    assert!(ids.iter().all(|id| id == &ids[0]), "{ids:?}");
    let id = &ids[0];
    assert!(
        !id.is_empty()
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
    );
    let (out, _) = run(&mut sh_job(&[], r#"echo "$NIIN_JOB_ID""#));
    assert_ne!(
        &prefixed_lines(&out.stdout)[0].1,
        id,
        "job ids are unique per job"
    );
}

#[test]
fn failing_pe_status_propagates_and_the_others_are_killed() {
    // The others start a background `sleep` too: their whole process group must die.
    let script = format!(
        r#"{SYNC} if [ "$NIIN_PE" = 2 ]; then wait_others; exit 3; fi
        sleep 30 & announce; wait"#
    );
    let (out, elapsed) = run(&mut sh_job(&["-n", "4", SAFETY_TIMEOUT], &script));
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    assert!(
        text(&out.stderr).contains("niinrun: PE 2 exited with status 3\n"),
        "{}",
        text(&out.stderr)
    );
    let pids: Vec<u32> = prefixed_lines(&out.stdout)
        .into_iter()
        .map(|(_, l)| l.strip_prefix("ready ").unwrap().parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 3);
    assert_groups_die(&pids);
}

#[test]
fn pe_killed_by_a_signal() {
    let script = format!(
        r#"{SYNC} if [ "$NIIN_PE" = 1 ]; then wait_others; kill -9 $$; fi; announce; exec sleep 30"#
    );
    let (out, elapsed) = run(&mut sh_job(&["-n", "3", SAFETY_TIMEOUT], &script));
    assert_eq!(out.status.code(), Some(137), "{}", text(&out.stderr));
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    assert!(text(&out.stderr).contains("niinrun: PE 1 killed by signal 9 (SIGKILL)\n"));
    let pids: Vec<u32> = prefixed_lines(&out.stdout)
        .into_iter()
        .map(|(_, l)| l.strip_prefix("ready ").unwrap().parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2);
    assert_groups_die(&pids);
}

#[test]
fn timeout_stops_the_job() {
    let (out, elapsed) = run(niinrun().args(["-n", "2", "--timeout", "0.5", "sleep", "30"]));
    assert_eq!(out.status.code(), Some(124), "{}", text(&out.stderr));
    assert!(elapsed >= Duration::from_millis(500), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert_eq!(
        text(&out.stderr),
        "niinrun: timeout after 0.5s; killed 2 PEs\n"
    );
}

#[test]
fn program_that_cannot_start() {
    let (out, _) = run(niinrun().args(["-n", "2", "/nonexistent/niinrun-no-such-program"]));
    assert_eq!(out.status.code(), Some(127));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("niinrun: cannot start /nonexistent/niinrun-no-such-program: "),
        "{err}"
    );
    assert!(err.contains("No such file or directory"), "{err}");

    let (out, _) = run(niinrun().arg("niinrun-no-such-program-in-path"));
    assert_eq!(out.status.code(), Some(127));

    let not_executable = std::env::temp_dir().join(job_id("noexec"));
    std::fs::write(&not_executable, "#!/bin/sh\n").unwrap();
    let (out, _) = run(niinrun().arg(&not_executable));
    std::fs::remove_file(&not_executable).unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(
        text(&out.stderr).contains("Permission denied"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn partial_lines_stderr_and_raw_bytes() {
    let script = r#"printf 'line\n\377\376 raw\n' ; printf 'to stderr\n' >&2; printf 'no newline'"#;
    let (out, _) = run(&mut sh_job(&["-n", "2"], script));
    assert_eq!(out.status.code(), Some(0));
    for pe in 0..2 {
        let stdout = out.stdout.clone();
        for expected in [
            format!("[pe {pe}] line\n").into_bytes(),
            [format!("[pe {pe}] ").as_bytes(), b"\xff\xfe raw\n"].concat(),
            format!("[pe {pe}] no newline\n").into_bytes(),
        ] {
            assert!(
                stdout.windows(expected.len()).any(|w| w == expected),
                "{expected:?} in {}",
                text(&stdout)
            );
        }
        assert!(text(&out.stderr).contains(&format!("[pe {pe}] to stderr\n")));
    }
    assert_eq!(out.stdout.iter().filter(|&&b| b == b'\n').count(), 6);
}

#[test]
fn no_prefix_passes_output_through() {
    let (out, _) = run(&mut sh_job(
        &["--no-prefix", "-n", "2"],
        "printf x; printf e >&2",
    ));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, b"xx");
    assert_eq!(out.stderr, b"ee");
}

#[test]
fn lines_of_pes_never_interleave() {
    const PAYLOAD: &str = "abcdefghijklmnopqrstuvwxyz-0123456789-ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let script = format!(r#"yes "$NIIN_PE-{PAYLOAD}" | head -n 5000"#);
    let (out, _) = run(&mut sh_job(&["-n", "4", SAFETY_TIMEOUT], &script));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines = prefixed_lines(&out.stdout);
    assert_eq!(lines.len(), 4 * 5000);
    for (pe, rest) in lines {
        assert_eq!(rest, format!("{pe}-{PAYLOAD}"));
    }
}

#[test]
fn rendezvous_dir_exists_during_the_job_and_is_removed() {
    let script = r#"d="$NIIN_RENDEZVOUS_DIR"; test -d "$d" && echo "$NIIN_PE" > "$d/pe-$NIIN_PE" \
        && echo "ok $d $(stat -c %a "$d")""#;
    let (out, _) = run(&mut sh_job(&["-n", "2"], script));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines = prefixed_lines(&out.stdout);
    assert_eq!(lines.len(), 2, "{lines:?}");
    let dir = lines[0].1.split(' ').nth(1).unwrap().to_owned();
    assert!(
        lines.iter().all(|(_, l)| l == &format!("ok {dir} 700")),
        "{lines:?}"
    );
    assert!(Path::new(&dir).starts_with(std::env::temp_dir()));
    assert!(!Path::new(&dir).exists(), "{dir} must be removed");
}

#[test]
fn leftover_mock_transport_files_are_removed() {
    let id = job_id("mock");
    let shm = PathBuf::from(format!("/dev/shm/niin-mock-{id}"));
    let tmp = std::env::temp_dir().join(format!("niin-mock-{id}"));
    let have_shm = Path::new("/dev/shm").is_dir();
    // PE 0 creates both, then crashes before it could unlink them.
    let script = r#"if [ "$NIIN_PE" = 0 ]; then
            [ -d /dev/shm ] && : > "$1"; mkdir -p "$2/sub" && : > "$2/sub/f"; kill -9 $$
        fi"#;
    let (out, _) = run(sh_job(&["-n", "2", SAFETY_TIMEOUT], script)
        .arg("sh")
        .arg(&shm)
        .arg(&tmp)
        .env("NIIN_JOB_ID", &id));
    assert_eq!(out.status.code(), Some(137), "{}", text(&out.stderr));
    assert!(!tmp.exists(), "{} must be removed", tmp.display());
    if have_shm {
        assert!(!shm.exists(), "{} must be removed", shm.display());
    }
}

#[test]
fn sigint_and_sigterm_stop_the_job() {
    for (signal, code, name) in [
        (libc::SIGINT, 130, "SIGINT"),
        (libc::SIGTERM, 143, "SIGTERM"),
    ] {
        let mut child = sh_job(&["-n", "2", SAFETY_TIMEOUT], r#"echo "ready $$"; sleep 30"#)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (pids, _reader) = wait_ready(&mut child, 2);
        let start = Instant::now();
        let pid = i32::try_from(child.id()).unwrap();
        // SAFETY: kill has no memory-safety preconditions; `pid` is our unreaped child.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{}", text(&out.stderr));
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(
            text(&out.stderr),
            format!("niinrun: received {name}; stopped 2 PEs\n")
        );
        assert_groups_die(&pids);
    }
}

#[test]
fn pes_die_when_niinrun_is_killed() {
    let script = r#"echo "ready $$ $NIIN_RENDEZVOUS_DIR"; exec sleep 30"#;
    let mut child = sh_job(&["-n", "2", SAFETY_TIMEOUT], script)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (pids, _reader) = wait_ready_with_dir(&mut child, 2);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_groups_die(&pids.iter().map(|(pid, _)| *pid).collect::<Vec<_>>());
}

#[test]
fn what_a_killed_niinrun_left_is_removed_by_the_next_one() {
    let id = job_id("sigkilled");
    let shm = PathBuf::from(format!("/dev/shm/niin-mock-{id}"));
    let script = r#"echo "ready $$ $NIIN_RENDEZVOUS_DIR"; exec sleep 30"#;
    let mut child = sh_job(&["-n", "2", SAFETY_TIMEOUT], script)
        .env("NIIN_JOB_ID", &id)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (pids, _reader) = wait_ready_with_dir(&mut child, 2);
    // As if PE 0 had created its mock job file and not yet unlinked it.
    let have_shm = Path::new("/dev/shm").is_dir();
    if have_shm {
        std::fs::write(&shm, b"x").unwrap();
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_groups_die(&pids.iter().map(|(pid, _)| *pid).collect::<Vec<_>>());
    let dir = PathBuf::from(&pids[0].1);
    assert!(dir.is_dir(), "nobody could remove {} yet", dir.display());
    // Any next niinrun tidies up.
    let (out, _) = run(niinrun().args(["-n", "1", "true"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!dir.exists(), "{} must be removed", dir.display());
    if have_shm {
        assert!(!shm.exists(), "{} must be removed", shm.display());
    }
}

#[test]
fn a_stale_mock_job_file_of_the_job_is_removed_before_the_launch() {
    let id = job_id("stalefile");
    let shm = PathBuf::from(format!("/dev/shm/niin-mock-{id}"));
    if !Path::new("/dev/shm").is_dir() {
        return;
    }
    std::fs::write(&shm, b"left by an earlier job").unwrap();
    let script = r#"[ -e "/dev/shm/niin-mock-$NIIN_JOB_ID" ] && echo stale || echo clean"#;
    let (out, _) = run(sh_job(&["-n", "1", SAFETY_TIMEOUT], script).env("NIIN_JOB_ID", &id));
    let _ = std::fs::remove_file(&shm);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "[pe 0] clean\n");
}

#[test]
fn the_first_pe_to_fail_is_blamed_not_those_that_noticed() {
    // PE 2 kills itself; PEs 0 and 1 watch its process and exit 5 the moment it is dead
    // (a zombie), before niinrun has reaped it, as PEs finding a dead peer do.
    let script = r#"d="$NIIN_RENDEZVOUS_DIR"
        if [ "$NIIN_PE" = 2 ]; then
            echo $$ > "$d/victim.tmp"; mv "$d/victim.tmp" "$d/victim"
            while [ "$(ls "$d" | grep -c '^up-')" -lt 2 ]; do sleep 0.01; done
            kill -9 $$
        fi
        while [ ! -e "$d/victim" ]; do sleep 0.01; done
        v=$(cat "$d/victim"); : > "$d/up-$NIIN_PE"
        while [ -e /proc/$v ] && [ "$(cut -d' ' -f3 /proc/$v/stat 2>/dev/null)" != Z ]; do :; done
        echo "PE 2 died"; exit 5"#;
    let (out, _) = run(&mut sh_job(&["-n", "3", SAFETY_TIMEOUT], script));
    assert_eq!(out.status.code(), Some(137), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        "niinrun: PE 2 killed by signal 9 (SIGKILL)\n"
    );
    // The others ended by themselves within the report window: they were not stopped.
    let mut noticed: Vec<usize> = prefixed_lines(&out.stdout)
        .into_iter()
        .filter(|(_, l)| l == "PE 2 died")
        .map(|(pe, _)| pe)
        .collect();
    noticed.sort_unstable();
    assert_eq!(noticed, [0, 1]);
}

/// Like [`wait_ready`], for lines `ready <pid> <dir>`.
fn wait_ready_with_dir(
    child: &mut Child,
    n: usize,
) -> (Vec<(u32, String)>, BufReader<std::process::ChildStdout>) {
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut found = Vec::new();
    while found.len() < n {
        let mut line = String::new();
        assert_ne!(
            reader.read_line(&mut line).unwrap(),
            0,
            "niinrun ended early"
        );
        if let Some((_, rest)) = line.trim_end().split_once("ready ") {
            let (pid, dir) = rest.split_once(' ').unwrap();
            found.push((pid.parse().unwrap(), dir.to_owned()));
        }
    }
    (found, reader)
}

#[test]
fn program_arguments_are_passed_untouched() {
    let (out, _) = run(niinrun().args([
        "-n",
        "1",
        "/bin/sh",
        "-c",
        r#"printf '%s|' "$@""#,
        "sh",
        "-n",
        "5",
        "--help",
    ]));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "[pe 0] -n|5|--help|\n");
    let (out, _) = run(niinrun().args(["-n2", "--", "/bin/echo", "--np", "9"]));
    assert_eq!(
        text(&out.stdout)
            .lines()
            .filter(|l| l.ends_with("] --np 9"))
            .count(),
        2
    );
}

#[test]
fn help_and_version() {
    for flag in ["-h", "--help"] {
        let (out, _) = run(niinrun().arg(flag));
        assert_eq!(out.status.code(), Some(0));
        let help = text(&out.stdout);
        for needle in [
            "Usage: niinrun",
            "--np",
            "--timeout",
            "--no-prefix",
            "--version",
        ] {
            assert!(help.contains(needle), "{needle}");
        }
        for var in niin_api::launch::env::ALL {
            assert!(help.contains(var), "{var}");
        }
    }
    let (out, _) = run(niinrun().arg("--version"));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stdout),
        format!("niinrun {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn bad_command_lines_exit_2_naming_the_value() {
    for bad in ["0", "-1", "abc", "2000"] {
        let (out, _) = run(niinrun().args(["-n", bad, "true"]));
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(
            text(&out.stderr).contains(&format!("`{bad}`")),
            "{}",
            text(&out.stderr)
        );
    }
    for args in [
        &[][..],
        &["-n", "2"],
        &["--bogus", "true"],
        &["--timeout", "soon", "true"],
    ] {
        let (out, _) = run(niinrun().args(args));
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(text(&out.stderr).starts_with("niinrun: "));
    }
    let (out, _) = run(niinrun().arg("true").env("NIIN_JOB_ID", "bad/id"));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("`bad/id`"));
}

#[test]
fn closed_stdout_ends_the_job_with_sigpipe() {
    // Like `niinrun -n 2 yes | head -n 3`: the PEs get SIGPIPE once niinrun's reader is gone.
    let mut child = niinrun()
        .args(["-n", "2", SAFETY_TIMEOUT, "yes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    for _ in 0..3 {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(line.ends_with("] y\n"), "{line:?}");
    }
    drop(reader);
    let start = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(out.status.code(), Some(141), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("killed by signal 13 (SIGPIPE)"),
        "{}",
        text(&out.stderr)
    );
}
