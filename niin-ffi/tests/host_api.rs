//! The exported C functions called from Rust through the rlib, on the mock transport, as
//! the one PE of a one-PE world: the state machine (before init, init, nested init,
//! finalize, after finalize, init again), the error policy (return values and exactly
//! one `NIIN:` line per failing call), the heap, RMA on the host and on the default
//! stream, teams, the name and versions, and the unique-ID bootstrap.
//!
//! The library's state is process-global, so everything runs in one test function, in
//! order; this file holds no other test.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr::{null, null_mut};

use nvshmem_host::abi::*;
use nvshmem_host::uid::Uid;
use nvshmem_host::*;

const DEFAULT_STREAM: CudaStream = null_mut();

/// Runs `call`, which must fail with exactly one `NIIN: <function>: ...` line containing
/// `what`.
fn fails<R>(function: &str, what: &str, call: impl FnOnce() -> R) -> R {
    let before = report_count();
    let r = call();
    assert_eq!(
        report_count(),
        before + 1,
        "{function} writes exactly one NIIN: line"
    );
    let line = last_report().expect("a report");
    assert!(
        line.starts_with(&format!("NIIN: {function}: ")) && line.contains(what),
        "{function}: expected a line with {what:?}, got {line:?}"
    );
    r
}

/// Runs `call`, which must not write a `NIIN:` line.
fn quiet<R>(call: impl FnOnce() -> R) -> R {
    let before = report_count();
    let r = call();
    assert_eq!(
        report_count(),
        before,
        "unexpected report: {:?}",
        last_report()
    );
    r
}

fn set_env(name: &str, value: &str) {
    // SAFETY: this test binary runs one test, which is the only code reading or writing
    // the environment while it runs (the library reads it only inside the calls below).
    unsafe { std::env::set_var(name, value) };
}

fn name() -> String {
    let mut buf = [0 as c_char; NVSHMEM_MAX_NAME_LEN];
    // SAFETY: `buf` holds NVSHMEM_MAX_NAME_LEN bytes.
    unsafe { nvshmem_info_get_name(buf.as_mut_ptr()) };
    // SAFETY: the function wrote a NUL-terminated string into `buf`.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_str()
        .unwrap()
        .to_owned()
}

fn versions() -> ((c_int, c_int), (c_int, c_int, c_int)) {
    let (mut a, mut b, mut c, mut d, mut e) = (0, 0, 0, 0, 0);
    // SAFETY: all pointers are to live locals.
    unsafe { nvshmem_info_get_version(&mut a, &mut b) };
    // SAFETY: as above.
    unsafe { nvshmemx_vendor_get_version_info(&mut c, &mut d, &mut e) };
    ((a, b), (c, d, e))
}

fn before_init() {
    assert_eq!(nvshmemx_init_status(), NVSHMEM_STATUS_NOT_INITIALIZED);
    assert_eq!(
        fails("nvshmem_my_pe", "not initialized", || nvshmem_my_pe()),
        -1
    );
    assert_eq!(
        fails("nvshmem_n_pes", "not initialized", || nvshmem_n_pes()),
        -1
    );
    assert!(fails("nvshmem_malloc", "not initialized", || nvshmem_malloc(64)).is_null());
    fails("nvshmem_barrier_all", "not initialized", || {
        nvshmem_barrier_all()
    });
    fails("nvshmem_finalize", "not initialized", || nvshmem_finalize());
    let status = fails("nvshmem_barrier", "not initialized", || nvshmem_barrier(0));
    assert_eq!(status, NVSHMEMX_ERROR_INVALID_VALUE);
    let status = fails("niin_stream_synchronize", "not initialized", || {
        niin_stream_synchronize(DEFAULT_STREAM)
    });
    assert_eq!(status, NVSHMEMX_ERROR_INVALID_VALUE);
    // Constants answer before init, quietly.
    assert_eq!(quiet(name), VENDOR_NAME);
    assert!(VENDOR_NAME.starts_with("NIIN-RS (NVSHMEM Implemented In NCCL, Rust) v"));
    assert_eq!(quiet(versions), ((1, 3), (3, 4, 5)));
    let mut provided = -1;
    // SAFETY: `provided` is a live local.
    quiet(|| unsafe { nvshmem_query_thread(&mut provided) });
    assert_eq!(provided, NVSHMEM_THREAD_SERIALIZED);
    // SAFETY: NULL is allowed and reported.
    fails("nvshmem_info_get_name", "name is NULL", || unsafe {
        nvshmem_info_get_name(null_mut())
    });
}

fn init_errors() {
    let mut attr = NvshmemxInitAttr::INITIALIZER;
    // SAFETY: `attr` is a live local (and NULL is allowed).
    let status = fails("nvshmemx_init_attr", "-DNIIN_HAS_MPI", || unsafe {
        nvshmemx_init_attr(NVSHMEMX_INIT_WITH_MPI_COMM, &mut attr)
    });
    assert_eq!(status, NVSHMEMX_ERROR_NOT_SUPPORTED);
    // SAFETY: as above.
    let status = fails("nvshmemx_init_attr", "0x100", || unsafe {
        nvshmemx_init_attr(0x100, null_mut())
    });
    assert_eq!(status, NVSHMEMX_ERROR_INVALID_VALUE);
    // SAFETY: as above.
    let status = fails("nvshmemx_init_attr", "attr is NULL", || unsafe {
        nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, null_mut())
    });
    assert_eq!(status, NVSHMEMX_ERROR_INVALID_VALUE);
    // SAFETY: as above.
    let status = fails("nvshmemx_init_attr", "uid_args.id", || unsafe {
        nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &mut attr)
    });
    assert_eq!(status, NVSHMEMX_ERROR_INVALID_VALUE);

    // An empty ID (the initializer's), and one of the NCCL kind on the mock.
    let empty = NvshmemxUniqueid::INITIALIZER;
    // SAFETY: live locals.
    let status = unsafe { nvshmemx_set_attr_uniqueid_args(0, 1, &empty, &mut attr) };
    assert_eq!(status, 0);
    // SAFETY: `attr` points to `empty`, a live local.
    let status = fails("nvshmemx_init_attr", "empty", || unsafe {
        nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &mut attr)
    });
    assert_eq!(status, NVSHMEMX_ERROR_INVALID_VALUE);
    let mut nccl_id = [0u8; 128];
    nccl_id[..8].copy_from_slice(&[9; 8]);
    let nccl = NvshmemxUniqueid {
        internal: Uid::from_nccl(&nccl_id).unwrap().encode(),
        ..NvshmemxUniqueid::INITIALIZER
    };
    // SAFETY: live locals.
    unsafe { nvshmemx_set_attr_uniqueid_args(0, 1, &nccl, &mut attr) };
    // SAFETY: as above.
    let status = fails(
        "nvshmemx_init_attr",
        "made for the nccl transport",
        || unsafe { nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &mut attr) },
    );
    assert_eq!(status, NVSHMEMX_ERROR_INVALID_VALUE);
    // SAFETY: as above.
    unsafe { nvshmemx_set_attr_uniqueid_args(1, 1, &nccl, &mut attr) };
    // SAFETY: as above.
    let status = fails("nvshmemx_init_attr", "rank 1 of 1", || unsafe {
        nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &mut attr)
    });
    assert_eq!(status, NVSHMEMX_ERROR_INVALID_VALUE);

    // Without CUDA and NCCL (this machine), the NCCL transport cannot make an ID.
    let mut id = NvshmemxUniqueid::INITIALIZER;
    if niin_transport::probe::gpu_stack().is_none() {
        set_env("NIIN_TRANSPORT", "nccl");
        // SAFETY: `id` is a live local.
        let status = fails("nvshmemx_get_uniqueid", "", || unsafe {
            nvshmemx_get_uniqueid(&mut id)
        });
        assert_eq!(status, NVSHMEMX_ERROR_NOT_SUPPORTED);
        set_env("NIIN_TRANSPORT", "mock");
    }
    // A mock ID on a PE of another transport is refused.
    // SAFETY: `id` is a live local.
    assert_eq!(quiet(|| unsafe { nvshmemx_get_uniqueid(&mut id) }), 0);
    set_env("NIIN_TRANSPORT", "nccl");
    // SAFETY: live locals.
    unsafe { nvshmemx_set_attr_uniqueid_args(0, 1, &id, &mut attr) };
    // SAFETY: as above.
    let status = fails(
        "nvshmemx_init_attr",
        "made for the mock transport",
        || unsafe { nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &mut attr) },
    );
    assert_eq!(status, NVSHMEMX_ERROR_INVALID_VALUE);
    set_env("NIIN_TRANSPORT", "mock");
    // SAFETY: NULL is reported.
    let status = fails("nvshmemx_get_uniqueid", "NULL", || unsafe {
        nvshmemx_get_uniqueid(null_mut())
    });
    assert_eq!(status, NVSHMEMX_ERROR_INVALID_VALUE);
    assert_eq!(nvshmemx_init_status(), NVSHMEM_STATUS_NOT_INITIALIZED);
}

fn init_by_uid() {
    let mut id = NvshmemxUniqueid::INITIALIZER;
    let mut attr = NvshmemxInitAttr::INITIALIZER;
    // SAFETY: live locals; `id` outlives the init that reads it.
    unsafe {
        assert_eq!(nvshmemx_get_uniqueid(&mut id), 0);
    }
    assert_eq!(id.version, (1 << 16) + 128);
    assert_eq!(&id.internal[..4], b"NI\x01\x01");
    // SAFETY: as above.
    unsafe {
        assert_eq!(nvshmemx_set_attr_uniqueid_args(0, 1, &id, &mut attr), 0);
    }
    assert_eq!(attr.args.uid_args.myrank, 0);
    assert_eq!(attr.args.uid_args.nranks, 1);
    // SAFETY: as above.
    let status = quiet(|| unsafe { nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &mut attr) });
    assert_eq!(status, 0);
    assert_eq!(nvshmemx_init_status(), NVSHMEM_STATUS_IS_INITIALIZED);
    assert_eq!((nvshmem_my_pe(), nvshmem_n_pes()), (0, 1));
    // A nested init only counts.
    quiet(|| nvshmem_init());
    let mut provided = -1;
    // SAFETY: `provided` is a live local.
    let status = unsafe { nvshmem_init_thread(NVSHMEM_THREAD_MULTIPLE, &mut provided) };
    assert_eq!(status, 0);
    assert_eq!(provided, NVSHMEM_THREAD_SERIALIZED);
    // SAFETY: as above.
    let status = fails("nvshmem_init_thread", "99", || unsafe {
        nvshmem_init_thread(99, &mut provided)
    });
    assert_eq!(status, NVSHMEMX_ERROR_INVALID_VALUE);
}

fn queries_and_teams() {
    assert_eq!(quiet(|| nvshmem_team_my_pe(NVSHMEM_TEAM_WORLD)), 0);
    for team in 0..=NVSHMEMI_TEAM_GPU_LEADERS {
        assert_eq!(quiet(|| nvshmem_team_n_pes(team)), 1, "team {team}");
    }
    assert_eq!(quiet(|| nvshmem_team_my_pe(NVSHMEM_TEAM_INVALID)), -1);
    assert_eq!(quiet(|| nvshmem_team_n_pes(NVSHMEM_TEAM_INVALID)), -1);
    assert_eq!(
        fails("nvshmem_team_my_pe", "team 77", || nvshmem_team_my_pe(77)),
        -1
    );
    assert_eq!(
        quiet(|| nvshmem_team_translate_pe(NVSHMEMX_TEAM_NODE, 0, 0)),
        0
    );

    let config = NvshmemTeamConfig::new(2);
    let mut team = 0;
    // SAFETY: live locals.
    let status = quiet(|| unsafe {
        nvshmem_team_split_strided(
            NVSHMEM_TEAM_WORLD,
            0,
            1,
            1,
            &config,
            NVSHMEM_TEAM_CONFIG_MASK_NUM_CONTEXTS,
            &mut team,
        )
    });
    assert_eq!(status, 0);
    assert!(team >= 6, "a user team handle, got {team}");
    assert_eq!((nvshmem_team_my_pe(team), nvshmem_team_n_pes(team)), (0, 1));
    let mut got = NvshmemTeamConfig::new(-5);
    // SAFETY: `got` is a live local.
    unsafe { nvshmem_team_get_config(team, &mut got) };
    assert_eq!(got.num_contexts, 2);
    assert_eq!(nvshmem_barrier(team), 0);
    assert_eq!(nvshmem_team_sync(team), 0);
    quiet(|| nvshmem_team_destroy(team));
    assert_eq!(
        fails("nvshmem_team_n_pes", "not a team", || nvshmem_team_n_pes(
            team
        )),
        -1
    );
    fails("nvshmem_team_destroy", "team", || {
        nvshmem_team_destroy(NVSHMEM_TEAM_WORLD)
    });
    quiet(|| nvshmem_team_destroy(NVSHMEM_TEAM_INVALID));

    let (mut x, mut y) = (0, 0);
    // SAFETY: live locals; NULL configurations are allowed.
    let status = unsafe {
        nvshmem_team_split_2d(NVSHMEM_TEAM_WORLD, 1, null(), 0, &mut x, null(), 0, &mut y)
    };
    assert_eq!(status, 0);
    assert_eq!((nvshmem_team_n_pes(x), nvshmem_team_n_pes(y)), (1, 1));
    nvshmem_team_destroy(x);
    nvshmem_team_destroy(y);
    let mut bad = 0;
    // SAFETY: live locals.
    let status = fails("nvshmem_team_split_strided", "split", || unsafe {
        nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 1, 2, null(), 0, &mut bad)
    });
    assert_ne!(status, 0);
    assert_eq!(bad, NVSHMEM_TEAM_INVALID);

    // The Rust API takes usize: negative C arguments are refused at the boundary, with
    // NVSHMEM's results (a failed status and NVSHMEM_TEAM_INVALID, -1) and the team model's
    // message naming the values.
    let mut bad = 0;
    // SAFETY: live locals.
    let status = fails(
        "nvshmem_team_split_strided",
        "<start -1, stride 1, size 1> of a parent team of 1 PEs",
        || unsafe { nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, -1, 1, 1, null(), 0, &mut bad) },
    );
    assert_eq!(status, NVSHMEMX_ERROR_INVALID_VALUE);
    assert_eq!(bad, NVSHMEM_TEAM_INVALID);
    let (mut x, mut y) = (0, 0);
    // SAFETY: live locals; NULL configurations are allowed.
    let status = fails("nvshmem_team_split_2d", "xrange -2", || unsafe {
        nvshmem_team_split_2d(NVSHMEM_TEAM_WORLD, -2, null(), 0, &mut x, null(), 0, &mut y)
    });
    assert_eq!(status, NVSHMEMX_ERROR_INVALID_VALUE);
    assert_eq!((x, y), (NVSHMEM_TEAM_INVALID, NVSHMEM_TEAM_INVALID));
    assert_eq!(
        quiet(|| nvshmem_team_translate_pe(NVSHMEM_TEAM_WORLD, -1, NVSHMEM_TEAM_WORLD)),
        -1
    );
    assert_eq!(
        quiet(|| nvshmem_team_translate_pe(NVSHMEM_TEAM_WORLD, 1, NVSHMEM_TEAM_WORLD)),
        -1,
        "PE 1 of a one-PE world"
    );
    // The world still works: nothing was left half-made.
    assert_eq!(nvshmem_barrier(NVSHMEM_TEAM_WORLD), 0);
}

fn heap() -> (*mut u8, *mut u64) {
    let buf = quiet(|| nvshmem_malloc(1000)).cast::<u8>();
    assert!(!buf.is_null());
    let sig = quiet(|| nvshmem_calloc(4, 8)).cast::<u64>();
    assert!(!sig.is_null());
    // SAFETY: the mock's heap is host memory of this process; 4 words were allocated.
    let words = unsafe { std::slice::from_raw_parts(sig, 4) };
    assert_eq!(words, &[0; 4], "calloc zeroes");
    let aligned = quiet(|| nvshmem_align(4096, 10));
    assert!(!aligned.is_null() && aligned as usize % 4096 == 0);
    assert!(
        quiet(|| nvshmem_malloc(0)).is_null(),
        "size 0 is NULL, quietly"
    );
    assert!(quiet(|| nvshmem_calloc(0, 8)).is_null());
    assert!(
        fails("nvshmem_calloc", "overflow", || nvshmem_calloc(
            usize::MAX,
            2
        ))
        .is_null()
    );
    assert!(
        fails("nvshmem_malloc", "out of symmetric heap memory", || {
            nvshmem_malloc(1 << 40)
        })
        .is_null()
    );
    assert!(fails("nvshmem_align", "", || nvshmem_align(3, 64)).is_null());

    assert_eq!(quiet(|| nvshmem_ptr(buf.cast(), 0)), buf.cast::<c_void>());
    assert!(
        fails(
            "nvshmem_ptr",
            "target PE 1 is out of range",
            || nvshmem_ptr(buf.cast(), 1)
        )
        .is_null()
    );
    let local = 5u64;
    let local_ptr: *const c_void = (&raw const local).cast();
    assert!(
        fails("nvshmem_ptr", "not in this PE's symmetric heap", || {
            nvshmem_ptr(local_ptr, 0)
        })
        .is_null()
    );
    fails("nvshmem_free", "not in this PE's symmetric heap", || {
        nvshmem_free(local_ptr.cast_mut())
    });
    fails("nvshmem_free", "interior pointer", || {
        nvshmem_free(buf.wrapping_add(1).cast())
    });
    quiet(|| nvshmem_free(null_mut()));
    quiet(|| nvshmem_free(aligned));
    fails("nvshmem_free", "double free", || nvshmem_free(aligned));
    (buf, sig)
}

fn rma(buf: *mut u8, sig: *mut u64) {
    let src: Vec<u8> = (0..1000).map(|i| (i * 7 % 251) as u8).collect();
    let mut dst = vec![0u8; 1000];
    let s = DEFAULT_STREAM;

    // On the default stream: put to self, get back, wait. The local buffers outlive
    // the stream operations: each synchronize below completes them first.
    let before = report_count();
    // SAFETY: `src` is readable until the synchronize below.
    unsafe { nvshmemx_putmem_on_stream(buf.cast(), src.as_ptr().cast(), 1000, 0, s) };
    nvshmemx_barrier_all_on_stream(s);
    // SAFETY: `dst` is writable, and untouched, until the synchronize below.
    unsafe { nvshmemx_getmem_on_stream(dst.as_mut_ptr().cast(), buf.cast(), 1000, 0, s) };
    nvshmemx_quiet_on_stream(s);
    assert_eq!(niin_stream_synchronize(s), 0);
    assert_eq!(report_count(), before, "{:?}", last_report());
    assert_eq!(dst, src);

    // Put with signal, waited for on the stream, and the other on-stream forms.
    dst.fill(0);
    let half = src[500..].as_ptr();
    // SAFETY: as above.
    unsafe {
        nvshmemx_putmem_signal_on_stream(
            buf.cast(),
            half.cast(),
            500,
            sig,
            3,
            NVSHMEM_SIGNAL_ADD,
            0,
            s,
        )
    };
    nvshmemx_signal_wait_until_on_stream(sig, NVSHMEM_CMP_GE, 3, s);
    // SAFETY: as above.
    unsafe { nvshmemx_getmem_nbi_on_stream(dst.as_mut_ptr().cast(), buf.cast(), 500, 0, s) };
    // SAFETY: 0 bytes: nothing is read.
    unsafe {
        nvshmemx_putmem_signal_nbi_on_stream(
            null_mut(),
            null(),
            0,
            sig,
            10,
            NVSHMEM_SIGNAL_SET,
            0,
            s,
        )
    };
    nvshmemx_signal_op_on_stream(sig.wrapping_add(1), 4, NVSHMEM_SIGNAL_ADD, 0, s);
    // SAFETY: as above.
    unsafe {
        nvshmemx_putmem_nbi_on_stream(buf.wrapping_add(999).cast(), src.as_ptr().cast(), 1, 0, s)
    };
    nvshmemx_sync_all_on_stream(s);
    assert_eq!(nvshmemx_barrier_on_stream(NVSHMEM_TEAM_WORLD, s), 0);
    assert_eq!(nvshmemx_team_sync_on_stream(NVSHMEMX_TEAM_NODE, s), 0);
    assert_eq!(niin_stream_synchronize(s), 0);
    assert_eq!(report_count(), before, "{:?}", last_report());
    assert_eq!(dst[..500], src[500..]);
    assert_eq!(quiet(|| nvshmem_signal_fetch(sig)), 10);
    // SAFETY: the second word of the calloc'd signals, in host memory (the mock).
    assert_eq!(unsafe { sig.wrapping_add(1).read_volatile() }, 4);

    // Errors found by the call: nothing is enqueued.
    let status = fails("nvshmemx_barrier_on_stream", "team 99", || {
        nvshmemx_barrier_on_stream(99, s)
    });
    assert_eq!(status, NVSHMEMX_ERROR_INVALID_VALUE);
    // SAFETY: the arguments are rejected before anything is read.
    fails("nvshmemx_putmem_signal_on_stream", "sig_op", || unsafe {
        nvshmemx_putmem_signal_on_stream(buf.cast(), src.as_ptr().cast(), 8, sig, 3, 0, 0, s)
    });
    fails("nvshmemx_signal_wait_until_on_stream", "cmp", || {
        nvshmemx_signal_wait_until_on_stream(sig, 17, 0, s)
    });
    // SAFETY: as above.
    fails("nvshmemx_putmem_on_stream", "source is NULL", || unsafe {
        nvshmemx_putmem_on_stream(buf.cast(), null(), 8, 0, s)
    });
    // SAFETY: as above.
    fails("nvshmemx_getmem_on_stream", "out of range", || unsafe {
        nvshmemx_getmem_on_stream(dst.as_mut_ptr().cast(), buf.cast(), 8, -3, s)
    });
    // 0 bytes do nothing, whatever the pointers.
    // SAFETY: nothing is read or written.
    quiet(|| unsafe { nvshmemx_putmem_on_stream(null_mut(), null(), 0, 0, s) });
    assert_eq!(niin_stream_synchronize(s), 0);

    // A typed put, get or put-with-signal whose symmetric operand is not aligned for its
    // elements is refused, as the typed p is.
    let longs = [7i64; 2];
    let mut longs_back = [0i64; 2];
    let odd = buf.wrapping_add(4).cast::<i64>();
    fails("nvshmemx_long_p_on_stream", "not aligned", || {
        stream_typed::long::p_on_stream(odd, 1, 0, s)
    });
    // SAFETY: rejected before anything is read or written.
    fails("nvshmemx_long_put_on_stream", "dest", || unsafe {
        stream_typed::long::put_on_stream(odd, longs.as_ptr(), 2, 0, s)
    });
    // SAFETY: as above.
    fails("nvshmemx_long_get_nbi_on_stream", "source", || unsafe {
        stream_typed::long::get_nbi_on_stream(longs_back.as_mut_ptr(), odd, 2, 0, s)
    });
    // SAFETY: as above.
    fails(
        "nvshmemx_long_put_signal_on_stream",
        "not aligned",
        || unsafe {
            stream_typed::long::put_signal_on_stream(
                odd,
                longs.as_ptr(),
                2,
                sig,
                1,
                NVSHMEM_SIGNAL_SET,
                0,
                s,
            )
        },
    );
    // Aligned, the same calls run.
    let even = buf.wrapping_add(8).cast::<i64>();
    quiet(|| {
        // SAFETY: `longs` outlives the synchronize below.
        unsafe { stream_typed::long::put_on_stream(even, longs.as_ptr(), 2, 0, s) };
        // SAFETY: `longs_back` outlives the synchronize below, untouched until then.
        unsafe { stream_typed::long::get_nbi_on_stream(longs_back.as_mut_ptr(), even, 2, 0, s) };
    });
    assert_eq!(niin_stream_synchronize(s), 0);
    assert_eq!(longs_back, longs);

    // Host-initiated, blocking: each call completes before it returns.
    let word = 0xfeed_u64.to_ne_bytes();
    let mut back = [0u8; 8];
    let before = report_count();
    // SAFETY: `word` is a live local of 8 bytes.
    unsafe { nvshmem_putmem(buf.cast(), word.as_ptr().cast(), 8, 0) };
    nvshmem_quiet();
    // SAFETY: `back` is a live local of 8 bytes.
    unsafe { nvshmem_getmem(back.as_mut_ptr().cast(), buf.cast(), 8, 0) };
    assert_eq!(back, word);
    back = [0; 8];
    // SAFETY: as above.
    unsafe { nvshmem_putmem_nbi(buf.wrapping_add(8).cast(), word.as_ptr().cast(), 8, 0) };
    // SAFETY: as above.
    unsafe { nvshmem_getmem_nbi(back.as_mut_ptr().cast(), buf.wrapping_add(8).cast(), 8, 0) };
    assert_eq!(back, word);
    assert_eq!(report_count(), before, "{:?}", last_report());
    // SAFETY: rejected before anything is read (the destination is past the allocation).
    fails(
        "nvshmem_putmem",
        "not inside a live symmetric allocation",
        || unsafe { nvshmem_putmem(buf.wrapping_add(1020).cast(), word.as_ptr().cast(), 8, 0) },
    );
    quiet(|| {
        nvshmem_fence();
        nvshmem_quiet();
        nvshmem_barrier_all();
        nvshmem_sync_all();
    });
    assert_eq!(nvshmem_barrier(NVSHMEM_TEAM_WORLD), 0);
    nvshmem_free(sig.cast());
    nvshmem_free(buf.cast());
}

fn finalize_and_after() {
    quiet(|| nvshmem_finalize()); // the nested init_thread
    quiet(|| nvshmem_finalize()); // the nested init
    assert_eq!(nvshmemx_init_status(), NVSHMEM_STATUS_IS_INITIALIZED);
    quiet(|| nvshmem_finalize()); // the first init: ends the world
    assert_eq!(nvshmemx_init_status(), NVSHMEM_STATUS_NOT_INITIALIZED);
    assert_eq!(fails("nvshmem_my_pe", "finalized", || nvshmem_my_pe()), -1);
    assert!(fails("nvshmem_malloc", "finalized", || nvshmem_malloc(8)).is_null());
    fails("nvshmem_quiet", "finalized", || nvshmem_quiet());
    fails("nvshmemx_quiet_on_stream", "finalized", || {
        nvshmemx_quiet_on_stream(DEFAULT_STREAM)
    });
    fails("nvshmem_finalize", "finalized", || nvshmem_finalize());
    fails("nvshmemx_hostlib_finalize", "finalized", || {
        nvshmemx_hostlib_finalize()
    });

    // Init again: a new world, from the environment this time.
    quiet(|| nvshmem_init());
    assert_eq!((nvshmem_my_pe(), nvshmem_n_pes()), (0, 1));
    let p = nvshmem_malloc(64);
    assert!(!p.is_null());
    nvshmem_free(p);
    quiet(|| nvshmemx_hostlib_finalize());
    assert_eq!(nvshmemx_init_status(), NVSHMEM_STATUS_NOT_INITIALIZED);
    // And through the host-library name of init_attr.
    let mut attr = NvshmemxInitAttr::INITIALIZER;
    // SAFETY: `attr` is a live local.
    assert_eq!(unsafe { nvshmemx_hostlib_init_attr(0, &mut attr) }, 0);
    assert_eq!(nvshmem_n_pes(), 1);
    nvshmem_finalize();
}

#[test]
fn the_host_api_on_one_pe() {
    for (k, v) in [
        ("NIIN_TRANSPORT", "mock"),
        ("NVSHMEM_SYMMETRIC_SIZE", "4M"),
        ("NIIN_TIMEOUT", "20"),
        ("NIIN_CHECK_SYMMETRY", "1"),
    ] {
        set_env(k, v);
    }
    for k in ["NIIN_PE", "NIIN_NPES", "NIIN_JOB_ID"] {
        // SAFETY: as in `set_env`.
        unsafe { std::env::remove_var(k) };
    }
    before_init();
    init_errors();
    init_by_uid();
    queries_and_teams();
    let (buf, sig) = heap();
    rma(buf, sig);
    finalize_and_after();
}
