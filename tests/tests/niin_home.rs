//! NIIN_HOME as a user gets it: `scripts/build-niin-home.sh` lays one out, and NVSHMEM
//! programs built from it through CMake, pkg-config and the plain link line run under its
//! own `niinrun`, without `LD_LIBRARY_PATH`.
//!
//! - The tree is laid out from the `libnvshmem_host.so` and `niinrun` of this workspace's
//!   build (`target/debug`, which `cargo test --workspace` builds before any test runs;
//!   where either is missing, as under `cargo test -p niin-tests`, both are built into a
//!   target folder of this test's own), through the script's `--lib` and `--niinrun`, then
//!   moved: the CMake and pkg-config files must find it from where they are.
//! - `examples/cmake`: configured with `-DCMAKE_PREFIX_PATH=<NIIN_HOME>`
//!   (`find_package(nvshmem 3.4 REQUIRED)`, `nvshmem::nvshmem_host`), built, and run with
//!   2 PEs on the mock. A second, generated project checks what the package offers:
//!   `find_package(NVSHMEM 3.4.5 EXACT)`, the three targets, NCCL's include folder from
//!   `NCCL_INCLUDE_DIR` and `NCCL_HOME`, and that 3.5 is not found.
//! - `examples/pkg-config`: its `build.sh` (`pkg-config --cflags --libs nvshmem`), run
//!   with 2 PEs.
//! - The plain link line (`-I -L -Wl,-rpath -lnvshmem_host`), run with 2 PEs.
//! - The Python wheel (`scripts/build-wheel.py --home`), pip-installed into a folder: what
//!   `python -m niin_rs` reports, and programs built from the installed package (its
//!   `--libs`, `-lnvshmem`, CMake through `--cmake-prefix`) run under the `niinrun`
//!   console script.
//!
//! Tools: `cmake` with `make` or `ninja`, and `pkg-config` or `pkgconf`, from `PATH`. One
//! that is missing is installed from PyPI into `target/tools/<wheel>` with
//! `python3 -m pip install --target` (wheels `cmake`, `ninja`, `pkgconf`; `$PYTHON` names
//! another python); when that fails too, the test fails, naming the tool and how to
//! install it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

/// This test's scratch folder, `target/tmp/niin-home`.
fn scratch() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("niin-home")
}

/// The target folder (`target/`), where `tools/` goes.
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is target/tmp")
        .to_path_buf()
}

/// Runs `cmd`, panicking with its output unless it succeeds; returns its output.
fn run_ok(cmd: &mut Command) -> Output {
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?} did not start: {e}"));
    assert!(
        output.status.success(),
        "{cmd:?} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `libnvshmem_host.so` and `niinrun` of this workspace's debug build: next to the test
/// binary's `deps` folder, else built into `target/tmp/niin-home-build` (a target folder
/// other than the one this cargo run holds locked).
fn artifacts() -> (PathBuf, PathBuf) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary sits in target/<profile>/deps");
    let (lib, niinrun) = (profile.join("libnvshmem_host.so"), profile.join("niinrun"));
    if lib.is_file() && niinrun.is_file() {
        return (lib, niinrun);
    }
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("niin-home-build");
    run_ok(
        Command::new(env!("CARGO"))
            .args(["build", "-p", "niin-ffi", "-p", "niin-api", "--lib"])
            .args(["--bin", "niinrun", "--target-dir"])
            .arg(&target)
            .current_dir(repo()),
    );
    let debug = target.join("debug");
    (debug.join("libnvshmem_host.so"), debug.join("niinrun"))
}

/// What an NIIN_HOME holds (`lib/libnvshmem.so`: a link to the library in a laid-out tree,
/// a linker script in the wheel).
const HOME_FILES: &[&str] = &[
    "bin/niinrun",
    "include/nvshmem.h",
    "include/nvshmemx.h",
    "lib/libnvshmem_host.so",
    "lib/libnvshmem.so",
    "lib/cmake/nvshmem/nvshmem-config.cmake",
    "lib/cmake/nvshmem/nvshmem-config-version.cmake",
    "lib/cmake/nvshmem/NVSHMEMConfig.cmake",
    "lib/cmake/nvshmem/NVSHMEMConfigVersion.cmake",
    "lib/pkgconfig/nvshmem.pc",
];

/// The NIIN_HOME of this run: laid out by the script, then moved to another folder.
fn niin_home() -> &'static Path {
    static HOME: OnceLock<PathBuf> = OnceLock::new();
    HOME.get_or_init(|| {
        let dir = scratch();
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the scratch folder");
        let (lib, niinrun) = artifacts();
        let laid_out = dir.join("laid-out");
        let out = run_ok(
            Command::new("bash")
                .arg(repo().join("scripts/build-niin-home.sh"))
                .arg("--lib")
                .arg(&lib)
                .arg("--niinrun")
                .arg(&niinrun)
                .arg(&laid_out),
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("NVSHMEM API 3.4.5"), "{text}");
        let home = dir.join("NIIN_HOME");
        std::fs::rename(&laid_out, &home).expect("NIIN_HOME moves");
        for file in HOME_FILES {
            assert!(home.join(file).exists(), "NIIN_HOME has no {file}");
        }
        home
    })
}

/// A tool: `names` on `PATH` (first that runs wins), else `wheel` installed by pip into
/// `target/tools/<wheel>`, where the program is at one of `in_wheel`.
struct Tool {
    what: &'static str,
    names: &'static [&'static str],
    wheel: &'static str,
    in_wheel: &'static [&'static str],
}

const CMAKE: Tool = Tool {
    what: "cmake",
    names: &["cmake"],
    wheel: "cmake",
    in_wheel: &["cmake/data/bin/cmake"],
};
const BUILD_TOOL: Tool = Tool {
    what: "a build tool for CMake (make or ninja)",
    names: &["make", "ninja"],
    wheel: "ninja",
    in_wheel: &["bin/ninja", "ninja/data/bin/ninja"],
};
const PKG_CONFIG: Tool = Tool {
    what: "pkg-config",
    names: &["pkg-config", "pkgconf"],
    wheel: "pkgconf",
    in_wheel: &["pkgconf/.bin/pkgconf"],
};

/// Whether `program --version` runs and succeeds.
fn runs(program: &OsStr) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The path of `tool`, installing it with pip when it is missing; panics, naming it and how
/// to install it, when that fails too.
fn find_tool(tool: &Tool) -> PathBuf {
    // One pip at a time: the tests run in parallel.
    static PIP: Mutex<()> = Mutex::new(());
    for name in tool.names {
        if runs(OsStr::new(name)) {
            return PathBuf::from(name);
        }
    }
    let prefix = target_dir().join("tools").join(tool.wheel);
    let installed = || {
        tool.in_wheel
            .iter()
            .map(|p| prefix.join(p))
            .find(|p| runs(p.as_os_str()))
    };
    let _pip = PIP.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(path) = installed() {
        return path;
    }
    let python = python();
    let pip = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--disable-pip-version-check",
            "-q",
        ])
        .arg("--target")
        .arg(&prefix)
        .arg(tool.wheel)
        .output();
    let why = match &pip {
        Ok(o) if o.status.success() => "pip installed it, but the program does not run".into(),
        Ok(o) => format!(
            "{}: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => format!("{python:?} did not start: {e}"),
    };
    installed().unwrap_or_else(|| {
        panic!(
            "{} is missing: none of {:?} runs from PATH, and `{} -m pip install --target {} {}` \
             failed: {why}\nInstall it (e.g. `apt-get install cmake pkg-config make` or \
             `python3 -m pip install {}`) and run the test again.",
            tool.what,
            tool.names,
            python.to_string_lossy(),
            prefix.display(),
            tool.wheel,
            tool.wheel
        )
    })
}

/// Runs `program` with 2 PEs under NIIN_HOME's niinrun on the mock, without
/// LD_LIBRARY_PATH, and checks that both PEs print the example's OK line.
fn run_app(program: &Path) {
    run_app_under(Command::new(niin_home().join("bin/niinrun")), program);
}

/// Runs `program` with 2 PEs under `niinrun` (a launcher command, its own environment
/// set) on the mock, without LD_LIBRARY_PATH, and checks both PEs' OK lines.
fn run_app_under(mut niinrun: Command, program: &Path) {
    let output = niinrun
        .args(["-n", "2", "--timeout", "120"])
        .arg(program)
        // cargo puts target/debug (which has a libnvshmem_host.so) on the test's
        // LD_LIBRARY_PATH: the program must find NIIN_HOME's library by its rpath alone.
        .env_remove("LD_LIBRARY_PATH")
        .env("NIIN_TRANSPORT", "mock")
        .env("NIIN_TIMEOUT", "60")
        // Small heaps: the job must fit a container's 64 MiB /dev/shm.
        .env("NVSHMEM_SYMMETRIC_SIZE", "4M")
        .output()
        .unwrap_or_else(|e| panic!("{niinrun:?} did not start: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let all = format!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        output.status.success(),
        "{niinrun:?} -n 2 {} failed ({}):\n{all}",
        program.display(),
        output.status
    );
    for (pe, prev) in [(0, 1), (1, 0)] {
        let line = format!(
            "[pe {pe}] app: PE {pe} of 2 got {} from PE {prev}: OK",
            1000 + prev
        );
        assert!(stdout.contains(&line), "no `{line}` in:\n{all}");
    }
}

/// `cmake` with the generator for the build tool found (make, else ninja).
fn cmake() -> Command {
    let mut cmd = Command::new(find_tool(&CMAKE));
    let build_tool = find_tool(&BUILD_TOOL);
    if build_tool.file_name() != Some(OsStr::new("make")) {
        cmd.args(["-G", "Ninja"])
            .arg(format!("-DCMAKE_MAKE_PROGRAM={}", build_tool.display()));
    }
    cmd
}

#[test]
fn cmake_example_builds_and_runs() {
    let home = niin_home();
    let app = build_cmake_example(&scratch().join("cmake-build"), home);
    run_app(&app);
}

/// Configures `examples/cmake` in `build` with `prefix` as CMAKE_PREFIX_PATH, builds it,
/// and returns the program's path.
fn build_cmake_example(build: &Path, prefix: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(build);
    run_ok(
        cmake()
            .arg("-S")
            .arg(repo().join("examples/cmake"))
            .arg("-B")
            .arg(build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display())),
    );
    run_ok(Command::new(find_tool(&CMAKE)).arg("--build").arg(build));
    build.join("app")
}

/// What the CMake package offers, besides the example's use: both spellings, the version
/// check, the three targets and the NCCL hints. Configure only (no language).
#[test]
fn cmake_package_targets_versions_and_nccl_hints() {
    let home = niin_home();
    let project = scratch().join("cmake-package");
    let _ = std::fs::remove_dir_all(&project);
    let nccl = project.join("nccl");
    std::fs::create_dir_all(nccl.join("include")).expect("the fake NCCL folder");
    std::fs::write(nccl.join("include/nccl.h"), "").expect("a fake nccl.h");
    std::fs::write(
        project.join("CMakeLists.txt"),
        r#"cmake_minimum_required(VERSION 3.18)
project(niin_package_check LANGUAGES NONE)
find_package(NVSHMEM 3.4.5 EXACT REQUIRED)
find_package(nvshmem 3.4 REQUIRED)
find_package(nvshmem 3.5 QUIET)
if(nvshmem_FOUND)
  message(FATAL_ERROR "find_package(nvshmem 3.5) found ${NVSHMEM_VERSION}")
endif()
foreach(t nvshmem_host nvshmem_device nvshmem)
  if(NOT TARGET nvshmem::${t})
    message(FATAL_ERROR "no target nvshmem::${t}")
  endif()
endforeach()
get_target_property(type nvshmem::nvshmem_host TYPE)
get_target_property(location nvshmem::nvshmem_host IMPORTED_LOCATION)
get_target_property(device_type nvshmem::nvshmem_device TYPE)
get_target_property(device_includes nvshmem::nvshmem_device INTERFACE_INCLUDE_DIRECTORIES)
get_target_property(both nvshmem::nvshmem INTERFACE_LINK_LIBRARIES)
message(STATUS "niin-check version=${NVSHMEM_VERSION}")
message(STATUS "niin-check host=${type} ${location}")
message(STATUS "niin-check device=${device_type} ${device_includes}")
message(STATUS "niin-check both=${both}")
message(STATUS "niin-check dirs=${NVSHMEM_INCLUDE_DIR} ${NVSHMEM_LIB_DIR} ${NVSHMEM_BIN_DIR}")
"#,
    )
    .expect("the check project");
    let configure = |build: &str, hint: &[String], env_hint: Option<(&str, &Path)>| {
        let mut cmd = cmake();
        cmd.arg("-S")
            .arg(&project)
            .arg("-B")
            .arg(project.join(build))
            .arg(format!("-DCMAKE_PREFIX_PATH={}", home.display()))
            .args(hint)
            .env_remove("NCCL_HOME")
            .env_remove("NCCL_INCLUDE_DIR");
        if let Some((var, value)) = env_hint {
            cmd.env(var, value);
        }
        String::from_utf8_lossy(&run_ok(&mut cmd).stdout).into_owned()
    };
    let nccl_include = nccl.join("include");
    let with_dir = configure(
        "b1",
        &[format!("-DNCCL_INCLUDE_DIR={}", nccl_include.display())],
        None,
    );
    let (h, i) = (home.display(), nccl_include.display());
    for want in [
        "niin-check version=3.4.5".to_string(),
        format!("niin-check host=SHARED_LIBRARY {h}/lib/libnvshmem_host.so"),
        format!("niin-check device=INTERFACE_LIBRARY {h}/include;{i}"),
        "niin-check both=nvshmem::nvshmem_host;nvshmem::nvshmem_device".to_string(),
        format!("niin-check dirs={h}/include {h}/lib {h}/bin"),
    ] {
        assert!(with_dir.contains(&want), "no `{want}` in:\n{with_dir}");
    }
    let with_home = configure("b2", &[], Some(("NCCL_HOME", nccl.as_path())));
    let want = format!("niin-check device=INTERFACE_LIBRARY {h}/include;{i}");
    assert!(with_home.contains(&want), "no `{want}` in:\n{with_home}");
    let without = configure("b3", &[], None);
    let want = format!("niin-check device=INTERFACE_LIBRARY {h}/include\n");
    assert!(without.contains(&want), "no `{want}` in:\n{without}");
}

#[test]
fn pkg_config_example_builds_and_runs() {
    let home = niin_home();
    let out = scratch().join("pkg-config-app");
    let pkg_config = find_tool(&PKG_CONFIG);
    let flags = run_ok(
        Command::new(&pkg_config)
            .args(["--cflags", "--libs", "nvshmem"])
            .env("PKG_CONFIG_PATH", home.join("lib/pkgconfig")),
    );
    let flags = String::from_utf8_lossy(&flags.stdout);
    assert!(flags.contains("-Wl,-rpath,"), "no rpath in {flags}");
    run_ok(
        Command::new("sh")
            .arg(repo().join("examples/pkg-config/build.sh"))
            .arg(&out)
            .env("PKG_CONFIG", &pkg_config)
            .env("PKG_CONFIG_PATH", home.join("lib/pkgconfig")),
    );
    run_app(&out);
}

#[test]
fn plain_link_line_builds_and_runs() {
    let home = niin_home();
    let out = scratch().join("plain-app");
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let lib = home.join("lib");
    run_ok(
        Command::new(cc)
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
            .arg(repo().join("examples/pkg-config/app.c"))
            .arg(format!("-I{}", home.join("include").display()))
            .arg(format!("-L{}", lib.display()))
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            .arg("-lnvshmem_host")
            .arg("-o")
            .arg(&out),
    );
    run_app(&out);
}

/// The Python interpreter: `$PYTHON`, else `python3`.
fn python() -> std::ffi::OsString {
    std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into())
}

/// Issue 16 part 6: the wheel of `scripts/build-wheel.py`, made from this NIIN_HOME and
/// installed by pip (`--target`, no network), is a working NIIN_HOME: `python -m niin_rs`
/// names the installed folder and flags; a C program linked with those flags, and one
/// linked with `-lnvshmem` (the wheel's linker script), and the CMake example configured
/// with `--cmake-prefix`, run with 2 PEs under the `niinrun` console script.
#[test]
fn python_wheel_installs_and_runs() {
    let home = niin_home();
    let dir = scratch().join("wheel");
    let _ = std::fs::remove_dir_all(&dir);
    let python = python();
    let dist = dir.join("dist");
    run_ok(
        Command::new(&python)
            .arg(repo().join("scripts/build-wheel.py"))
            .arg("--home")
            .arg(home)
            .arg("--out")
            .arg(&dist),
    );
    let wheels: Vec<PathBuf> = std::fs::read_dir(&dist)
        .expect("the wheel's folder")
        .map(|e| e.expect("a folder entry").path())
        .filter(|p| p.extension() == Some(OsStr::new("whl")))
        .collect();
    assert_eq!(
        wheels.len(),
        1,
        "one wheel expected in {}: {wheels:?}",
        dist.display()
    );
    let wheel = &wheels[0];
    let file = wheel.file_name().unwrap().to_string_lossy().into_owned();
    let prefix = format!(
        "niin_rs-{}-py3-none-manylinux_2_",
        env!("CARGO_PKG_VERSION")
    );
    assert!(
        file.starts_with(&prefix),
        "{file} does not start with {prefix}"
    );

    let site = dir.join("site");
    run_ok(
        Command::new(&python)
            .args(["-m", "pip", "install", "--no-deps", "--no-index"])
            .args(["--disable-pip-version-check", "-q", "--target"])
            .arg(&site)
            .arg(wheel),
    );
    let query = |flag: &str| -> String {
        let out = run_ok(
            Command::new(&python)
                .args(["-m", "niin_rs", flag])
                .env("PYTHONPATH", &site),
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let package = site.join("niin_rs");
    assert_eq!(query("--home"), package.display().to_string());
    assert_eq!(query("--version"), env!("CARGO_PKG_VERSION"));
    for file in HOME_FILES {
        assert!(package.join(file).exists(), "the wheel installed no {file}");
    }
    let console_script = || {
        let mut cmd = Command::new(site.join("bin/niinrun"));
        cmd.env("PYTHONPATH", &site);
        cmd
    };
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let lib = query("--lib");
    for (name, libs) in [
        ("app-libs", query("--libs")),
        (
            "app-lnvshmem",
            format!("-L{lib} -Wl,-rpath,{lib} -lnvshmem"),
        ),
    ] {
        let out = dir.join(name);
        run_ok(
            Command::new(&cc)
                .args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
                .arg(repo().join("examples/pkg-config/app.c"))
                .args(query("--cflags").split_whitespace())
                .args(libs.split_whitespace())
                .arg("-o")
                .arg(&out),
        );
        run_app_under(console_script(), &out);
    }

    let prefix = PathBuf::from(query("--cmake-prefix"));
    let app = build_cmake_example(&dir.join("cmake-build"), &prefix);
    run_app_under(console_script(), &app);
}
