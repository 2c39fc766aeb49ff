//! The C test programs of `tests/c/`, compiled with the system C compiler against
//! `device/include` and linked to the `libnvshmem_host.so` this test run built, then run
//! as multi-process jobs on the mock transport by niinrun's launcher library.
//!
//! - `host_api.c` as C (2 and 4 PEs, environment init), through the unique-ID
//!   bootstrap (2 and 4 PEs), through the header's MPI path against `tests/c/fake_mpi`
//!   (3 PEs), and compiled as C++ (2 PEs);
//! - `wrong_use.c` (2 PEs): errors, not crashes, and exactly the `NIIN:` lines it
//!   expects; then `nvshmem_global_exit` ending a job with its status;
//! - the headers alone, as C11, C++11 and C++17, and the `NIIN_ON_NOT_IMPLEMENTED` check;
//! - `mismatch.c` (2 and 3 PEs): differing collective calls are an error on every PE, one
//!   `NIIN:` line naming both calls, and the world stays usable
//! - `peer_death.c` (3 PEs): a PE killed while the others wait in a barrier is named by
//!   them at once, and niinrun blames it
//! - `extensions.c` (2 PEs, C and C++): the driver-API module and user-buffer calls refused
//!   with NVSHMEM's values and one `NIIN:` line each, NVSHMEM's error macros and their
//!   lines, `NVSHMEMI_NZ_EXIT`'s exit; and, with CUDA's headers (`.cuda/`), compiled as C11,
//!   C++11 and C++17: `niin/launch.h` and the half/bfloat16 declarations of host C++.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use niin_api::launch::{self, CleanupHook, JobOutcome, LaunchSpec, OutputMode};
use nvshmem_host::uid::Uid;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("niin-ffi sits in the workspace")
        .to_path_buf()
}

/// The folder of the `libnvshmem_host.so` built with this test: next to the test binary
/// (`target/<profile>/deps`) or one level up. When neither has it, it is built into a
/// target folder of its own (not the one this cargo run holds locked).
fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test binary's path");
        let deps = exe.parent().expect("the deps folder").to_path_buf();
        for dir in [
            deps.clone(),
            deps.parent().map(Path::to_path_buf).unwrap_or(deps),
        ] {
            if dir.join("libnvshmem_host.so").is_file() {
                return dir;
            }
        }
        let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ffi-build");
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "niin-ffi", "--target-dir"])
            .arg(&target)
            .current_dir(repo())
            .status()
            .expect("cargo runs");
        assert!(status.success(), "cargo build -p niin-ffi failed");
        target.join("debug")
    })
}

fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c-programs");
    std::fs::create_dir_all(&dir).expect("the output folder");
    dir
}

/// The C compiler: `$CC`, else `cc`; `$CXX`, else `c++`.
fn compiler(cxx: bool) -> OsString {
    let (var, default) = if cxx { ("CXX", "c++") } else { ("CC", "cc") };
    std::env::var_os(var).unwrap_or_else(|| default.into())
}

/// Compiles `tests/c/<source>` into `name` with warnings as errors; `extra` adds flags
/// (defines, include folders). `link` links libnvshmem_host; otherwise only compiles.
fn compile(source: &str, name: &str, cxx: bool, extra: &[&str], link: bool) -> PathBuf {
    let root = repo();
    let out = out_dir().join(name);
    let mut cmd = Command::new(compiler(cxx));
    if cxx {
        cmd.args(["-std=c++17", "-x", "c++"]);
    } else {
        cmd.arg("-std=c11");
    }
    cmd.args(["-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg("-I")
        .arg(root.join("device/include"))
        .arg("-I")
        .arg(root.join("tests/c"))
        .args(extra)
        .arg(root.join("tests/c").join(source));
    if link {
        cmd.args(["-x", "none", "-o"])
            .arg(&out)
            .arg("-L")
            .arg(lib_dir())
            .arg("-lnvshmem_host");
    } else {
        cmd.args(["-c", "-o"]).arg(out.with_extension("o"));
    }
    let output = cmd.output().expect("the C compiler runs");
    assert!(
        output.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

fn program(name: &str) -> &'static Path {
    static PROGRAMS: OnceLock<Vec<(&'static str, PathBuf)>> = OnceLock::new();
    let all = PROGRAMS.get_or_init(|| {
        let fake_mpi = format!("-I{}", repo().join("tests/c/fake_mpi").display());
        vec![
            (
                "host_api",
                compile("host_api.c", "host_api", false, &[], true),
            ),
            (
                "host_api_cxx",
                compile("host_api.c", "host_api_cxx", true, &[], true),
            ),
            (
                "host_api_mpi",
                compile(
                    "host_api.c",
                    "host_api_mpi",
                    false,
                    &["-DNIIN_HAS_MPI", &fake_mpi],
                    true,
                ),
            ),
            (
                "host_rma",
                compile("host_rma.c", "host_rma", false, &[], true),
            ),
            (
                "host_rma_cxx",
                compile("host_rma.c", "host_rma_cxx", true, &[], true),
            ),
            (
                "wrong_use",
                compile("wrong_use.c", "wrong_use", false, &[], true),
            ),
            (
                "wrong_use_cxx",
                compile("wrong_use.c", "wrong_use_cxx", true, &[], true),
            ),
            (
                "mismatch",
                compile("mismatch.c", "mismatch", false, &[], true),
            ),
            (
                "peer_death",
                compile("peer_death.c", "peer_death", false, &[], true),
            ),
            (
                "extensions",
                compile("extensions.c", "extensions", false, &[], true),
            ),
            (
                "extensions_cxx",
                compile("extensions.c", "extensions_cxx", true, &[], true),
            ),
        ]
    });
    all.iter()
        .find(|(n, _)| *n == name)
        .map(|(_, p)| p.as_path())
        .expect("a known program")
}

/// Removes the mock files of a unique-ID job, whose id only the ID that PE 0 left in
/// the rendezvous folder knows (`host_api uid` publishes it there).
fn uid_job_cleanup() -> CleanupHook {
    CleanupHook::new("unique-ID mock job files", |job| {
        let Ok(bytes) = std::fs::read(job.rendezvous_dir.join("nvshmem-uid")) else {
            return Ok(());
        };
        let Some(internal) = bytes.get(4..128) else {
            return Ok(());
        };
        let mut id = [0u8; 124];
        id.copy_from_slice(internal);
        if let Some(job_id) = Uid::decode(&id).ok().and_then(|u| u.mock_job_id()) {
            for path in launch::mock_transport_paths(&job_id) {
                let _ = std::fs::remove_file(path);
            }
        }
        Ok(())
    })
}

fn run(n_pes: usize, program: &Path, args: &[&str]) -> JobOutcome {
    run_with_env(n_pes, program, args, &[])
}

/// As [`run`], with `env` added last (overriding the defaults).
fn run_with_env(n_pes: usize, program: &Path, args: &[&str], env: &[(&str, &str)]) -> JobOutcome {
    let mut spec = LaunchSpec::new(n_pes, program);
    spec.args = args.iter().map(Into::into).collect();
    spec.timeout = Some(Duration::from_secs(120));
    spec.output = OutputMode::Capture;
    spec.extra_env = vec![
        ("NIIN_TRANSPORT".into(), "mock".into()),
        ("NVSHMEM_SYMMETRIC_SIZE".into(), "16M".into()),
        ("NIIN_TIMEOUT".into(), "30".into()),
        ("LD_LIBRARY_PATH".into(), lib_dir().into()),
    ];
    spec.extra_env.extend(
        env.iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    spec.cleanup.push(CleanupHook::mock_transport());
    spec.cleanup.push(uid_job_cleanup());
    launch::run(&spec).expect("the launcher starts the job")
}

/// Every PE's output, for failure messages.
fn transcript(outcome: &JobOutcome) -> String {
    let mut text = String::new();
    for (pe, r) in outcome.pes.iter().enumerate() {
        text += &format!(
            "--- PE {pe}: {}\n{}--- stderr\n{}",
            r.status,
            String::from_utf8_lossy(&r.stdout),
            String::from_utf8_lossy(&r.stderr)
        );
    }
    text
}

/// Runs `program` and checks that the job succeeded; returns its outcome and transcript.
fn run_successful(n_pes: usize, program: &Path, args: &[&str]) -> (JobOutcome, String) {
    let outcome = run(n_pes, program, args);
    let text = transcript(&outcome);
    assert!(
        outcome.success(),
        "job failed: {:?}\n{text}",
        outcome.message()
    );
    (outcome, text)
}

/// Runs `program` and checks that every PE passed every check, wrote no `NIIN:` line,
/// and left no mock files behind.
fn run_clean(n_pes: usize, program: &Path, args: &[&str]) {
    let (outcome, text) = run_successful(n_pes, program, args);
    for r in &outcome.pes {
        let out = String::from_utf8_lossy(&r.stdout);
        assert!(out.contains("DONE failures=0"), "{text}");
        assert!(!out.contains("FAIL"), "{text}");
        assert!(out.contains("PASS putmem_on_stream_ring"), "{text}");
        assert!(out.contains("PASS putmem_signal_on_stream_data"), "{text}");
        for rounds in ["on_stream", "blocking", "mixed"] {
            assert!(
                out.contains(&format!("PASS barrier_rounds_{rounds}")),
                "{text}"
            );
        }
        // The typed and sized _on_stream checks: the 23 types plain C has (half and
        // bfloat16 need nvcc) and the 5 sizes, each its own PASS line.
        assert_eq!(
            out.matches("PASS on_stream_").count(),
            23 + 5,
            "typed/sized _on_stream checks:\n{text}"
        );
        assert_eq!(
            out.matches("PASS put_signal_on_stream_").count(),
            23 + 5,
            "typed/sized put_signal _on_stream checks:\n{text}"
        );
        assert_eq!(
            out.matches("PASS wait_until_on_stream_").count(),
            14,
            "typed wait_until _on_stream checks:\n{text}"
        );
        assert_eq!(
            out.matches("PASS wait_until_all_on_stream_").count(),
            14,
            "typed wait_until_all[_vector] _on_stream checks:\n{text}"
        );
        assert_eq!(
            out.matches("PASS p_g_on_stream_").count(),
            23,
            "typed p/g _on_stream checks:\n{text}"
        );
        assert_eq!(
            out.matches("PASS iput_iget_on_stream_").count(),
            23 + 5,
            "typed iput/iget _on_stream checks:\n{text}"
        );
        assert!(r.stderr.is_empty(), "no NIIN: line expected:\n{text}");
    }
    for path in launch::mock_transport_paths(&outcome.job.job_id) {
        assert!(!path.exists(), "{} was left behind", path.display());
    }
}

#[test]
fn host_api_with_two_and_four_pes() {
    run_clean(2, program("host_api"), &[]);
    run_clean(4, program("host_api"), &["env"]);
}

#[test]
fn host_api_as_cxx() {
    run_clean(2, program("host_api_cxx"), &[]);
}

#[test]
fn host_api_through_the_unique_id_bootstrap() {
    run_clean(2, program("host_api"), &["uid"]);
    run_clean(4, program("host_api"), &["uid"]);
}

#[test]
fn host_api_through_the_headers_mpi_path() {
    run_clean(3, program("host_api_mpi"), &["mpi"]);
}

/// The check names `host_rma.c` prints for the 23 RMA types of plain C, the 5 sizes, and
/// the 12 standard, 7 bitwise and 2 extended AMO types, each prefix with its count.
const HOST_RMA_CHECKS: &[(&str, usize)] = &[
    ("PASS host_get_", 23 * 2), // get, get_nbi
    ("PASS host_get_nbi_", 23),
    ("PASS host_g_", 23),
    ("PASS host_put_", 23 * 3), // put, put_bounds, put_nbi
    ("PASS host_p_", 23),
    ("PASS host_iput_", 23),
    ("PASS host_iget_", 23),
    ("PASS host_put8", 1),
    ("PASS host_get128", 1),
    ("PASS host_iput", 23 + 5),
    ("PASS host_iget", 23 + 5),
    ("PASS host_atomic_swap_", 14),
    ("PASS host_atomic_fetch_", 14 + 12 + 7 * 3), // fetch; fetch_add; fetch_{or,and,xor}_old
    ("PASS host_atomic_add_", 12),
    ("PASS host_atomic_compare_swap_", 12 * 2),
    ("PASS host_atomic_or_", 7),
    ("PASS host_atomic_and_", 7),
    ("PASS host_atomic_xor_", 7),
];

/// The typed and sized host RMA and the host atomics (`tests/c/host_rma.c`): every check
/// passes on every PE, each family with its count of checks, and no `NIIN:` line.
fn host_rma_clean(n_pes: usize, name: &str) {
    let (outcome, text) = run_successful(n_pes, program(name), &[]);
    for r in &outcome.pes {
        let out = String::from_utf8_lossy(&r.stdout);
        assert!(
            out.contains("DONE failures=0") && !out.contains("FAIL"),
            "{text}"
        );
        for (prefix, count) in HOST_RMA_CHECKS {
            assert_eq!(out.matches(prefix).count(), *count, "{prefix}:\n{text}");
        }
        assert!(r.stderr.is_empty(), "no NIIN: line expected:\n{text}");
    }
}

#[test]
fn host_typed_rma_and_atomics_with_two_three_and_four_pes() {
    host_rma_clean(2, "host_rma");
    host_rma_clean(3, "host_rma");
    host_rma_clean(4, "host_rma");
}

#[test]
fn host_typed_rma_and_atomics_as_cxx() {
    host_rma_clean(2, "host_rma_cxx");
}

/// A plain `nvshmem_init` under a launcher that gives no job id and no rendezvous
/// (MPICH Hydra's variables, both processes on this node): the processes find each other
/// by their common parent, this test (`ppid-<pid>`), with nothing set for niin-rs.
#[test]
fn plain_init_on_one_node_needs_no_niin_variables() {
    let n = 2;
    let children: Vec<_> = (0..n)
        .map(|rank| {
            Command::new(program("host_api"))
                .arg("env")
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("LD_LIBRARY_PATH", lib_dir())
                .env("NIIN_TRANSPORT", "mock")
                .env("NVSHMEM_SYMMETRIC_SIZE", "16M")
                .env("NIIN_TIMEOUT", "30")
                .env("PMI_RANK", rank.to_string())
                .env("PMI_SIZE", n.to_string())
                .env("MPI_LOCALRANKID", rank.to_string())
                .env("MPI_LOCALNRANKS", n.to_string())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("the program starts")
        })
        .collect();
    let outputs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("the program ends"))
        .collect();
    for path in launch::mock_transport_paths(&format!("ppid-{}", std::process::id())) {
        let _ = std::fs::remove_file(path);
    }
    for (rank, out) in outputs.iter().enumerate() {
        let text = format!(
            "rank {rank}: {}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{text}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("DONE failures=0") && !stdout.contains("FAIL"),
            "{text}"
        );
    }
}

/// Checks a PE of a program that counts the `NIIN:` lines it provokes: its stdout says
/// "DONE failures=0" (no FAIL line) and "EXPECT_NIIN_LINES <k>", and `lines` are k lines.
fn assert_counted_lines(stdout: &[u8], lines: &[&str], text: &str) {
    let out = String::from_utf8_lossy(stdout);
    assert!(
        out.contains("DONE failures=0") && !out.contains("FAIL"),
        "{text}"
    );
    let expected: usize = out
        .lines()
        .find_map(|l| l.strip_prefix("EXPECT_NIIN_LINES "))
        .and_then(|n| n.trim().parse().ok())
        .expect("the program says how many lines it expects");
    assert_eq!(lines.len(), expected, "NIIN: lines:\n{text}");
}

#[test]
fn wrong_use_gives_errors_and_one_line_each() {
    for name in ["wrong_use", "wrong_use_cxx"] {
        let (outcome, text) = run_successful(2, program(name), &[]);
        for r in &outcome.pes {
            let err = String::from_utf8_lossy(&r.stderr);
            let lines: Vec<&str> = err.lines().collect();
            assert_counted_lines(&r.stdout, &lines, &text);
            for line in lines {
                let rest = line
                    .strip_prefix("NIIN: ")
                    .expect("every line is a NIIN: line");
                let (function, what) = rest.split_once(": ").expect("NIIN: <function>: <what>");
                assert!(
                    !function.is_empty()
                        && function
                            .bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                    "{line}"
                );
                assert!(!what.trim().is_empty(), "{line}");
            }
        }
    }
}

#[test]
fn collective_mismatches_are_errors_naming_both_calls_on_every_pe() {
    for n_pes in [2, 3] {
        let (outcome, text) = run_successful(n_pes, program("mismatch"), &[]);
        for (pe, r) in outcome.pes.iter().enumerate() {
            let err = String::from_utf8_lossy(&r.stderr);
            let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("NIIN: ")).collect();
            assert_counted_lines(&r.stdout, &lines, &text);
            // The first names PE 0's malloc(256) and another PE's malloc(512); the second
            // PE 0's barrier against a malloc(64).
            assert!(
                lines[0].contains("collective mismatch")
                    && lines[0].contains("nvshmem_malloc(256)")
                    && lines[0].contains("nvshmem_malloc(512)"),
                "PE {pe}: {}",
                lines[0]
            );
            assert!(
                lines[1].contains("collective mismatch")
                    && lines[1].contains("nvshmem_barrier_all()")
                    && lines[1].contains("nvshmem_malloc(64)"),
                "PE {pe}: {}",
                lines[1]
            );
        }
    }
}

#[test]
fn a_pe_killed_during_a_barrier_is_named_by_the_survivors_and_blamed() {
    let outcome = run(3, program("peer_death"), &[]);
    let text = transcript(&outcome);
    assert_eq!(outcome.failed_pe(), Some(2), "{text}");
    assert_eq!(outcome.exit_code(), 137, "{text}");
    for r in &outcome.pes[..2] {
        let out = String::from_utf8_lossy(&r.stdout);
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(
            err.lines()
                .any(|l| l.starts_with("NIIN: nvshmem_barrier_all: ")
                    && l.contains("PE 2 died (killed by signal 9")),
            "{text}"
        );
        // at once (niinrun would stop it 0.5 s after PE 2's death), and finalize returns
        assert!(out.contains("SURVIVOR barrier returned after"), "{text}");
        assert!(out.contains("SURVIVOR finalized"), "{text}");
    }
}

#[test]
fn global_exit_ends_the_job_with_its_status() {
    let outcome = run(2, program("wrong_use"), &["exit"]);
    let text = transcript(&outcome);
    assert_eq!(outcome.failed_pe(), Some(0), "{text}");
    assert_eq!(outcome.exit_code(), 7, "{text}");
    assert_eq!(outcome.pes[0].status, launch::PeStatus::Exited(7), "{text}");
}

#[test]
fn a_failed_nvshmem_init_exits_with_one_line() {
    let outcome = run_with_env(
        1,
        program("host_api"),
        &[],
        &[("NIIN_TRANSPORT", "nonsense")],
    );
    let text = transcript(&outcome);
    assert_eq!(outcome.pes[0].status, launch::PeStatus::Exited(1), "{text}");
    let err = String::from_utf8_lossy(&outcome.pes[0].stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(
        lines[0].starts_with("NIIN: nvshmem_init: ")
            && lines[0].contains("NIIN_TRANSPORT=\"nonsense\"")
            && lines[0].contains("exiting with status 1"),
        "{text}"
    );
}

#[test]
fn headers_compile_alone_in_c_and_cxx() {
    let source = out_dir().join("headers_only.c");
    std::fs::write(
        &source,
        "#include <nvshmem.h>\n#include <nvshmemx.h>\n#include <nvshmem.h>\n\
         int headers_only(void);\n\
         int headers_only(void) {\n\
           nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;\n\
           nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;\n\
           nvshmem_team_config_t config = NVSHMEM_TEAM_CONFIG_INITIALIZER;\n\
           nvshmem_team_t team = NVSHMEM_TEAM_WORLD;\n\
           nvshmemx_init_init_attr_ver_only(attr);\n\
           return attr.args.uid_args.myrank + id.version + config.num_contexts + team +\n\
                  NIIN_ON_NOT_IMPLEMENTED + NVSHMEM_VENDOR_VERSION;\n\
         }\n",
    )
    .unwrap();
    let root = repo();
    let include = root.join("device/include");
    let try_compile = |cc: OsString, std: &str, lang: &str, extra: &[&str]| {
        Command::new(cc)
            .args([
                std,
                "-x",
                lang,
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                "-c",
            ])
            .arg("-I")
            .arg(&include)
            .args(extra)
            .arg(&source)
            .arg("-o")
            .arg(out_dir().join("headers_only.o"))
            .output()
            .expect("the compiler runs")
    };
    for (cxx, std, lang) in [
        (false, "-std=c11", "c"),
        (true, "-std=c++11", "c++"),
        (true, "-std=c++17", "c++"),
    ] {
        for extra in [&[][..], &["-DNIIN_ON_NOT_IMPLEMENTED=NIIN_WARN"][..]] {
            let out = try_compile(compiler(cxx), std, lang, extra);
            assert!(
                out.status.success(),
                "{std} {extra:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let out = try_compile(
        compiler(false),
        "-std=c11",
        "c",
        &["-DNIIN_ON_NOT_IMPLEMENTED=NIIN_TRAPS"],
    );
    assert!(!out.status.success(), "an unknown policy is refused");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NIIN_ON_NOT_IMPLEMENTED must be"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The value after `prefix` on a line of `out`.
fn expected(out: &str, prefix: &str) -> usize {
    out.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("the program prints {prefix}"))
}

#[test]
fn extensions_refuse_loudly_and_the_error_macros_print_like_nvshmem() {
    let source = repo().join("tests/c/extensions.c");
    let file = source.to_string_lossy().into_owned();
    for name in ["extensions", "extensions_cxx"] {
        let (outcome, text) = run_successful(2, program(name), &[]);
        for (pe, r) in outcome.pes.iter().enumerate() {
            let out = String::from_utf8_lossy(&r.stdout);
            assert!(
                out.contains("DONE failures=0") && !out.contains("FAIL"),
                "{text}"
            );
            let err = String::from_utf8_lossy(&r.stderr);
            let niin: Vec<&str> = err.lines().filter(|l| l.starts_with("NIIN: ")).collect();
            assert_eq!(niin.len(), expected(&out, "EXPECT_NIIN_LINES "), "{text}");
            for function in [
                "nvshmemx_cumodule_init",
                "nvshmemx_cumodule_finalize",
                "nvshmemx_culibrary_init",
                "nvshmemx_culibrary_finalize",
                "nvshmemx_buffer_register_symmetric",
                "nvshmemx_buffer_unregister_symmetric",
            ] {
                assert!(
                    niin.iter()
                        .any(|l| l.starts_with(&format!("NIIN: {function}: "))),
                    "{function}: {text}"
                );
            }
            assert!(
                niin.iter()
                    .any(|l| l.contains("mock transport") && l.contains("nvshmemx_cumodule_init")),
                "{text}"
            );
            assert!(
                niin.iter()
                    .any(|l| l.contains("as symmetric memory on the mock transport")),
                "{text}"
            );
            let macros: Vec<&str> = err.lines().filter(|l| l.starts_with(&file)).collect();
            assert_eq!(
                macros.len(),
                expected(&out, "EXPECT_MACRO_LINES "),
                "{text}"
            );
            assert_eq!(
                err.lines().count(),
                niin.len() + macros.len(),
                "only NIIN: and macro lines: {text}"
            );
            if pe != 0 {
                continue;
            }
            // NVSHMEM's formats: "<file>:<line>: <what>" (the JMP macros) and
            // "<file>:<function>:<line>: <message>" (NVSHMEMI_ERROR_PRINT).
            for (what, message) in [
                ("non-zero status: 7 ", "jump 1"),
                ("NULL value ", "pointer p"),
                ("error status: 3 ", "equal"),
                ("non-zero status: 5 ", "not zero"),
                ("non-zero status: -7 ", "nz"),
                ("", "check 2"),
            ] {
                let found = macros.iter().any(|l| {
                    l.strip_prefix(&file)
                        .and_then(|r| r.strip_prefix(':'))
                        .and_then(|r| r.split_once(": "))
                        .is_some_and(|(line, rest)| {
                            line.parse::<u32>().is_ok() && rest == format!("{what}{message}")
                        })
                });
                assert!(found, "{what}{message}: {text}");
            }
            assert!(
                macros.iter().any(|l| {
                    l.strip_prefix(&format!("{file}:error_macros:"))
                        .and_then(|r| r.split_once(": "))
                        .is_some_and(|(line, rest)| {
                            line.parse::<u32>().is_ok() && rest == "printed error"
                        })
                }),
                "NVSHMEMI_ERROR_PRINT: {text}"
            );
            assert!(out.lines().any(|l| l == "WARN: a warning 9"), "{text}");
        }
    }
}

#[test]
fn nz_exit_exits_with_minus_one_after_its_line() {
    let outcome = run(1, program("extensions"), &["exit"]);
    let text = transcript(&outcome);
    assert_eq!(
        outcome.pes[0].status,
        launch::PeStatus::Exited(255),
        "{text}"
    );
    let err = String::from_utf8_lossy(&outcome.pes[0].stderr);
    assert!(
        err.lines().any(|l| l.ends_with(
            ": non-zero status: 3: No such file or directory, exiting... exiting on purpose"
        )),
        "{text}"
    );
}

#[test]
fn launch_header_and_fp16_declarations_compile_with_cuda_headers() {
    let cuda = repo().join(".cuda/cuda/include");
    if !cuda.join("cuda_runtime_api.h").is_file() {
        eprintln!(
            "skipped: no CUDA headers in {} (scripts/install-cuda-toolchain.sh .cuda)",
            cuda.display()
        );
        return;
    }
    let include = format!("-I{}", cuda.display());
    for (cxx, name) in [
        (false, "extensions_cuda_c"),
        (true, "extensions_cuda_cxx17"),
    ] {
        compile("extensions.c", name, cxx, &[&include], false);
    }
    // C++11 too (compile() uses C++17).
    let out = Command::new(compiler(true))
        .args([
            "-std=c++11",
            "-x",
            "c++",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-c",
        ])
        .arg("-I")
        .arg(repo().join("device/include"))
        .arg("-I")
        .arg(repo().join("tests/c"))
        .arg(&include)
        .arg(repo().join("tests/c/extensions.c"))
        .arg("-o")
        .arg(out_dir().join("extensions_cuda_cxx11.o"))
        .output()
        .expect("the C++ compiler runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The C++ object holds the launch functions (C++ linkage, as NVSHMEM's) and refers to
    // the CUDA runtime they call; the C object has them as static functions.
    let nm = Command::new("nm")
        .args(["-C"])
        .arg(out_dir().join("extensions_cuda_cxx17.o"))
        .output()
        .expect("nm runs");
    let symbols = String::from_utf8_lossy(&nm.stdout);
    assert!(
        symbols.contains("nvshmemx_collective_launch(void const*, dim3, dim3, void**, unsigned long, CUstream_st*)"),
        "{symbols}"
    );
    assert!(symbols.contains("cudaLaunchCooperativeKernel"), "{symbols}");
    assert!(symbols.contains("nvshmemx_half_put_on_stream"), "{symbols}");
}
