//! Communicators: the unique id, creation with a versioned `ncclConfig_t`, properties,
//! the host collectives niin-rs needs, and release in `Drop`.

use std::fmt;
use std::mem::{offset_of, size_of};
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::error::{NcclError, Result};
use super::loader::Nccl;
use super::result;
use super::sys;
use super::table::CudaStream;
use super::version::NcclVersion;

/// NCCL's bootstrap id (`ncclUniqueId`, 128 bytes): made once by one rank
/// ([`Nccl::unique_id`]) and handed to every rank before [`Nccl::comm_init_rank`].
#[derive(Clone, PartialEq, Eq)]
pub struct UniqueId(pub [u8; 128]);

impl UniqueId {
    fn to_sys(&self) -> sys::ncclUniqueId {
        sys::ncclUniqueId {
            internal: self.0.map(|b| b as std::os::raw::c_char),
        }
    }

    fn from_sys(id: &sys::ncclUniqueId) -> Self {
        Self(id.internal.map(|c| c as u8))
    }
}

impl fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UniqueId(")?;
        for b in &self.0[..8] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "...)")
    }
}

/// How to create a communicator. Everything not listed is left to NCCL
/// (`NCCL_CONFIG_UNDEF_INT` / NULL in the configuration), so NCCL's defaults and `NCCL_*`
/// environment variables apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommOptions {
    /// A blocking communicator (NCCL's default): every call returns when done. A
    /// non-blocking one returns `ncclInProgress` and is polled; [`Comm`] polls it after
    /// each call, so both behave the same through this API.
    pub blocking: bool,
}

impl Default for CommOptions {
    fn default() -> Self {
        Self { blocking: true }
    }
}

/// The `ncclConfig_t` for `options`: exactly `NCCL_CONFIG_INITIALIZER` of the headers
/// `sys` was generated from (size, magic, version, every attribute undefined), with
/// `blocking` set.
///
/// Why one layout is safe with every NCCL niin-rs loads: `ncclConfig_t` is versioned and
/// append-only (80 bytes in 2.28, 88 in 2.29, 96 in 2.30.3, 112 in 2.31.2, each a prefix of
/// the next). NCCL's `parseCommConfig` starts from its own initializer, copies
/// `min(config->size, sizeof(its ncclConfig_t))` bytes of ours, checks only `magic`, and
/// resets to default the fields newer than `config->version`. So an older library ignores
/// the fields it does not know (all undefined here anyway), and a newer one keeps its
/// defaults for the fields we do not have.
pub fn config_for(options: &CommOptions) -> sys::ncclConfig_t {
    let undef = sys::NCCL_CONFIG_UNDEF_INT;
    // Every field is listed: regenerating `sys` against headers with new fields fails to
    // compile here until they are considered.
    sys::ncclConfig_t {
        size: size_of::<sys::ncclConfig_t>(),
        magic: sys::NCCL_API_MAGIC,
        version: sys::NCCL_VERSION_CODE,
        blocking: c_int::from(options.blocking),
        cgaClusterSize: undef,
        minCTAs: undef,
        maxCTAs: undef,
        netName: std::ptr::null(),
        splitShare: undef,
        trafficClass: undef,
        commName: std::ptr::null(),
        collnetEnable: undef,
        CTAPolicy: undef,
        shrinkShare: undef,
        nvlsCTAs: undef,
        nChannelsPerNetPeer: undef,
        nvlinkCentricSched: undef,
        graphUsageMode: undef,
        numRmaCtx: undef,
        maxP2pPeers: undef,
        graphStreamOrdering: undef,
        launchOrderImplicit: undef,
        numRmaSig: undef,
        rmaEagerInit: undef,
        hostCftMode: undef,
    }
}

/// An NCCL communicator. Cloning gives another handle to the same communicator; it is
/// released (finalized, then destroyed) when the last handle, window and device
/// communicator using it are dropped.
///
/// NCCL forbids two threads from using one communicator at the same time; `Comm` is
/// `Send + Sync` because every call it makes holds the communicator's lock. Code that
/// calls NCCL directly with [`Comm::raw`] must not race with it.
#[derive(Clone)]
pub struct Comm {
    pub(crate) inner: Arc<CommInner>,
}

pub(crate) struct CommInner {
    pub(crate) nccl: &'static Nccl,
    pub(crate) raw: sys::ncclComm_t,
    rank: i32,
    n_ranks: i32,
    cu_device: i32,
    blocking: bool,
    lock: Mutex<()>,
    abort_on_drop: AtomicBool,
}

// SAFETY: the communicator handle is only passed to NCCL while `lock` is held (or from
// Drop, which has exclusive access), which serialises use across threads as NCCL requires;
// the other fields are plain values.
unsafe impl Send for CommInner {}
// SAFETY: as for Send: shared access only reaches NCCL under `lock`.
unsafe impl Sync for CommInner {}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Comm")
            .field("rank", &self.inner.rank)
            .field("n_ranks", &self.inner.n_ranks)
            .field("cu_device", &self.inner.cu_device)
            .field("blocking", &self.inner.blocking)
            .finish_non_exhaustive()
    }
}

impl Nccl {
    /// A new bootstrap id (`ncclGetUniqueId`). Needs no GPU; it starts NCCL's bootstrap
    /// listener in this process, which the other ranks reach over the network.
    pub fn unique_id(&self) -> Result<UniqueId> {
        result::get_unique_id(self).map(|id| UniqueId::from_sys(&id))
    }

    /// Creates this process's rank `rank` of an `n_ranks` communicator
    /// (`ncclCommInitRankConfig`, collective: every rank calls it with the same `id`). The
    /// CUDA device current on this thread becomes the communicator's device.
    pub fn comm_init_rank(
        &'static self,
        n_ranks: i32,
        id: &UniqueId,
        rank: i32,
        options: CommOptions,
    ) -> Result<Comm> {
        if n_ranks < 1 || rank < 0 || rank >= n_ranks {
            return Err(NcclError::InvalidArgument {
                what: format!("rank {rank} of a {n_ranks}-rank communicator"),
            });
        }
        let mut config = config_for(&options);
        // SAFETY: `config` is initialised as NCCL_CONFIG_INITIALIZER does, with null strings.
        let raw = unsafe {
            result::comm_init_rank_config(self, n_ranks, id.to_sys(), rank, &mut config)
        }?;
        if raw.is_null() {
            return Err(NcclError::Call {
                func: "ncclCommInitRankConfig",
                code: 0,
                name: "returned success but no communicator".to_owned(),
                detail: String::new(),
            });
        }
        // SAFETY: raw is the live communicator just created, used by nothing else.
        unsafe { self.adopt(raw, options) }
    }

    /// Wraps `raw`, a communicator just created with `options`: waits for a non-blocking
    /// one to finish initialising, and reads its rank, size and device. On failure the
    /// communicator is aborted.
    ///
    /// # Safety
    /// `raw` is a live communicator of this library, used by nothing else.
    unsafe fn adopt(&'static self, raw: sys::ncclComm_t, options: CommOptions) -> Result<Comm> {
        let queried = (|| {
            if !options.blocking {
                // SAFETY: raw is live (the caller's contract).
                unsafe { wait_ready(self, raw) }?;
            }
            // SAFETY: raw is live and initialised.
            let rank = unsafe { result::comm_user_rank(self, raw) }?;
            // SAFETY: as above.
            let n_ranks = unsafe { result::comm_count(self, raw) }?;
            // SAFETY: as above.
            let cu_device = unsafe { result::comm_cu_device(self, raw) }?;
            Ok((rank, n_ranks, cu_device))
        })();
        let (rank, n_ranks, cu_device) = match queried {
            Ok(v) => v,
            Err(e) => {
                // SAFETY: raw is live and used by nothing else; it is not used afterwards.
                if let Err(abort) = unsafe { result::comm_abort(self, raw) } {
                    super::log_release_error(
                        "aborting a communicator that failed to start",
                        &abort,
                    );
                }
                return Err(e);
            }
        };
        Ok(Comm {
            inner: Arc::new(CommInner {
                nccl: self,
                raw,
                rank,
                n_ranks,
                cu_device,
                blocking: options.blocking,
                lock: Mutex::new(()),
                abort_on_drop: AtomicBool::new(false),
            }),
        })
    }

    /// Runs `f` between `ncclGroupStart` and `ncclGroupEnd` (called even when `f` fails;
    /// `f`'s error wins). With non-blocking communicators, the group's operations may still
    /// be in progress when this returns. `ncclGroupEnd` runs the grouped operations
    /// without holding the communicators' locks: no other thread may use those
    /// communicators meanwhile.
    pub fn group<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<R> {
        result::group_start(self)?;
        let r = f();
        let end = result::group_end(self);
        let v = r?;
        end?;
        Ok(v)
    }
}

/// Polls a non-blocking communicator until it is no longer `ncclInProgress`.
///
/// # Safety
/// `comm` is a live communicator of `nccl`.
unsafe fn wait_ready(nccl: &Nccl, comm: sys::ncclComm_t) -> Result<()> {
    loop {
        // SAFETY: forwarded from the caller.
        let state = unsafe { result::comm_get_async_error(nccl, comm) }?;
        if state == sys::ncclResult_t::ncclInProgress {
            std::thread::sleep(Duration::from_micros(50));
            continue;
        }
        // SAFETY: forwarded from the caller.
        return unsafe { nccl.check("ncclCommGetAsyncError (asynchronous error)", state, comm) };
    }
}

impl Comm {
    /// The library this communicator belongs to.
    pub fn nccl(&self) -> &'static Nccl {
        self.inner.nccl
    }

    /// This process's rank.
    pub fn rank(&self) -> i32 {
        self.inner.rank
    }

    /// The number of ranks.
    pub fn n_ranks(&self) -> i32 {
        self.inner.n_ranks
    }

    /// The CUDA device (ordinal) of the communicator.
    pub fn cu_device(&self) -> i32 {
        self.inner.cu_device
    }

    /// Whether the communicator was created blocking.
    pub fn is_blocking(&self) -> bool {
        self.inner.blocking
    }

    /// The raw handle, for calls through [`Nccl::table`] (which must not race with calls
    /// made through this `Comm`). It stays valid while any handle to this communicator
    /// lives.
    pub fn raw(&self) -> sys::ncclComm_t {
        self.inner.raw
    }

    /// Whether `self` and `other` are handles to the same communicator.
    pub fn same_as(&self, other: &Comm) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// A communicator of some of this one's ranks (`ncclCommSplit`, collective: every rank
    /// of `self` calls it at the same point of its calls on `self`). The ranks that pass the
    /// same `color` (at least 0) form one new communicator, numbered in the order of their
    /// `key`s (ties by their rank here); a rank that passes `None` joins none and gets
    /// `None`. The child has this communicator's blocking mode, and the rest of its
    /// configuration is NCCL's default.
    pub fn split(&self, color: Option<i32>, key: i32) -> Result<Option<Comm>> {
        if color.is_some_and(|c| c < 0) {
            return Err(NcclError::InvalidArgument {
                what: format!("split color {color:?}: a color is at least 0"),
            });
        }
        let options = CommOptions {
            blocking: self.inner.blocking,
        };
        let mut config = config_for(&options);
        let raw = {
            let _guard = self.lock();
            // SAFETY: the communicator is live while `self` exists, and the lock keeps other
            // threads off it; `config` is initialised as NCCL_CONFIG_INITIALIZER does, with
            // null strings; every rank makes the same call (this function's contract).
            unsafe {
                result::comm_split(
                    self.inner.nccl,
                    self.inner.raw,
                    color.unwrap_or(sys::NCCL_SPLIT_NOCOLOR),
                    key,
                    &mut config,
                )
            }?
        };
        if raw.is_null() {
            return match color {
                None => Ok(None),
                Some(c) => Err(NcclError::Call {
                    func: "ncclCommSplit",
                    code: 0,
                    name: format!("returned success but no communicator for color {c}"),
                    detail: String::new(),
                }),
            };
        }
        // SAFETY: raw is the live child just created, used by nothing else.
        unsafe { self.inner.nccl.adopt(raw, options) }.map(Some)
    }

    /// The communicator's lock: held by every call made through this API.
    pub(crate) fn lock(&self) -> MutexGuard<'_, ()> {
        self.inner
            .lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// After a call: waits for a non-blocking communicator to finish it.
    pub(crate) fn settle(&self) -> Result<()> {
        if self.inner.blocking {
            return Ok(());
        }
        // SAFETY: the communicator is live while `self` exists.
        unsafe { wait_ready(self.inner.nccl, self.inner.raw) }
    }

    /// The communicator's asynchronous error, if any (`ncclCommGetAsyncError`).
    pub fn async_error(&self) -> Result<()> {
        let _guard = self.lock();
        // SAFETY: the communicator is live while `self` exists.
        let state = unsafe { result::comm_get_async_error(self.inner.nccl, self.inner.raw) }?;
        // SAFETY: as above.
        unsafe {
            self.inner.nccl.check(
                "ncclCommGetAsyncError (asynchronous error)",
                state,
                self.inner.raw,
            )
        }
    }

    /// Releases the communicator with `ncclCommAbort` instead of finalize + destroy when the
    /// last handle is dropped (after a fatal error, when peers may be gone).
    pub fn abort_on_drop(&self) {
        self.inner.abort_on_drop.store(true, Ordering::Relaxed);
    }

    /// Whether [`Comm::abort_on_drop`] was called: the communicator is to be aborted after
    /// a fatal error, so releasing its windows and device communicators may fail, and the
    /// abort frees what they hold; those failures are not reported.
    pub fn is_aborting(&self) -> bool {
        self.inner.abort_on_drop.load(Ordering::Relaxed)
    }

    /// The communicator's properties as seen by device code of the headers `sys` was
    /// generated from (or of the library's own version, if older). `None` when the library
    /// has no `ncclCommQueryProperties` (2.28).
    pub fn properties(&self) -> Result<Option<CommProperties>> {
        let as_version = NcclVersion::headers().min(self.inner.nccl.version());
        self.properties_for_device_code(as_version)
    }

    /// The communicator's properties as seen by device code compiled against NCCL
    /// `device_headers` (`ncclCommProperties_t.version`; from 2.30.3, NCCL filters the
    /// answer for older device code, and refuses device code older than 2.29.2). `None`
    /// when the library has no `ncclCommQueryProperties` (2.28).
    ///
    /// The struct passed is this crate's generated `ncclCommProperties_t` (the newest
    /// layout, 144 bytes in 2.31.2) in a zeroed 256-byte buffer: NCCL 2.29–2.30 write their
    /// own fields without looking at `size`, all of which lie in that layout, except that
    /// 2.29.2–2.29.6 declare `ncclGinType_t` as a one-byte enum (see [`CommProperties`]).
    pub fn properties_for_device_code(
        &self,
        device_headers: NcclVersion,
    ) -> Result<Option<CommProperties>> {
        let nccl = self.inner.nccl;
        if nccl.table().comm_query_properties.is_none() {
            return Ok(None);
        }
        let mut buf = PropsBuf([0; PROPS_BUF_LEN]);
        write_props_header(&mut buf.0, device_headers);
        {
            let _guard = self.lock();
            // SAFETY: the communicator is live; buf is 8-aligned, zeroed, holds the header
            // and is larger than any ncclCommProperties_t a library writes.
            unsafe {
                result::comm_query_properties(nccl, self.inner.raw, buf.0.as_mut_ptr().cast())
            }?;
            self.settle()?;
        }
        Ok(Some(CommProperties::decode(
            &buf.0,
            nccl.version(),
            device_headers,
        )))
    }

    /// Sums `count` `i32`s over all ranks (`ncclAllReduce`, `ncclInt32`, `ncclSum`),
    /// enqueued on `stream`: for host barriers and agreement between PEs.
    ///
    /// # Safety
    /// `send` and `recv` are device (or NCCL-registered) buffers of `count` `i32`s valid
    /// until the operation completes on `stream`, a valid stream of the communicator's
    /// device. Every rank makes the same call.
    pub unsafe fn all_reduce_sum_i32(
        &self,
        send: *const i32,
        recv: *mut i32,
        count: usize,
        stream: CudaStream,
    ) -> Result<()> {
        let call = NcclColl::AllReduce(sys::ncclDataType_t::ncclInt32, sys::ncclRedOp_t::ncclSum);
        // SAFETY: forwarded from the caller.
        unsafe { self.collective(call, send.cast(), recv.cast(), count, stream) }
    }

    /// Enqueues one NCCL collective on `stream` (the host collectives of a world: see
    /// [`NcclColl`]); `count` is NCCL's (elements per rank where NCCL counts that way).
    ///
    /// # Safety
    /// As [`Comm::all_reduce_sum_i32`], with buffers of the sizes NCCL's function reads
    /// and writes for `count`.
    pub unsafe fn collective(
        &self,
        call: NcclColl,
        send: *const c_void,
        recv: *mut c_void,
        count: usize,
        stream: CudaStream,
    ) -> Result<()> {
        let (nccl, comm) = (self.inner.nccl, self.inner.raw);
        let _guard = self.lock();
        let r = match call {
            // SAFETY: forwarded from the caller; the communicator is live.
            NcclColl::AllReduce(t, op) => unsafe {
                result::all_reduce(nccl, send, recv, count, t, op, comm, stream)
            },
            // SAFETY: as above.
            NcclColl::ReduceScatter(t, op) => unsafe {
                result::reduce_scatter(nccl, send, recv, count, t, op, comm, stream)
            },
            // SAFETY: as above.
            NcclColl::Broadcast(t, root) => unsafe {
                result::broadcast(nccl, send, recv, count, t, root, comm, stream)
            },
            // SAFETY: as above.
            NcclColl::AllGather(t) => unsafe {
                result::all_gather(nccl, send, recv, count, t, comm, stream)
            },
            // SAFETY: as above.
            NcclColl::AlltoAll(t) => unsafe {
                result::all_to_all(nccl, send, recv, count, t, comm, stream)
            },
        };
        r?;
        self.settle()
    }

    /// Broadcasts `bytes` bytes from `root`'s `send` into every rank's `recv`
    /// (`ncclBroadcast`, `ncclUint8`), enqueued on `stream`.
    ///
    /// # Safety
    /// As [`Comm::all_reduce_sum_i32`], with `bytes`-byte buffers; `send` is read on `root`
    /// only.
    pub unsafe fn broadcast_bytes(
        &self,
        send: *const c_void,
        recv: *mut c_void,
        bytes: usize,
        root: i32,
        stream: CudaStream,
    ) -> Result<()> {
        if root < 0 || root >= self.n_ranks() {
            return Err(NcclError::InvalidArgument {
                what: format!(
                    "broadcast root {root} of a {}-rank communicator",
                    self.n_ranks()
                ),
            });
        }
        let call = NcclColl::Broadcast(sys::ncclDataType_t::ncclUint8, root);
        // SAFETY: forwarded from the caller.
        unsafe { self.collective(call, send, recv, bytes, stream) }
    }
}

/// One NCCL collective call, with its element type (and operator or root).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NcclColl {
    /// `ncclAllReduce`.
    AllReduce(sys::ncclDataType_t, sys::ncclRedOp_t),
    /// `ncclReduceScatter`.
    ReduceScatter(sys::ncclDataType_t, sys::ncclRedOp_t),
    /// `ncclBroadcast` from a rank.
    Broadcast(sys::ncclDataType_t, c_int),
    /// `ncclAllGather`.
    AllGather(sys::ncclDataType_t),
    /// `ncclAlltoAll`.
    AlltoAll(sys::ncclDataType_t),
}

impl NcclColl {
    /// The NCCL function that runs the call (for [`NcclTable::has`](super::NcclTable::has)).
    pub fn symbol(self) -> &'static str {
        match self {
            NcclColl::AllReduce(..) => "ncclAllReduce",
            NcclColl::ReduceScatter(..) => "ncclReduceScatter",
            NcclColl::Broadcast(..) => "ncclBroadcast",
            NcclColl::AllGather(..) => "ncclAllGather",
            NcclColl::AlltoAll(..) => "ncclAlltoAll",
        }
    }
}

impl Drop for CommInner {
    /// Finalize, then destroy: `ncclCommFinalize` flushes what is still queued on the
    /// communicator and releases the resources it shares with its peers (it may wait for
    /// them, so every rank drops its communicator); `ncclCommDestroy` then frees the local
    /// memory without blocking. Destroy alone would finalize implicitly but lose the
    /// flush's errors. A non-blocking communicator is polled until finalized. Errors are
    /// logged, not returned (Drop cannot fail). After [`Comm::abort_on_drop`],
    /// `ncclCommAbort` replaces both.
    fn drop(&mut self) {
        let nccl = self.nccl;
        if self.abort_on_drop.load(Ordering::Relaxed) {
            // SAFETY: last handle: the communicator is live and used by nothing else.
            if let Err(e) = unsafe { result::comm_abort(nccl, self.raw) } {
                super::log_release_error("ncclCommAbort", &e);
            }
            return;
        }
        if nccl.table().comm_finalize.is_some() {
            // SAFETY: last handle: the communicator is live, not finalized, unused elsewhere.
            let mut finalized = unsafe { result::comm_finalize(nccl, self.raw) };
            if finalized.is_ok() && !self.blocking {
                // SAFETY: as above.
                finalized = unsafe { wait_ready(nccl, self.raw) };
            }
            if let Err(e) = finalized {
                super::log_release_error("ncclCommFinalize", &e);
            }
        }
        // SAFETY: last handle: the communicator is live and used by nothing else.
        if let Err(e) = unsafe { result::comm_destroy(nccl, self.raw) } {
            super::log_release_error("ncclCommDestroy", &e);
        }
    }
}

/// Room for any `ncclCommProperties_t` a library writes (2.31.2: 144 bytes).
const PROPS_BUF_LEN: usize = 256;

/// A zeroed, 8-aligned byte buffer passed as `ncclCommProperties_t*`.
#[repr(C, align(8))]
struct PropsBuf([u8; PROPS_BUF_LEN]);

const _: () = assert!(size_of::<sys::ncclCommProperties_t>() <= PROPS_BUF_LEN);
const _: () = assert!(std::mem::align_of::<sys::ncclCommProperties_t>() <= 8);

/// In NCCL 2.29.2 and 2.29.3 (headers of both wheels) `ncclGinType_t` is
/// `enum : uint8_t` and `ginType` is the byte at offset 34, right after the two `bool`s;
/// from 2.29.7 on it is an `int`-sized enum at offset 36, followed by `nLsaTeams`,
/// `hostRmaSupport` and `railedGinType`, which 2.29.2/2.29.3 do not have. The fields
/// before it (`rank` 16, `nRanks` 20, `cudaDev` 24, `nvmlDev` 28, `deviceApiSupport` 32,
/// `multimemSupport` 33) are at the same offsets in every version.
const GIN_TYPE_U8_OFFSET: usize = 34;
/// The first version whose `ncclCommProperties_t` is a prefix of the generated one.
const PROPS_LAYOUT_2_29_7: NcclVersion = NcclVersion::new(2, 29, 7);
/// NCCL writes `hostRmaSupport`, `ginType`/`railedGinType` (as the 2.29.7 layout) and
/// `nLsaTeams` only when `props->version` is above 2.29.3.
const PROPS_TEAMS_AFTER: NcclVersion = NcclVersion::new(2, 29, 3);

fn write_props_header(buf: &mut [u8], version: NcclVersion) {
    let size = size_of::<sys::ncclCommProperties_t>();
    let at = offset_of!(sys::ncclCommProperties_t, size);
    buf[at..at + size_of::<usize>()].copy_from_slice(&size.to_ne_bytes());
    let at = offset_of!(sys::ncclCommProperties_t, magic);
    buf[at..at + 4].copy_from_slice(&sys::NCCL_API_MAGIC.to_ne_bytes());
    let at = offset_of!(sys::ncclCommProperties_t, version);
    buf[at..at + 4].copy_from_slice(&version.code.to_ne_bytes());
}

fn read_u32(buf: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&buf[at..at + 4]);
    u32::from_ne_bytes(b)
}

fn read_i32(buf: &[u8], at: usize) -> i32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&buf[at..at + 4]);
    i32::from_ne_bytes(b)
}

/// A communicator's properties (`ncclCommQueryProperties`, NCCL 2.29.2+).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommProperties {
    /// This rank.
    pub rank: i32,
    /// The number of ranks.
    pub n_ranks: i32,
    /// The CUDA device.
    pub cuda_dev: i32,
    /// The NVML device.
    pub nvml_dev: i32,
    /// Whether a device communicator can be created (`deviceApiSupport`).
    pub device_api_support: bool,
    /// Whether the LSA team can use multimem (NVLS).
    pub multimem_support: bool,
    /// The GIN type available to the whole communicator (`NCCL_GIN_TYPE_NONE`: no GIN).
    pub gin_type: sys::ncclGinType_t,
    /// The number of LSA teams (`nLsaTeams`; `None` where the library does not report it:
    /// 2.29.2/2.29.3, or a query as device code ≤ 2.29.3).
    pub n_lsa_teams: Option<i32>,
    /// Whether host RMA (`ncclPutSignal`...) works on this communicator (`None` where not
    /// reported, as for `n_lsa_teams`).
    pub host_rma_support: Option<bool>,
    /// The railed GIN type (`None` where not reported).
    pub railed_gin_type: Option<sys::ncclGinType_t>,
    /// The `version` the query was made with (the device-code version NCCL answered for).
    pub queried_as: NcclVersion,
}

impl CommProperties {
    /// Decodes the buffer `ncclCommQueryProperties` filled, for a library of `runtime`
    /// queried with `version = queried_as`.
    pub fn decode(buf: &[u8], runtime: NcclVersion, queried_as: NcclVersion) -> Self {
        type P = sys::ncclCommProperties_t;
        let new_layout = runtime >= PROPS_LAYOUT_2_29_7;
        let gin_type = if new_layout {
            read_u32(buf, offset_of!(P, ginType))
        } else {
            u32::from(buf[GIN_TYPE_U8_OFFSET])
        };
        let reported = new_layout && queried_as > PROPS_TEAMS_AFTER;
        Self {
            rank: read_i32(buf, offset_of!(P, rank)),
            n_ranks: read_i32(buf, offset_of!(P, nRanks)),
            cuda_dev: read_i32(buf, offset_of!(P, cudaDev)),
            nvml_dev: read_i32(buf, offset_of!(P, nvmlDev)),
            device_api_support: buf[offset_of!(P, deviceApiSupport)] != 0,
            multimem_support: buf[offset_of!(P, multimemSupport)] != 0,
            gin_type: sys::ncclGinType_t(gin_type),
            n_lsa_teams: reported.then(|| read_i32(buf, offset_of!(P, nLsaTeams))),
            host_rma_support: reported.then(|| buf[offset_of!(P, hostRmaSupport)] != 0),
            railed_gin_type: reported
                .then(|| sys::ncclGinType_t(read_u32(buf, offset_of!(P, railedGinType)))),
            queried_as,
        }
    }

    /// The size of each LSA team: `n_ranks / n_lsa_teams`. NCCL makes LSA teams of one
    /// size, each a run of consecutive ranks (`ncclDevrInitOnce`: `lsaSize` is the gcd of
    /// the NVLink-domain sizes, `nLsaTeams = nRanks / lsaSize`). `None` when the team
    /// count is not reported or not a divisor.
    pub fn lsa_size(&self) -> Option<i32> {
        let teams = self.n_lsa_teams?;
        if teams > 0 && self.n_ranks % teams == 0 {
            Some(self.n_ranks / teams)
        } else {
            None
        }
    }

    /// This rank's index in its LSA team (`rank % lsa_size`).
    pub fn lsa_rank(&self) -> Option<i32> {
        self.lsa_size().map(|s| self.rank % s)
    }
}

/// NCCL's name of a GIN type ("none", "proxy", "gdaki", "gpi", "efa-gda", or the number).
pub fn gin_type_name(t: sys::ncclGinType_t) -> String {
    match t {
        sys::ncclGinType_t::NCCL_GIN_TYPE_NONE => "none".to_owned(),
        sys::ncclGinType_t::NCCL_GIN_TYPE_PROXY => "proxy".to_owned(),
        sys::ncclGinType_t::NCCL_GIN_TYPE_GDAKI => "gdaki".to_owned(),
        sys::ncclGinType_t::NCCL_GIN_TYPE_GPI => "gpi".to_owned(),
        sys::ncclGinType_t::NCCL_GIN_TYPE_EFA_GDA => "efa-gda".to_owned(),
        other => format!("gin type {}", other.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_is_the_generated_initializer() {
        let c = config_for(&CommOptions::default());
        assert_eq!(c.size, size_of::<sys::ncclConfig_t>());
        assert_eq!(c.size, 112, "2.31.2's ncclConfig_t");
        assert_eq!(c.magic, 0xcafe_beef);
        assert_eq!(c.version, 23102);
        assert_eq!(c.blocking, 1);
        let undef = i32::MIN;
        for (name, v) in [
            ("cgaClusterSize", c.cgaClusterSize),
            ("minCTAs", c.minCTAs),
            ("maxCTAs", c.maxCTAs),
            ("splitShare", c.splitShare),
            ("trafficClass", c.trafficClass),
            ("collnetEnable", c.collnetEnable),
            ("CTAPolicy", c.CTAPolicy),
            ("shrinkShare", c.shrinkShare),
            ("nvlsCTAs", c.nvlsCTAs),
            ("nChannelsPerNetPeer", c.nChannelsPerNetPeer),
            ("nvlinkCentricSched", c.nvlinkCentricSched),
            ("graphUsageMode", c.graphUsageMode),
            ("numRmaCtx", c.numRmaCtx),
            ("maxP2pPeers", c.maxP2pPeers),
            ("graphStreamOrdering", c.graphStreamOrdering),
            ("launchOrderImplicit", c.launchOrderImplicit),
            ("numRmaSig", c.numRmaSig),
            ("rmaEagerInit", c.rmaEagerInit),
            ("hostCftMode", c.hostCftMode),
        ] {
            assert_eq!(v, undef, "{name} must be NCCL_CONFIG_UNDEF_INT");
        }
        assert!(c.netName.is_null() && c.commName.is_null());
        let nb = config_for(&CommOptions { blocking: false });
        assert_eq!(nb.blocking, 0);
    }

    /// The 2.28 `ncclConfig_t` (`ncclConfig_v22800`, 80 bytes; generated from the 2.28.3 and
    /// 2.28.9 headers with the same script) is a prefix of ours: same fields at the same
    /// offsets, so a 2.28 library reading `min(size, 80)` bytes sees what it expects.
    #[test]
    fn config_2_28_is_a_prefix() {
        type C = sys::ncclConfig_t;
        let v2_28 = [
            ("size", 0, offset_of!(C, size)),
            ("magic", 8, offset_of!(C, magic)),
            ("version", 12, offset_of!(C, version)),
            ("blocking", 16, offset_of!(C, blocking)),
            ("cgaClusterSize", 20, offset_of!(C, cgaClusterSize)),
            ("minCTAs", 24, offset_of!(C, minCTAs)),
            ("maxCTAs", 28, offset_of!(C, maxCTAs)),
            ("netName", 32, offset_of!(C, netName)),
            ("splitShare", 40, offset_of!(C, splitShare)),
            ("trafficClass", 44, offset_of!(C, trafficClass)),
            ("commName", 48, offset_of!(C, commName)),
            ("collnetEnable", 56, offset_of!(C, collnetEnable)),
            ("CTAPolicy", 60, offset_of!(C, CTAPolicy)),
            ("shrinkShare", 64, offset_of!(C, shrinkShare)),
            ("nvlsCTAs", 68, offset_of!(C, nvlsCTAs)),
            (
                "nChannelsPerNetPeer",
                72,
                offset_of!(C, nChannelsPerNetPeer),
            ),
            ("nvlinkCentricSched", 76, offset_of!(C, nvlinkCentricSched)),
        ];
        for (name, old, new) in v2_28 {
            assert_eq!(old, new, "{name}");
        }
        // 2.29 appends graphUsageMode (80) and numRmaCtx (84): 88 bytes; 2.30.3 reaches 96.
        assert_eq!(offset_of!(C, graphUsageMode), 80);
        assert_eq!(offset_of!(C, numRmaCtx), 84);
        assert_eq!(offset_of!(C, maxP2pPeers), 88);
    }

    #[test]
    fn props_header_is_the_generated_initializer() {
        let mut buf = [0u8; PROPS_BUF_LEN];
        write_props_header(&mut buf, NcclVersion::new(2, 31, 2));
        assert_eq!(size_of::<sys::ncclCommProperties_t>(), 144);
        assert_eq!(&buf[0..8], &144usize.to_ne_bytes());
        assert_eq!(read_u32(&buf, 8), sys::NCCL_API_MAGIC);
        assert_eq!(read_u32(&buf, 12), 23102);
    }

    #[test]
    fn props_offsets_shared_by_every_version() {
        type P = sys::ncclCommProperties_t;
        assert_eq!(offset_of!(P, rank), 16);
        assert_eq!(offset_of!(P, nRanks), 20);
        assert_eq!(offset_of!(P, cudaDev), 24);
        assert_eq!(offset_of!(P, nvmlDev), 28);
        assert_eq!(offset_of!(P, deviceApiSupport), 32);
        assert_eq!(offset_of!(P, multimemSupport), 33);
        // 2.29.7+: the int-sized ginType after two bytes of padding.
        assert_eq!(offset_of!(P, ginType), 36);
        assert_eq!(offset_of!(P, nLsaTeams), 40);
        assert_eq!(offset_of!(P, hostRmaSupport), 44);
        assert_eq!(offset_of!(P, railedGinType), 48);
    }

    fn filled(write: impl Fn(&mut [u8])) -> [u8; PROPS_BUF_LEN] {
        let mut buf = [0u8; PROPS_BUF_LEN];
        write_props_header(&mut buf, NcclVersion::new(2, 31, 2));
        buf[16..20].copy_from_slice(&5i32.to_ne_bytes());
        buf[20..24].copy_from_slice(&8i32.to_ne_bytes());
        buf[24..28].copy_from_slice(&1i32.to_ne_bytes());
        buf[28..32].copy_from_slice(&1i32.to_ne_bytes());
        buf[32] = 1;
        write(&mut buf);
        buf
    }

    #[test]
    fn decodes_2_29_2_properties() {
        // 2.29.2 writes ginType as one byte at 34 and nothing after it.
        let buf = filled(|b| b[GIN_TYPE_U8_OFFSET] = 3);
        let p =
            CommProperties::decode(&buf, NcclVersion::new(2, 29, 2), NcclVersion::new(2, 29, 2));
        assert_eq!((p.rank, p.n_ranks, p.cuda_dev), (5, 8, 1));
        assert!(p.device_api_support && !p.multimem_support);
        assert_eq!(p.gin_type, sys::ncclGinType_t::NCCL_GIN_TYPE_GDAKI);
        assert_eq!(p.n_lsa_teams, None);
        assert_eq!(p.host_rma_support, None);
        assert_eq!(p.lsa_size(), None);
    }

    #[test]
    fn decodes_2_31_2_properties() {
        let buf = filled(|b| {
            b[36..40].copy_from_slice(&2u32.to_ne_bytes());
            b[40..44].copy_from_slice(&2i32.to_ne_bytes());
            b[44] = 1;
            b[48..52].copy_from_slice(&3u32.to_ne_bytes());
        });
        let v = NcclVersion::new(2, 31, 2);
        let p = CommProperties::decode(&buf, v, v);
        assert_eq!(p.gin_type, sys::ncclGinType_t::NCCL_GIN_TYPE_PROXY);
        assert_eq!(p.n_lsa_teams, Some(2));
        assert_eq!(p.host_rma_support, Some(true));
        assert_eq!(
            p.railed_gin_type,
            Some(sys::ncclGinType_t::NCCL_GIN_TYPE_GDAKI)
        );
        assert_eq!(p.lsa_size(), Some(4));
        assert_eq!(p.lsa_rank(), Some(1));
        // Queried as 2.29.2 device code, a 2.31.2 library leaves the team fields alone.
        let p = CommProperties::decode(&buf, v, NcclVersion::new(2, 29, 2));
        assert_eq!((p.n_lsa_teams, p.host_rma_support), (None, None));
    }

    #[test]
    fn lsa_size_needs_a_divisor() {
        let buf = filled(|b| b[40..44].copy_from_slice(&3i32.to_ne_bytes()));
        let v = NcclVersion::new(2, 30, 3);
        assert_eq!(CommProperties::decode(&buf, v, v).lsa_size(), None);
        let buf = filled(|_| {});
        assert_eq!(
            CommProperties::decode(&buf, v, v).lsa_size(),
            None,
            "0 teams"
        );
    }

    #[test]
    fn unique_id_round_trips() {
        let mut bytes = [0u8; 128];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i * 7) as u8;
        }
        let id = UniqueId(bytes);
        assert_eq!(UniqueId::from_sys(&id.to_sys()), id);
        assert_eq!(format!("{id:?}"), "UniqueId(00070e151c232a31...)");
    }

    #[test]
    fn names_gin_types() {
        assert_eq!(
            gin_type_name(sys::ncclGinType_t::NCCL_GIN_TYPE_NONE),
            "none"
        );
        assert_eq!(gin_type_name(sys::ncclGinType_t(9)), "gin type 9");
    }
}
