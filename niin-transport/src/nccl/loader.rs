//! Finding, opening and checking libnccl.so.2: the search order, the process-wide
//! instance and the raw table it holds.
//!
//! The search ([`search`]) is a pure function of an injectable environment
//! ([`SearchEnv`]: how to read a variable, where Python's site-packages are) and of an
//! "open" closure, so every rule below is unit-tested without NCCL. [`Nccl::load`] runs it
//! once per process over the real environment, with `dlopen`.
//!
//! Search order (the first library that opens is used, with the exceptions noted):
//!
//! 1. **Already loaded**: `dlopen("libnccl.so.2", RTLD_NOLOAD)`, a libnccl the application
//!    linked or PyTorch (or anything else) already loaded. If there is one, it is the one
//!    used, whatever the variables below say: two NCCLs in one process cannot share a
//!    communicator, and mixing them crashes. A library found here that is too old is an
//!    error ([`NcclError::TooOld`]), not a reason to load another.
//! 2. **`NIIN_NCCL_LIBRARY`**: the path of a libnccl.so.2 file. When set, it is the only
//!    other candidate: if it cannot be opened, or is too old, loading fails (the user asked
//!    for that file; silently using another would hide the mistake).
//! 3. **`$NCCL_HOME/lib/libnccl.so.2`**, when `NCCL_HOME` is set.
//! 4. **The system loader**: `dlopen("libnccl.so.2")` (`LD_LIBRARY_PATH`, the executable's
//!    RUNPATH, `ld.so.cache`, the default directories).
//! 5. **The nvidia-nccl-cu13 / nvidia-nccl-cu12 wheel of the active Python**:
//!    `<site-packages>/nvidia/nccl/lib/libnccl.so.2` (both wheels install there) for each
//!    site-packages directory of, in order: `$VIRTUAL_ENV`, `$CONDA_PREFIX`
//!    (`lib/python3*/site-packages`), the entries of `$PYTHONPATH`, and what `python3`
//!    reports (`sysconfig` purelib, `site.getsitepackages()`, the user site). `python3` is
//!    only run when steps 1–4 found nothing.
//!
//! `NIIN_NCCL_LIBRARY` or `NCCL_HOME` set to bytes that are not valid UTF-8 is an error
//! naming the variable, before any step (it is never read as unset).
//!
//! From step 3 on, a library that opens but is older than [`MIN_VERSION`] is recorded
//! ("too old") and the search goes on. When nothing usable is found the error
//! ([`NcclError::NotFound`]) lists every place tried and why it was not used.
//!
//! The library is opened `RTLD_NOW | RTLD_LOCAL` and never closed. A library loaded later
//! that depends on `libnccl.so.2` (PyTorch's `libtorch_cuda.so`) is given this same copy by
//! the dynamic loader, which matches already loaded objects by soname, so loading niin
//! first also keeps one NCCL per process; loading PyTorch first makes niin use PyTorch's.

use std::ffi::CStr;
use std::fmt;
use std::os::raw::{c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::error::{NcclError, Result};
use super::sys;
use super::table::{NcclTable, SymbolInfo};
use super::version::{Capabilities, MIN_VERSION, NcclVersion};

/// The soname of NCCL 2.x.
pub const SONAME: &str = "libnccl.so.2";
/// The variable naming a libnccl.so.2 file to load (search step 2).
pub const ENV_LIBRARY: &str = "NIIN_NCCL_LIBRARY";
/// The variable naming an NCCL installation whose `lib/` holds the library (search step 3).
pub const ENV_HOME: &str = "NCCL_HOME";
/// The variables that name where NCCL is: both must be valid UTF-8 when set.
const LOCATION_VARS: [&str; 2] = [ENV_LIBRARY, ENV_HOME];
/// Where the nvidia-nccl-cu12 and -cu13 wheels put the library, under site-packages.
pub const WHEEL_LIBRARY: &str = "nvidia/nccl/lib/libnccl.so.2";

/// Which search step found a library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// A libnccl.so.2 already loaded in the process (`RTLD_NOLOAD`).
    AlreadyLoaded,
    /// The file named by `NIIN_NCCL_LIBRARY`.
    EnvLibrary,
    /// `$NCCL_HOME/lib/libnccl.so.2`.
    NcclHome,
    /// The system loader's search for `libnccl.so.2`.
    SystemLoader,
    /// The nvidia-nccl-cu13/cu12 wheel of a Python site-packages directory.
    PythonWheel,
    /// A path given to [`Nccl::load_from`].
    Explicit,
}

impl Source {
    /// A short label ("already loaded", "NIIN_NCCL_LIBRARY", ...).
    pub const fn label(self) -> &'static str {
        match self {
            Source::AlreadyLoaded => "already loaded",
            Source::EnvLibrary => ENV_LIBRARY,
            Source::NcclHome => ENV_HOME,
            Source::SystemLoader => "system loader",
            Source::PythonWheel => "Python wheel",
            Source::Explicit => "explicit path",
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// One place the search looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The search step.
    pub source: Source,
    /// What is passed to `dlopen`: a path, or the soname for steps 1 and 4.
    pub target: String,
    /// Only find an already loaded object (`RTLD_NOLOAD`).
    pub no_load: bool,
    /// Why this place is looked at, for [`Found::why`].
    pub why: String,
}

impl Candidate {
    /// `target (source)`, as listed in errors.
    pub fn place(&self) -> String {
        format!("{} ({})", self.target, self.source)
    }
}

/// What the search may observe of its environment.
pub struct SearchEnv<'a> {
    /// Reads an environment variable (`None`: unset or not UTF-8).
    pub var: &'a dyn Fn(&str) -> Option<String>,
    /// The Python site-packages directories to look for the NCCL wheel in, in order
    /// (called only when steps 1–4 found nothing).
    pub python_site_dirs: &'a dyn Fn() -> Vec<PathBuf>,
}

/// A library that the open closure managed to open.
#[derive(Debug)]
pub struct Opened<L> {
    /// The opened library.
    pub lib: L,
    /// Its `ncclGetVersion`.
    pub version: NcclVersion,
    /// The file it was loaded from.
    pub path: String,
}

/// The search's result: the library to use, where it came from, what was tried before.
#[derive(Debug)]
pub struct SearchHit<L> {
    /// The opened library.
    pub opened: Opened<L>,
    /// The candidate that produced it.
    pub candidate: Candidate,
    /// `(place, reason)` for each earlier candidate.
    pub tried: Vec<(String, String)>,
}

/// Runs the search order over `env`, opening candidates with `open` (which returns the
/// library and its version, or why it could not). See the module documentation for the
/// rules.
pub fn search<L>(
    env: &SearchEnv<'_>,
    open: &mut dyn FnMut(&Candidate) -> std::result::Result<Opened<L>, String>,
) -> Result<SearchHit<L>> {
    let var = |name: &str| (env.var)(name).filter(|v| !v.is_empty());
    let mut tried: Vec<(String, String)> = Vec::new();
    let env_library = var(ENV_LIBRARY);

    // 1. Already loaded: the one NCCL of this process, whatever else is configured.
    let loaded = Candidate {
        source: Source::AlreadyLoaded,
        target: SONAME.to_owned(),
        no_load: true,
        why: "a libnccl.so.2 already loaded in this process (one NCCL per process)".to_owned(),
    };
    match open(&loaded) {
        Ok(opened) => {
            let mut candidate = loaded;
            if let Some(requested) = &env_library {
                if *requested != opened.path {
                    candidate.why.push_str(&format!(
                        "; {ENV_LIBRARY}={requested} was not used: a second NCCL in the \
                         process could not share communicators with this one"
                    ));
                }
            }
            return accept_or_too_old(opened, candidate, tried);
        }
        Err(why) => tried.push((loaded.place(), why)),
    }

    // 2. NIIN_NCCL_LIBRARY: the user's explicit choice, no fallback.
    if let Some(path) = env_library {
        let candidate = Candidate {
            source: Source::EnvLibrary,
            target: path.clone(),
            no_load: false,
            why: format!("{ENV_LIBRARY}={path}"),
        };
        return match open(&candidate) {
            Ok(opened) => accept_or_too_old(opened, candidate, tried),
            Err(why) => {
                tried.push((
                    candidate.place(),
                    format!("{why} ({ENV_LIBRARY} is set, so no other place was tried)"),
                ));
                Err(NcclError::NotFound { tried })
            }
        };
    }

    // 3. NCCL_HOME, 4. the system loader.
    let mut fixed = Vec::new();
    if let Some(home) = var(ENV_HOME) {
        fixed.push(Candidate {
            source: Source::NcclHome,
            target: Path::new(&home)
                .join("lib")
                .join(SONAME)
                .display()
                .to_string(),
            no_load: false,
            why: format!("{ENV_HOME}={home}"),
        });
    }
    fixed.push(Candidate {
        source: Source::SystemLoader,
        target: SONAME.to_owned(),
        no_load: false,
        why: "the system loader's search (LD_LIBRARY_PATH, RUNPATH, ld.so.cache)".to_owned(),
    });
    for candidate in fixed {
        if let Some(hit) = try_candidate(open, candidate, &mut tried) {
            return Ok(SearchHit { tried, ..hit });
        }
    }

    // 5. The NCCL wheel of the active Python.
    let dirs = (env.python_site_dirs)();
    if dirs.is_empty() {
        tried.push((
            format!("{WHEEL_LIBRARY} ({})", Source::PythonWheel),
            "no Python site-packages directory found (VIRTUAL_ENV, CONDA_PREFIX, PYTHONPATH, \
             python3)"
                .to_owned(),
        ));
    }
    let mut seen: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        let target = dir.join(WHEEL_LIBRARY);
        if seen.contains(&target) {
            continue;
        }
        seen.push(target.clone());
        let candidate = Candidate {
            source: Source::PythonWheel,
            target: target.display().to_string(),
            no_load: false,
            why: format!("the nvidia-nccl-cu13/cu12 wheel in {}", dir.display()),
        };
        if let Some(hit) = try_candidate(open, candidate, &mut tried) {
            return Ok(SearchHit { tried, ..hit });
        }
    }

    Err(NcclError::NotFound { tried })
}

/// A candidate whose failure, or whose being too old, lets the search go on.
fn try_candidate<L>(
    open: &mut dyn FnMut(&Candidate) -> std::result::Result<Opened<L>, String>,
    candidate: Candidate,
    tried: &mut Vec<(String, String)>,
) -> Option<SearchHit<L>> {
    match open(&candidate) {
        Ok(opened) if opened.version >= MIN_VERSION => Some(SearchHit {
            opened,
            candidate,
            tried: Vec::new(),
        }),
        Ok(opened) => {
            tried.push((
                candidate.place(),
                format!(
                    "NCCL {} at {} is too old (needs >= {MIN_VERSION})",
                    opened.version, opened.path
                ),
            ));
            None
        }
        Err(why) => {
            tried.push((candidate.place(), why));
            None
        }
    }
}

/// A candidate that must be used if it opens: too old is an error.
fn accept_or_too_old<L>(
    opened: Opened<L>,
    candidate: Candidate,
    tried: Vec<(String, String)>,
) -> Result<SearchHit<L>> {
    if opened.version < MIN_VERSION {
        return Err(NcclError::TooOld {
            path: opened.path,
            version: opened.version,
            need: MIN_VERSION,
        });
    }
    Ok(SearchHit {
        opened,
        candidate,
        tried,
    })
}

/// The variables that name where NCCL is ([`ENV_LIBRARY`], [`ENV_HOME`]), read with `read`:
/// a value that is not valid UTF-8 is an error naming it. Read as unset, it would make the
/// search quietly skip the place the user chose.
fn check_path_vars(
    read: impl Fn(&str) -> std::result::Result<Option<String>, crate::env::NotUnicode>,
) -> Result<()> {
    for name in LOCATION_VARS {
        if let Err(bad) = read(name) {
            return Err(NcclError::InvalidArgument {
                what: format!("{bad}; niin-rs reads NCCL's location from UTF-8 paths only"),
            });
        }
    }
    Ok(())
}

/// The site-packages directories of the active Python, in the order of search step 5:
/// `$VIRTUAL_ENV` and `$CONDA_PREFIX` (`lib/python3*/site-packages`, newest first), each
/// entry of `$PYTHONPATH`, then what `python3` reports (purelib, `site.getsitepackages()`,
/// the user site). Directories that do not exist are dropped; duplicates are removed.
pub fn python_site_dirs(var: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for prefix in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(prefix) = var(prefix).filter(|p| !p.is_empty()) {
            dirs.extend(site_dirs_under(Path::new(&prefix)));
        }
    }
    if let Some(path) = var("PYTHONPATH") {
        dirs.extend(std::env::split_paths(&path).filter(|p| !p.as_os_str().is_empty()));
    }
    dirs.extend(python3_site_dirs());
    let mut unique: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        if dir.is_dir() && !unique.contains(&dir) {
            unique.push(dir);
        }
    }
    unique
}

/// `<prefix>/lib/python3*/site-packages` that exist, newest Python first.
pub fn site_dirs_under(prefix: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(prefix.join("lib")) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("python3"))
        .collect();
    // python3.12 before python3.9: compare the minor numbers.
    names.sort_by_key(|n| {
        std::cmp::Reverse(
            n["python3".len()..]
                .trim_start_matches('.')
                .parse::<u32>()
                .unwrap_or(0),
        )
    });
    names
        .into_iter()
        .map(|n| prefix.join("lib").join(n).join("site-packages"))
        .filter(|d| d.is_dir())
        .collect()
}

/// Asks `python3` (from `PATH`) for its site-packages directories; empty if it cannot run.
fn python3_site_dirs() -> Vec<PathBuf> {
    const SCRIPT: &str = "import site, sysconfig\n\
        print(sysconfig.get_paths()['purelib'])\n\
        for p in getattr(site, 'getsitepackages', lambda: [])(): print(p)\n\
        print(site.getusersitepackages())\n";
    let output = Command::new("python3")
        .args(["-c", SCRIPT])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    match output {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(PathBuf::from)
            .collect(),
        _ => Vec::new(),
    }
}

/// A real library and its table.
struct Loaded {
    lib: libloading::Library,
    table: NcclTable,
}

/// Opens a candidate with `dlopen` and reads its version.
fn open_real(candidate: &Candidate) -> std::result::Result<Opened<Loaded>, String> {
    let mut flags = libc::RTLD_NOW | libc::RTLD_LOCAL;
    if candidate.no_load {
        flags |= libc::RTLD_NOLOAD;
    }
    // SAFETY: opening a shared object runs its initialisers; NCCL's have no preconditions.
    // With RTLD_NOLOAD nothing new is mapped.
    let lib = unsafe { libloading::os::unix::Library::open(Some(&candidate.target), flags) };
    match lib {
        Ok(lib) => opened(lib.into(), &candidate.target),
        Err(_) if candidate.no_load => Err("none is loaded in this process".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// Reads the table and the version of an opened library.
fn opened(
    lib: libloading::Library,
    requested: &str,
) -> std::result::Result<Opened<Loaded>, String> {
    // SAFETY: the symbols are looked up by NCCL's names with the prototypes of NCCL's
    // headers; a file exporting `ncclGetVersion` is taken to be NCCL.
    let table = unsafe { NcclTable::load(&lib) };
    let Some(get_version) = table.get_version else {
        return Err("opened, but it exports no ncclGetVersion: not an NCCL library".to_owned());
    };
    let mut code: c_int = 0;
    // SAFETY: ncclGetVersion(int*) writes the version into a valid int.
    let result = unsafe { get_version(&mut code) };
    if result != sys::ncclResult_t::ncclSuccess {
        return Err(format!("ncclGetVersion returned ncclResult_t {}", result.0));
    }
    let path = object_path(get_version as *const c_void).unwrap_or_else(|| requested.to_owned());
    Ok(Opened {
        lib: Loaded { lib, table },
        version: NcclVersion::from_code(code),
        path,
    })
}

/// The file of the loaded object holding `addr` (`dladdr`).
fn object_path(addr: *const c_void) -> Option<String> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only inspects the loader's tables and writes `info`.
    let found = unsafe { libc::dladdr(addr, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is the loader's NUL-terminated name of an object that stays loaded
    // (the caller holds a handle to it).
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    Some(name.to_string_lossy().into_owned())
}

/// Where the loaded NCCL came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The search step that found it.
    pub source: Source,
    /// What was passed to `dlopen`.
    pub requested: String,
    /// The file the library was loaded from.
    pub path: String,
    /// Why that place was looked at.
    pub why: String,
    /// `(place, reason)` for each earlier candidate of the search.
    pub tried: Vec<(String, String)>,
}

/// A loaded NCCL: its raw table, version, capabilities and where it came from.
///
/// One per process through [`Nccl::load`]; it is never unloaded, so `&'static Nccl` is
/// the handle everything else keeps.
pub struct Nccl {
    /// Keeps the library loaded (the table's pointers point into it).
    _lib: libloading::Library,
    table: NcclTable,
    found: Found,
    version: NcclVersion,
    caps: Capabilities,
}

impl fmt::Debug for Nccl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Nccl")
            .field("path", &self.found.path)
            .field("source", &self.found.source)
            .field("version", &self.version)
            .field("capabilities", &self.caps)
            .finish_non_exhaustive()
    }
}

impl Nccl {
    /// The process's NCCL, found by the search order (module documentation) the first
    /// time and kept for the life of the process. Later calls return the same library,
    /// or the same error.
    pub fn load() -> Result<&'static Nccl> {
        static NCCL: OnceLock<Result<Nccl>> = OnceLock::new();
        NCCL.get_or_init(Self::load_process)
            .as_ref()
            .map_err(Clone::clone)
    }

    fn load_process() -> Result<Nccl> {
        check_path_vars(crate::env::text)?;
        let var = |name: &str| std::env::var(name).ok();
        let site_dirs = || python_site_dirs(&var);
        let env = SearchEnv {
            var: &var,
            python_site_dirs: &site_dirs,
        };
        let hit = search(&env, &mut open_real)?;
        Ok(Self::new(hit.opened, &hit.candidate, hit.tried))
    }

    /// Opens the library at `path` (a file, or a name for the system loader), bypassing
    /// the search and the process-wide instance: for tests and tools. Opening the file
    /// already loaded gives the same copy; another file is a second NCCL in the process,
    /// whose communicators must never meet the first one's. The library is never unloaded.
    pub fn load_from(path: impl AsRef<Path>) -> Result<&'static Nccl> {
        let candidate = Candidate {
            source: Source::Explicit,
            target: path.as_ref().display().to_string(),
            no_load: false,
            why: "opened by path (Nccl::load_from)".to_owned(),
        };
        let opened = open_real(&candidate).map_err(|why| NcclError::NotFound {
            tried: vec![(candidate.place(), why)],
        })?;
        let hit = accept_or_too_old(opened, candidate, Vec::new())?;
        Ok(Box::leak(Box::new(Self::new(
            hit.opened,
            &hit.candidate,
            hit.tried,
        ))))
    }

    fn new(opened: Opened<Loaded>, candidate: &Candidate, tried: Vec<(String, String)>) -> Self {
        let Loaded { lib, table } = opened.lib;
        let caps = Capabilities::from_parts(opened.version, |name| table.has(name));
        Self {
            _lib: lib,
            table,
            found: Found {
                source: candidate.source,
                requested: candidate.target.clone(),
                path: opened.path,
                why: candidate.why.clone(),
                tried,
            },
            version: opened.version,
            caps,
        }
    }

    /// The file the library was loaded from.
    pub fn path(&self) -> &str {
        &self.found.path
    }

    /// How the library was found.
    pub fn found(&self) -> &Found {
        &self.found
    }

    /// The library's version (`ncclGetVersion`).
    pub fn version(&self) -> NcclVersion {
        self.version
    }

    /// What the library can do (version and exported symbols).
    pub fn capabilities(&self) -> Capabilities {
        self.caps
    }

    /// The raw function table (every entry optional). Calling through it is `unsafe`:
    /// the C contracts of NCCL apply.
    pub fn table(&self) -> &NcclTable {
        &self.table
    }

    /// Every entry of the table with whether the library exports it.
    pub fn symbols(&self) -> impl Iterator<Item = (&'static SymbolInfo, bool)> + '_ {
        NcclTable::SYMBOLS
            .iter()
            .map(|s| (s, self.table.has(s.name)))
    }

    /// The entries of the table the library does not export.
    pub fn missing_symbols(&self) -> Vec<&'static SymbolInfo> {
        self.symbols()
            .filter(|(_, present)| !present)
            .map(|(s, _)| s)
            .collect()
    }

    /// Succeeds if the library exports `symbol` (a C name such as `"ncclPutSignal"`);
    /// otherwise the error names the library, its version, the symbol and the feature that
    /// needs it. For checking a feature up front, before the call that needs it.
    pub fn require(&self, symbol: &str) -> Result<()> {
        let Some(info) = NcclTable::info_by_name(symbol) else {
            return Err(NcclError::InvalidArgument {
                what: format!("{symbol} is not a function of niin-rs's NCCL table"),
            });
        };
        if self.table.has(symbol) {
            Ok(())
        } else {
            Err(self.missing(info))
        }
    }

    /// `f` if present, else the `MissingSymbol` error of the table entry `field`.
    pub(crate) fn func<F: Copy>(&self, f: Option<F>, field: &'static str) -> Result<F> {
        match f {
            Some(f) => Ok(f),
            None => Err(match NcclTable::info(field) {
                Some(info) => self.missing(info),
                None => NcclError::InvalidArgument {
                    what: format!("{field} is not an entry of niin-rs's NCCL table"),
                },
            }),
        }
    }

    fn missing(&self, info: &'static SymbolInfo) -> NcclError {
        NcclError::MissingSymbol {
            path: self.found.path.clone(),
            version: self.version,
            symbol: info.name,
            since: info.since,
            feature: info.feature,
        }
    }

    /// `ncclGetErrorString(code)` (or a placeholder when the library lacks it).
    pub fn error_string(&self, code: sys::ncclResult_t) -> String {
        let Some(f) = self.table.get_error_string else {
            return format!("ncclResult_t {}", code.0);
        };
        // SAFETY: ncclGetErrorString accepts any code and returns a static string or NULL.
        let s = unsafe { f(code) };
        // SAFETY: NCCL returns NULL or a NUL-terminated string that outlives this call.
        unsafe { c_string(s) }.unwrap_or_else(|| format!("ncclResult_t {}", code.0))
    }

    /// `ncclGetLastError(comm)`: NCCL's message about the last error ("" if none).
    ///
    /// # Safety
    /// `comm` is null or a live communicator of this library.
    pub unsafe fn last_error(&self, comm: sys::ncclComm_t) -> String {
        let Some(f) = self.table.get_last_error else {
            return String::new();
        };
        // SAFETY: the caller guarantees comm is null or live; NCCL returns a string or NULL.
        let s = unsafe { f(comm) };
        // SAFETY: NCCL returns NULL or a NUL-terminated string valid until its next error.
        unsafe { c_string(s) }.unwrap_or_default()
    }

    /// `Ok` for `ncclSuccess` and `ncclInProgress` (a non-blocking communicator still at
    /// work: its owner polls `ncclCommGetAsyncError`), else the `Call` error of `func`,
    /// with NCCL's name of the code and its last-error message.
    ///
    /// # Safety
    /// `comm` is null or a live communicator of this library.
    pub unsafe fn check(
        &self,
        func: &'static str,
        code: sys::ncclResult_t,
        comm: sys::ncclComm_t,
    ) -> Result<()> {
        if code == sys::ncclResult_t::ncclSuccess || code == sys::ncclResult_t::ncclInProgress {
            return Ok(());
        }
        Err(NcclError::Call {
            func,
            code: code.0 as i32,
            name: self.error_string(code),
            // SAFETY: forwarded from the caller.
            detail: unsafe { self.last_error(comm) },
        })
    }
}

/// Copies a C string NCCL returned.
///
/// # Safety
/// `s` is null or NUL-terminated and valid for the call.
unsafe fn c_string(s: *const c_char) -> Option<String> {
    if s.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated per the caller.
    let s = unsafe { CStr::from_ptr(s) };
    Some(s.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A fake machine: which `dlopen` targets open, and with which version.
    #[derive(Default)]
    struct Fake {
        vars: HashMap<&'static str, String>,
        /// target → version code; "libnccl.so.2" under `loaded` is what NOLOAD finds.
        files: HashMap<String, i32>,
        loaded: Option<(String, i32)>,
        system: Option<(String, i32)>,
        site_dirs: Vec<PathBuf>,
    }

    impl Fake {
        fn run(&self) -> (Result<SearchHit<String>>, Vec<Candidate>) {
            let var = |n: &str| self.vars.get(n).cloned();
            let site_calls = std::cell::Cell::new(0);
            let site = || {
                site_calls.set(site_calls.get() + 1);
                self.site_dirs.clone()
            };
            let env = SearchEnv {
                var: &var,
                python_site_dirs: &site,
            };
            let mut seen = Vec::new();
            let mut open = |c: &Candidate| -> std::result::Result<Opened<String>, String> {
                seen.push(c.clone());
                let hit = if c.no_load {
                    self.loaded.clone()
                } else if c.target == SONAME {
                    self.system.clone()
                } else {
                    self.files.get(&c.target).map(|v| (c.target.clone(), *v))
                };
                match hit {
                    Some((path, code)) => Ok(Opened {
                        lib: path.clone(),
                        version: NcclVersion::from_code(code),
                        path,
                    }),
                    None if c.no_load => Err("none is loaded in this process".into()),
                    None => Err(format!("{}: cannot open shared object file", c.target)),
                }
            };
            let r = search(&env, &mut open);
            assert!(site_calls.get() <= 1, "site dirs computed more than once");
            (r, seen)
        }
    }

    fn everything() -> Fake {
        let mut f = Fake {
            loaded: Some(("/torch/lib/libnccl.so.2".into(), 22809)),
            system: Some(("/usr/lib/x86_64-linux-gnu/libnccl.so.2".into(), 22803)),
            site_dirs: vec![PathBuf::from("/venv/lib/python3.12/site-packages")],
            ..Fake::default()
        };
        f.vars.insert(ENV_LIBRARY, "/opt/env/libnccl.so.2".into());
        f.vars.insert("NCCL_HOME", "/opt/nccl".into());
        f.files.insert("/opt/env/libnccl.so.2".into(), 23102);
        f.files.insert("/opt/nccl/lib/libnccl.so.2".into(), 23003);
        f.files.insert(
            "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2".into(),
            22907,
        );
        f
    }

    #[test]
    fn already_loaded_wins_over_everything() {
        let f = everything();
        let (r, seen) = f.run();
        let hit = r.unwrap();
        assert_eq!(hit.candidate.source, Source::AlreadyLoaded);
        assert_eq!(hit.opened.path, "/torch/lib/libnccl.so.2");
        assert!(
            seen[0].no_load && seen[0].target == SONAME,
            "NOLOAD is tried first"
        );
        assert_eq!(seen.len(), 1);
        assert!(
            hit.candidate
                .why
                .contains("NIIN_NCCL_LIBRARY=/opt/env/libnccl.so.2 was not used")
        );
    }

    #[test]
    fn env_library_is_second() {
        let mut f = everything();
        f.loaded = None;
        let (r, seen) = f.run();
        let hit = r.unwrap();
        assert_eq!(hit.candidate.source, Source::EnvLibrary);
        assert_eq!(hit.opened.version.to_string(), "2.31.2");
        assert_eq!(seen.len(), 2);
        assert_eq!(hit.tried.len(), 1);
        assert!(hit.tried[0].0.contains("already loaded"));
    }

    #[test]
    fn env_library_failure_does_not_fall_back() {
        let mut f = everything();
        f.loaded = None;
        f.vars.insert(ENV_LIBRARY, "/nowhere/libnccl.so.2".into());
        let (r, seen) = f.run();
        let Err(NcclError::NotFound { tried }) = r else {
            panic!("expected NotFound, got {r:?}");
        };
        assert_eq!(seen.len(), 2);
        assert_eq!(tried.len(), 2);
        assert!(
            tried[1]
                .0
                .starts_with("/nowhere/libnccl.so.2 (NIIN_NCCL_LIBRARY)")
        );
        assert!(tried[1].1.contains("no other place was tried"));
    }

    #[test]
    fn nccl_home_is_third_then_system_then_wheel() {
        let mut f = everything();
        f.loaded = None;
        f.vars.remove(ENV_LIBRARY);
        let (r, _) = f.run();
        let hit = r.unwrap();
        assert_eq!(hit.candidate.source, Source::NcclHome);
        assert_eq!(hit.opened.path, "/opt/nccl/lib/libnccl.so.2");

        f.vars.remove("NCCL_HOME");
        let hit = f.run().0.unwrap();
        assert_eq!(hit.candidate.source, Source::SystemLoader);
        assert_eq!(hit.opened.path, "/usr/lib/x86_64-linux-gnu/libnccl.so.2");
        assert_eq!(hit.candidate.target, SONAME);

        f.system = None;
        let hit = f.run().0.unwrap();
        assert_eq!(hit.candidate.source, Source::PythonWheel);
        assert_eq!(
            hit.opened.path,
            "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"
        );
        assert_eq!(hit.opened.version.to_string(), "2.29.7");
        let places: Vec<&str> = hit.tried.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            places,
            [
                "libnccl.so.2 (already loaded)",
                "libnccl.so.2 (system loader)"
            ]
        );
    }

    #[test]
    fn wheel_dirs_are_searched_in_order_without_duplicates() {
        let mut f = Fake {
            site_dirs: vec![
                PathBuf::from("/a/site-packages"),
                PathBuf::from("/b/site-packages"),
                PathBuf::from("/a/site-packages"),
                PathBuf::from("/c/site-packages"),
            ],
            ..Fake::default()
        };
        f.files.insert(
            "/c/site-packages/nvidia/nccl/lib/libnccl.so.2".into(),
            22809,
        );
        let (r, seen) = f.run();
        let hit = r.unwrap();
        assert_eq!(hit.candidate.source, Source::PythonWheel);
        assert!(hit.candidate.why.contains("/c/site-packages"));
        let wheel_targets: Vec<&str> = seen
            .iter()
            .filter(|c| c.source == Source::PythonWheel)
            .map(|c| c.target.as_str())
            .collect();
        assert_eq!(
            wheel_targets,
            [
                "/a/site-packages/nvidia/nccl/lib/libnccl.so.2",
                "/b/site-packages/nvidia/nccl/lib/libnccl.so.2",
                "/c/site-packages/nvidia/nccl/lib/libnccl.so.2",
            ]
        );
    }

    #[test]
    fn nothing_found_lists_everything_tried() {
        let mut f = Fake::default();
        f.vars.insert("NCCL_HOME", "/opt/nccl".into());
        f.site_dirs = vec![PathBuf::from("/venv/site-packages")];
        let (r, _) = f.run();
        let Err(e @ NcclError::NotFound { .. }) = r else {
            panic!("expected NotFound, got {r:?}");
        };
        let NcclError::NotFound { tried } = &e else {
            unreachable!()
        };
        let places: Vec<&str> = tried.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            places,
            [
                "libnccl.so.2 (already loaded)",
                "/opt/nccl/lib/libnccl.so.2 (NCCL_HOME)",
                "libnccl.so.2 (system loader)",
                "/venv/site-packages/nvidia/nccl/lib/libnccl.so.2 (Python wheel)",
            ]
        );
        let msg = e.to_string();
        assert!(msg.contains("none is loaded in this process"), "{msg}");
        assert!(msg.contains("cannot open shared object file"), "{msg}");
    }

    #[test]
    fn no_python_is_reported() {
        let (r, _) = Fake::default().run();
        let Err(NcclError::NotFound { tried }) = r else {
            panic!("expected NotFound");
        };
        assert_eq!(tried.len(), 3);
        assert!(tried[2].1.contains("no Python site-packages"));
    }

    #[test]
    fn too_old_already_loaded_is_an_error() {
        let f = Fake {
            loaded: Some(("/torch/libnccl.so.2".into(), 22105)),
            system: Some(("/usr/lib/libnccl.so.2".into(), 23102)),
            ..Fake::default()
        };
        let (r, seen) = f.run();
        assert_eq!(
            r.unwrap_err(),
            NcclError::TooOld {
                path: "/torch/libnccl.so.2".into(),
                version: NcclVersion::new(2, 21, 5),
                need: MIN_VERSION,
            }
        );
        assert_eq!(seen.len(), 1, "no second NCCL may be loaded");
    }

    #[test]
    fn too_old_env_library_is_an_error() {
        let mut f = Fake::default();
        f.vars.insert(ENV_LIBRARY, "/old/libnccl.so.2".into());
        f.files.insert("/old/libnccl.so.2".into(), 2708);
        let err = f.run().0.unwrap_err();
        assert_eq!(
            err.to_string(),
            "NCCL 2.7.8 at /old/libnccl.so.2 is too old: niin-rs needs NCCL >= 2.28.0"
        );
    }

    #[test]
    fn too_old_system_library_is_skipped() {
        let mut f = Fake {
            system: Some(("/usr/lib/libnccl.so.2".into(), 22105)),
            site_dirs: vec![PathBuf::from("/venv/sp")],
            ..Fake::default()
        };
        f.files
            .insert("/venv/sp/nvidia/nccl/lib/libnccl.so.2".into(), 22809);
        let hit = f.run().0.unwrap();
        assert_eq!(hit.candidate.source, Source::PythonWheel);
        assert!(
            hit.tried[1]
                .1
                .contains("NCCL 2.21.5 at /usr/lib/libnccl.so.2 is too old")
        );
        assert!(hit.tried[1].1.contains("needs >= 2.28.0"));

        // And when nothing newer exists, the too-old one is named in the error.
        f.files.clear();
        let Err(NcclError::NotFound { tried }) = f.run().0 else {
            panic!("expected NotFound");
        };
        assert!(
            tried
                .iter()
                .any(|(_, why)| why.contains("2.21.5") && why.contains("too old"))
        );
    }

    #[test]
    fn empty_variables_count_as_unset() {
        let mut f = Fake {
            system: Some(("/usr/lib/libnccl.so.2".into(), 22803)),
            ..Fake::default()
        };
        f.vars.insert(ENV_LIBRARY, String::new());
        f.vars.insert("NCCL_HOME", String::new());
        let hit = f.run().0.unwrap();
        assert_eq!(hit.candidate.source, Source::SystemLoader);
        assert_eq!(hit.tried.len(), 1);
    }

    #[test]
    fn site_dirs_under_a_prefix() {
        let root = std::env::temp_dir().join(format!("niin-nccl-site-{}", std::process::id()));
        for v in ["python3.9", "python3.12", "python2.7"] {
            std::fs::create_dir_all(root.join("lib").join(v).join("site-packages")).unwrap();
        }
        std::fs::create_dir_all(root.join("lib").join("python3.10")).unwrap(); // no site-packages
        let dirs = site_dirs_under(&root);
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(
            dirs,
            [
                root.join("lib/python3.12/site-packages"),
                root.join("lib/python3.9/site-packages"),
            ]
        );
    }

    #[test]
    fn load_from_a_missing_file_names_it() {
        let err = Nccl::load_from("/nonexistent/libnccl.so.2").unwrap_err();
        let NcclError::NotFound { tried } = &err else {
            panic!("expected NotFound, got {err:?}");
        };
        assert_eq!(tried[0].0, "/nonexistent/libnccl.so.2 (explicit path)");
        assert!(tried[0].1.contains("No such file"), "{err}");
    }

    #[test]
    fn a_location_variable_that_is_not_utf8_is_an_error_naming_it() {
        use std::ffi::OsString;
        use std::os::unix::ffi::OsStringExt;
        let values = |bad: &'static str| {
            move |name: &str| {
                let value = (name == bad).then(|| OsString::from_vec(b"/opt/nc\xffcl".to_vec()));
                crate::env::text_of(name, value)
            }
        };
        for bad in LOCATION_VARS {
            let err = check_path_vars(values(bad)).unwrap_err().to_string();
            assert!(
                err.contains(&format!("{bad}=\"/opt/nc\u{fffd}cl\"")),
                "{err}"
            );
            assert!(err.contains("not valid UTF-8"), "{err}");
        }
        check_path_vars(values("PYTHONPATH")).unwrap();
    }

    #[test]
    fn a_library_that_is_not_nccl_is_rejected() {
        // libc is loaded in every process and exports no ncclGetVersion.
        let err = Nccl::load_from("libc.so.6").unwrap_err();
        assert!(err.to_string().contains("not an NCCL library"), "{err}");
    }

    /// Loads the library named by `NIIN_TEST_NCCL_LIBRARY` (skipped when unset): version,
    /// capabilities, missing symbols and a unique id (ncclGetUniqueId needs no GPU).
    #[test]
    fn loads_real_library_when_available() {
        let Ok(path) = std::env::var("NIIN_TEST_NCCL_LIBRARY") else {
            println!("skipped: NIIN_TEST_NCCL_LIBRARY not set");
            return;
        };
        let nccl = Nccl::load_from(&path).unwrap();
        let v = nccl.version();
        println!("path: {}", nccl.path());
        println!("version: {v} (code {})", v.code);
        println!("capabilities: {}", nccl.capabilities());
        let missing: Vec<&str> = nccl.missing_symbols().iter().map(|s| s.name).collect();
        println!("missing symbols: {missing:?}");
        assert!(v >= MIN_VERSION);
        assert!(nccl.capabilities().device_api);
        assert_eq!(
            nccl.capabilities().host_rma,
            v >= crate::nccl::HOST_RMA_VERSION
        );
        for required in [
            "ncclGetVersion",
            "ncclCommInitRankConfig",
            "ncclCommWindowRegister",
        ] {
            nccl.require(required).unwrap();
        }
        if v < crate::nccl::HOST_RMA_VERSION {
            let err = nccl.require("ncclPutSignal").unwrap_err();
            println!("expected error: {err}");
            assert!(matches!(err, NcclError::MissingSymbol { .. }));
        }
        let id = nccl.unique_id().unwrap();
        println!("unique id: {:02x?}...", &id.0[..8]);
        assert!(id.0.iter().any(|b| *b != 0));
        let name = nccl.error_string(sys::ncclResult_t::ncclInvalidArgument);
        println!("ncclGetErrorString(ncclInvalidArgument): {name}");
        assert!(name.starts_with("invalid argument"), "{name}");
    }
}
