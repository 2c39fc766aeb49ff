//! Setup and exit: `nvshmem_init`, `nvshmemx_init_attr` (environment and unique-ID
//! bootstraps), `nvshmem_finalize`, `nvshmem_global_exit`, and the unique-ID helpers.
//!
//! NVSHMEM declares `nvshmem_init`, `nvshmem_init_thread`, `nvshmem_finalize` and
//! `nvshmemx_init_attr` as `static inline` functions of its headers that call private
//! entry points (`nvshmemi_init_thread`, `nvshmemi_finalize`); niin-rs exports them as
//! plain functions, so a program compiled against `device/include` calls them directly.

use std::ffi::{c_int, c_uint};

use niin_api::{TransportKind, World, WorldConfig};

use crate::abi::{
    NVSHMEM_STATUS_IS_INITIALIZED, NVSHMEM_STATUS_NOT_INITIALIZED, NVSHMEM_THREAD_MULTIPLE,
    NVSHMEM_THREAD_SERIALIZED, NVSHMEM_THREAD_SINGLE, NVSHMEMX_INIT_THREAD_PES,
    NVSHMEMX_INIT_WITH_MPI_COMM, NVSHMEMX_INIT_WITH_SHMEM, NVSHMEMX_INIT_WITH_UNIQUEID,
    NvshmemxInitAttr, NvshmemxUniqueid, NvshmemxUniqueidArgs, version_v1,
};
use crate::cumodule;
use crate::error::{FfiError, FfiResult, status_call, value_call};
use crate::modules;
use crate::state::{self, Finalize};
use crate::uid::{MOCK_ID_BYTES, NCCL_UNIQUE_ID_BYTES, Uid};

/// SPMD init from the environment (`NIIN_TRANSPORT`, the launcher's `NIIN_PE`/
/// `NIIN_NPES`/`NIIN_JOB_ID`; one PE without them). A nested init only counts.
fn init_from_env() -> FfiResult<()> {
    state::init(|| with_modules(World::init()?))
}

/// `world` once every registered CUDA module has its device context (see [`modules`]),
/// and the driver-API modules still initialized from an earlier world theirs (see
/// [`cumodule`]).
fn with_modules(world: World) -> FfiResult<World> {
    modules::attach(&world)?;
    cumodule::attach();
    Ok(world)
}

/// `NIIN_TRANSPORT`'s word for `kind`.
fn transport_name(kind: TransportKind) -> &'static str {
    match kind {
        TransportKind::Mock => "mock",
        TransportKind::Nccl => "nccl",
        TransportKind::Auto => "auto",
    }
}

/// A new unique ID for the transport of `config`, in niin-rs's encoding.
fn new_uid(config: &WorldConfig) -> FfiResult<Uid> {
    let bytes = World::new_unique_id(config)?;
    match config.transport {
        TransportKind::Mock => {
            let mut job = [0u8; MOCK_ID_BYTES];
            job.copy_from_slice(&bytes[..MOCK_ID_BYTES]);
            Ok(Uid::Mock(job))
        }
        TransportKind::Nccl | TransportKind::Auto => {
            Uid::from_nccl(&bytes).map_err(|e| FfiError::Os(e.to_string()))
        }
    }
}

/// The 128 bytes niin-api's unique-ID init takes for `uid`, checking that it was made
/// for the transport this PE runs.
fn uid_bytes(uid: &Uid, kind: TransportKind) -> FfiResult<[u8; NCCL_UNIQUE_ID_BYTES]> {
    let mut bytes = [0u8; NCCL_UNIQUE_ID_BYTES];
    match (uid, kind) {
        (Uid::Mock(job), TransportKind::Mock) => bytes[..MOCK_ID_BYTES].copy_from_slice(job),
        (Uid::Nccl(id), TransportKind::Nccl | TransportKind::Auto) => bytes = **id,
        _ => {
            return Err(FfiError::BadArgument(format!(
                "the unique ID was made for the {} transport, but this PE runs \
                 NIIN_TRANSPORT={}: every PE must use the same transport",
                uid.transport_name(),
                transport_name(kind)
            )));
        }
    }
    Ok(bytes)
}

/// Unique-ID init: this PE is `args.myrank` of `args.nranks`, and the job is the one
/// `args.id` names. `id` is the ID's contents, read by the caller from `args.id`.
fn init_with_uid(args: NvshmemxUniqueidArgs, id: Option<NvshmemxUniqueid>) -> FfiResult<()> {
    state::init(|| {
        let id = id.ok_or(FfiError::Null(
            "attr->args.uid_args.id (set it with nvshmemx_set_attr_uniqueid_args)",
        ))?;
        let (rank, nranks) = (args.myrank, args.nranks);
        let (pe, n_pes) = match (usize::try_from(rank), usize::try_from(nranks)) {
            (Ok(pe), Ok(n_pes)) if pe < n_pes => (pe, n_pes),
            _ => {
                return Err(FfiError::BadArgument(format!(
                    "unique-ID arguments name rank {rank} of {nranks} ranks: need nranks >= 1 \
                     and 0 <= rank < nranks (set them with nvshmemx_set_attr_uniqueid_args)"
                )));
            }
        };
        let uid = Uid::decode(&id.internal).map_err(|e| FfiError::BadArgument(e.to_string()))?;
        let config = WorldConfig::from_env()?;
        let bytes = uid_bytes(&uid, config.transport)?;
        with_modules(World::init_unique_id(&config, pe, n_pes, &bytes)?)
    })
}

/// The body of `nvshmemx_init_attr` once `attr` has been read.
fn init_attr(
    flags: c_uint,
    attr: Option<(NvshmemxInitAttr, Option<NvshmemxUniqueid>)>,
) -> FfiResult<()> {
    let known = NVSHMEMX_INIT_THREAD_PES
        | NVSHMEMX_INIT_WITH_MPI_COMM
        | NVSHMEMX_INIT_WITH_SHMEM
        | NVSHMEMX_INIT_WITH_UNIQUEID;
    if flags & !known != 0 {
        return Err(FfiError::BadArgument(format!(
            "flags {flags:#x} has bits that no NVSHMEMX_INIT_* flag uses (unknown: {:#x})",
            flags & !known
        )));
    }
    if flags & NVSHMEMX_INIT_WITH_MPI_COMM != 0 {
        return Err(FfiError::NotSupported(
            "NVSHMEMX_INIT_WITH_MPI_COMM reached libnvshmem_host, which never links MPI: \
             compile the application with -DNIIN_HAS_MPI (and link MPI), and nvshmemx.h does \
             the MPI bootstrap inline over the unique-ID init"
                .into(),
        ));
    }
    if flags & NVSHMEMX_INIT_WITH_SHMEM != 0 {
        return Err(FfiError::NotSupported(
            "NVSHMEMX_INIT_WITH_SHMEM (init from an OpenSHMEM job) is not supported by niin-rs"
                .into(),
        ));
    }
    if flags & NVSHMEMX_INIT_THREAD_PES != 0 {
        return Err(FfiError::NotSupported(
            "NVSHMEMX_INIT_THREAD_PES is not supported by niin-rs: run one PE per process".into(),
        ));
    }
    if flags & NVSHMEMX_INIT_WITH_UNIQUEID != 0 {
        let (attr, id) = attr.ok_or(FfiError::Null("attr"))?;
        return init_with_uid(attr.args.uid_args, id);
    }
    init_from_env()
}

/// Initializes the library from the environment (NVSHMEM's `nvshmem_init`): the
/// transport from `NIIN_TRANSPORT`, this PE's place from the launcher's variables (one PE
/// without them). A call while initialized only counts (each needs a `nvshmem_finalize`).
///
/// As NVSHMEM documents for `nvshmem_init`, a failure ends the program: after the
/// `NIIN:` line it exits with status 1. Use `nvshmemx_init_attr` to get a status instead.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_init() {
    let status = status_call("nvshmem_init", || {
        init_from_env().map_err(|e| {
            FfiError::BadArgument(format!(
                "{e}; exiting with status 1, as NVSHMEM does when nvshmem_init fails"
            ))
        })
    });
    if status != 0 {
        std::process::exit(1);
    }
}

/// Initializes the library as [`nvshmem_init`] does, returning a status instead of
/// exiting on failure (NVSHMEM's `nvshmem_init_thread`). `requested` must be an
/// `NVSHMEM_THREAD_*` level; `*provided` is set to `NVSHMEM_THREAD_SERIALIZED`, what
/// NVSHMEM provides too.
///
/// # Safety
/// `provided` must be NULL or point to a writable `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmem_init_thread(requested: c_int, provided: *mut c_int) -> c_int {
    status_call("nvshmem_init_thread", || {
        if !(NVSHMEM_THREAD_SINGLE..=NVSHMEM_THREAD_MULTIPLE).contains(&requested) {
            return Err(FfiError::BadArgument(format!(
                "requested thread level {requested} is not an NVSHMEM_THREAD_* value (0..=3)"
            )));
        }
        if provided.is_null() {
            return Err(FfiError::Null("provided"));
        }
        init_from_env()?;
        // SAFETY: `provided` is non-null and, by the caller's contract, writable.
        unsafe { provided.write(NVSHMEM_THREAD_SERIALIZED) };
        Ok(())
    })
}

/// Writes the thread level the library provides, `NVSHMEM_THREAD_SERIALIZED`
/// (`nvshmem_query_thread`).
///
/// # Safety
/// `provided` must be NULL or point to a writable `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmem_query_thread(provided: *mut c_int) {
    value_call("nvshmem_query_thread", (), || {
        if provided.is_null() {
            return Err(FfiError::Null("provided"));
        }
        // SAFETY: non-null and, by the caller's contract, writable.
        unsafe { provided.write(NVSHMEM_THREAD_SERIALIZED) };
        Ok(())
    })
}

/// Initializes the library as `flags` say (`nvshmemx_init_attr`): 0 is
/// [`nvshmem_init`]'s environment init; `NVSHMEMX_INIT_WITH_UNIQUEID` joins the job that
/// `attr->args.uid_args` names (see [`nvshmemx_set_attr_uniqueid_args`]). Returns 0, or
/// an `NVSHMEMX_ERROR_*` value after a `NIIN:` line (it does not exit, unlike NVSHMEM's
/// inline version): `NOT_SUPPORTED` for `NVSHMEMX_INIT_WITH_MPI_COMM` reaching the
/// library (the header handles it with `-DNIIN_HAS_MPI`), `NVSHMEMX_INIT_WITH_SHMEM`,
/// `NVSHMEMX_INIT_THREAD_PES`, and a transport that cannot start (no NCCL or CUDA);
/// `INVALID_VALUE` for unknown flags, NULL or bad arguments, a bad unique ID or one made
/// for another transport.
///
/// # Safety
/// `attr` must be NULL or point to a readable `nvshmemx_init_attr_t`, and its
/// `args.uid_args.id`, if used and non-null, to a readable `nvshmemx_uniqueid_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_init_attr(flags: c_uint, attr: *mut NvshmemxInitAttr) -> c_int {
    status_call("nvshmemx_init_attr", || {
        // SAFETY: by the caller's contract `attr` is NULL or readable, and so is the
        // unique ID it points to when the unique-ID init reads it.
        let attr = unsafe { read_attr(flags, attr) };
        init_attr(flags, attr)
    })
}

/// Reads `*attr` and, for the unique-ID init, the ID it points to.
///
/// # Safety
/// As [`nvshmemx_init_attr`].
unsafe fn read_attr(
    flags: c_uint,
    attr: *const NvshmemxInitAttr,
) -> Option<(NvshmemxInitAttr, Option<NvshmemxUniqueid>)> {
    if attr.is_null() {
        return None;
    }
    // SAFETY: non-null and readable by the caller's contract.
    let attr = unsafe { attr.read() };
    let id = attr.args.uid_args.id;
    let id = (flags & NVSHMEMX_INIT_WITH_UNIQUEID != 0 && !id.is_null())
        // SAFETY: non-null and readable by the caller's contract.
        .then(|| unsafe { id.read() });
    Some((attr, id))
}

/// NVSHMEM's name of [`nvshmemx_init_attr`] for programs that use its host library
/// alone (`nvshmemx_hostlib_init_attr`).
///
/// # Safety
/// As [`nvshmemx_init_attr`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_hostlib_init_attr(
    flags: c_uint,
    attr: *mut NvshmemxInitAttr,
) -> c_int {
    status_call("nvshmemx_hostlib_init_attr", || {
        // SAFETY: forwarded from this function's contract.
        let attr = unsafe { read_attr(flags, attr) };
        init_attr(flags, attr)
    })
}

/// `NVSHMEM_STATUS_IS_INITIALIZED` while the library is initialized, else
/// `NVSHMEM_STATUS_NOT_INITIALIZED` (`nvshmemx_init_status`). NVSHMEM says
/// `IS_BOOTSTRAPPED` after a finalize, because its bootstrap outlives the library;
/// niin-rs keeps nothing, so it says `NOT_INITIALIZED`.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_init_status() -> c_int {
    if state::is_initialized() {
        NVSHMEM_STATUS_IS_INITIALIZED
    } else {
        NVSHMEM_STATUS_NOT_INITIALIZED
    }
}

/// Makes a new unique ID for a unique-ID init (`nvshmemx_get_uniqueid`): one PE calls
/// it, the application hands the 128 bytes to every PE, each calls
/// [`nvshmemx_set_attr_uniqueid_args`] and [`nvshmemx_init_attr`]. Works before init. On
/// the mock transport the ID names a fresh mock job, on the NCCL transport it carries an
/// `ncclUniqueId` (a failure to load NCCL is `NVSHMEMX_ERROR_NOT_SUPPORTED`). See
/// [`crate::uid`].
///
/// # Safety
/// `uniqueid` must be NULL or point to a writable `nvshmemx_uniqueid_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_get_uniqueid(uniqueid: *mut NvshmemxUniqueid) -> c_int {
    status_call("nvshmemx_get_uniqueid", || {
        if uniqueid.is_null() {
            return Err(FfiError::Null("uniqueid"));
        }
        let uid = new_uid(&WorldConfig::from_env()?)?;
        let id = NvshmemxUniqueid {
            version: version_v1(size_of::<NvshmemxUniqueid>()),
            internal: uid.encode(),
        };
        // SAFETY: non-null and, by the caller's contract, writable.
        unsafe { uniqueid.write(id) };
        Ok(())
    })
}

/// Stores this PE's rank, the number of ranks and the unique ID in `attr`
/// (`nvshmemx_set_attr_uniqueid_args`). The ID is not copied: it must stay valid until
/// `nvshmemx_init_attr` returns. The values are checked by the init.
///
/// # Safety
/// `attr` must be NULL or point to a readable and writable `nvshmemx_init_attr_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_set_attr_uniqueid_args(
    myrank: c_int,
    nranks: c_int,
    uniqueid: *const NvshmemxUniqueid,
    attr: *mut NvshmemxInitAttr,
) -> c_int {
    status_call("nvshmemx_set_attr_uniqueid_args", || {
        if attr.is_null() {
            return Err(FfiError::Null("attr"));
        }
        // SAFETY: `attr` is non-null and, by the caller's contract, points to a readable
        // and writable `nvshmemx_init_attr_t`.
        let mut a = unsafe { attr.read() };
        a.args.uid_args.id = uniqueid.cast_mut();
        a.args.uid_args.myrank = myrank;
        a.args.uid_args.nranks = nranks;
        // SAFETY: as above.
        unsafe { attr.write(a) };
        Ok(())
    })
}

/// Ends this PE's part in the library (`nvshmem_finalize`, collective). An inner finalize
/// of nested inits only counts; the last one completes outstanding work, waits for every
/// PE, and releases the world. Later calls (other than init) fail with "finalized".
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_finalize() {
    value_call("nvshmem_finalize", (), finalize);
}

/// NVSHMEM's name of [`nvshmem_finalize`] for programs that use its host library alone
/// (`nvshmemx_hostlib_finalize`).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_hostlib_finalize() {
    value_call("nvshmemx_hostlib_finalize", (), finalize);
}

fn finalize() -> FfiResult<()> {
    match state::finalize()? {
        Finalize::Nested => Ok(()),
        Finalize::Last(world) => {
            // The modules' device contexts first: their devComms use the communicator. The
            // driver-API modules' contexts go before the devComms they copied.
            let cleared = cumodule::detach();
            let detached = modules::detach_at_finalize(&world).and(cleared);
            world.finalize()?;
            detached
        }
    }
}

/// Ends the program of this PE with `status` (`nvshmem_global_exit`): this PE's
/// resources are released without waiting for the other PEs (no collective), then the
/// process exits. Under `niinrun` a non-zero status stops the other PEs too.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_global_exit(status: c_int) -> ! {
    let _ = std::panic::catch_unwind(|| drop(state::take_for_exit()));
    std::process::exit(status)
}
