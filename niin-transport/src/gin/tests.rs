//! CPU tests of the GIN transport against a recording fake of [`HostRma`].
//!
//! The fake records every call and also executes it on host memory: its "heap window"
//! and "staging window" are host buffers whose addresses stand in for device addresses,
//! and each PE's remote heap is a byte vector. Like NCCL 2.29.2–2.30.7, it refuses a put
//! whose source is in neither window, so a test passes only if staging really happened.

use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::AnyTransport;
use crate::mock::{MockConfig, MockWorld};
use crate::router::{Providers, Routed, Router};

/// The fake's internal stream handle.
const INTERNAL: u64 = 0x1717;
/// A caller's stream handle.
const USER: u64 = 0xabc0;

/// One recorded call.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    Copy {
        dst: u64,
        src: u64,
        bytes: usize,
        stream: u64,
    },
    Gather {
        dst: u64,
        src: u64,
        src_pitch: usize,
        elem: usize,
        count: usize,
        stream: u64,
    },
    Store {
        dst: u64,
        bits: u64,
        bytes: usize,
        stream: u64,
    },
    Put {
        local: u64,
        bytes: usize,
        peer: i32,
        offset: usize,
        stream: u64,
    },
    Signal {
        peer: i32,
        stream: u64,
    },
    Wait {
        peer: i32,
        count: i32,
        stream: u64,
    },
    SlotWait {
        slot: usize,
        stream: u64,
    },
    SlotRecord {
        slot: usize,
        stream: u64,
    },
    Query {
        stream: u64,
    },
}

/// A host buffer whose address stands in for a device address.
#[derive(Debug)]
struct Region {
    bytes: Mutex<Vec<u8>>,
    base: u64,
    len: usize,
}

impl Region {
    fn new(len: usize) -> Region {
        let v = vec![0u8; len];
        let base = v.as_ptr() as u64;
        Region {
            bytes: Mutex::new(v),
            base,
            len,
        }
    }

    fn holds(&self, addr: u64, len: usize) -> bool {
        addr >= self.base && addr + len as u64 <= self.base + self.len as u64
    }

    fn read(&self, addr: u64, len: usize) -> Vec<u8> {
        let at = (addr - self.base) as usize;
        self.bytes.lock().unwrap()[at..at + len].to_vec()
    }

    fn write(&self, addr: u64, data: &[u8]) {
        let at = (addr - self.base) as usize;
        self.bytes.lock().unwrap()[at..at + data.len()].copy_from_slice(data);
    }
}

#[derive(Debug)]
struct FakeState {
    log: Mutex<Vec<Op>>,
    heap: Region,
    staging: Region,
    layout: StagingLayout,
    /// Each PE's heap as the network writes it.
    remote: Mutex<Vec<Vec<u8>>>,
    /// Streams never finish (a PE that makes no progress).
    stuck: AtomicBool,
    /// What `async_error` returns.
    async_error: Mutex<Option<TransportError>>,
}

impl FakeState {
    fn ops(&self) -> Vec<Op> {
        self.log.lock().unwrap().clone()
    }

    fn clear(&self) {
        self.log.lock().unwrap().clear();
    }

    fn record(&self, op: Op) {
        self.log.lock().unwrap().push(op);
    }

    fn puts(&self) -> Vec<Op> {
        self.ops()
            .into_iter()
            .filter(|o| matches!(o, Op::Put { .. }))
            .collect()
    }

    fn remote(&self, pe: usize, offset: usize, len: usize) -> Vec<u8> {
        self.remote.lock().unwrap()[pe][offset..offset + len].to_vec()
    }

    /// Reads `len` bytes at `addr`: from a window, or from the test's host memory.
    ///
    /// # Safety
    /// Outside the windows, `addr..addr+len` is readable host memory.
    unsafe fn read(&self, addr: u64, len: usize) -> Vec<u8> {
        if self.heap.holds(addr, len) {
            self.heap.read(addr, len)
        } else if self.staging.holds(addr, len) {
            self.staging.read(addr, len)
        } else {
            // SAFETY: the caller's contract.
            unsafe { std::slice::from_raw_parts(addr as usize as *const u8, len) }.to_vec()
        }
    }

    fn write_staging(&self, addr: u64, data: &[u8]) -> Result<()> {
        if !self.staging.holds(addr, data.len()) {
            return Err(TransportError::Gpu {
                what: format!("fake: {} bytes at {addr:#x} are not staging", data.len()),
            });
        }
        self.staging.write(addr, data);
        Ok(())
    }
}

#[derive(Debug)]
struct Fake(Arc<FakeState>);

impl HostRma for Fake {
    fn heap_window(&self) -> (u64, usize) {
        (self.0.heap.base, HEAP)
    }

    fn staging(&self) -> StagingLayout {
        self.0.layout
    }

    fn internal_stream(&self) -> u64 {
        INTERNAL
    }

    fn strict_ordering(&self) -> bool {
        true
    }

    fn enter(&self) -> Result<()> {
        Ok(())
    }

    unsafe fn copy(&self, dst: u64, src: u64, bytes: usize, stream: u64) -> Result<()> {
        self.0.record(Op::Copy {
            dst,
            src,
            bytes,
            stream,
        });
        // SAFETY: the trait's contract: the source is readable.
        let data = unsafe { self.0.read(src, bytes) };
        self.0.write_staging(dst, &data)
    }

    unsafe fn gather(
        &self,
        dst: u64,
        src: u64,
        src_pitch: usize,
        elem: usize,
        count: usize,
        stream: u64,
    ) -> Result<()> {
        self.0.record(Op::Gather {
            dst,
            src,
            src_pitch,
            elem,
            count,
            stream,
        });
        for i in 0..count {
            // SAFETY: the trait's contract: every source element is readable.
            let data = unsafe { self.0.read(src + (i * src_pitch) as u64, elem) };
            self.0.write_staging(dst + (i * elem) as u64, &data)?;
        }
        Ok(())
    }

    unsafe fn store(&self, dst: u64, value: Scalar, stream: u64) -> Result<()> {
        let bytes = value.width.bytes();
        self.0.record(Op::Store {
            dst,
            bits: value.bits,
            bytes,
            stream,
        });
        self.0
            .write_staging(dst, &value.bits.to_le_bytes()[..bytes])
    }

    unsafe fn put(
        &self,
        local: u64,
        bytes: usize,
        peer: i32,
        offset: usize,
        stream: u64,
    ) -> Result<()> {
        self.0.record(Op::Put {
            local,
            bytes,
            peer,
            offset,
            stream,
        });
        let in_heap =
            local >= self.0.heap.base && local + bytes as u64 <= self.0.heap.base + HEAP as u64;
        if !in_heap && !self.0.staging.holds(local, bytes) {
            return Err(TransportError::Gpu {
                what: "fake ncclPutSignal: srcWinHost is not in a valid symmetric window".into(),
            });
        }
        // SAFETY: the source lies in one of the fake's windows.
        let data = unsafe { self.0.read(local, bytes) };
        let mut remote = self.0.remote.lock().unwrap();
        let heap = &mut remote[peer as usize];
        if offset + bytes > heap.len() {
            return Err(TransportError::Gpu {
                what: "fake ncclPutSignal: past the window".into(),
            });
        }
        heap[offset..offset + bytes].copy_from_slice(&data);
        Ok(())
    }

    unsafe fn signal(&self, peer: i32, stream: u64) -> Result<()> {
        self.0.record(Op::Signal { peer, stream });
        Ok(())
    }

    unsafe fn wait(&self, peer: i32, count: i32, stream: u64) -> Result<()> {
        self.0.record(Op::Wait {
            peer,
            count,
            stream,
        });
        Ok(())
    }

    unsafe fn slot_wait(&self, slot: usize, stream: u64) -> Result<()> {
        self.0.record(Op::SlotWait { slot, stream });
        Ok(())
    }

    unsafe fn slot_record(&self, slot: usize, stream: u64) -> Result<()> {
        self.0.record(Op::SlotRecord { slot, stream });
        Ok(())
    }

    unsafe fn query(&self, stream: u64) -> Result<bool> {
        self.0.record(Op::Query { stream });
        Ok(!self.0.stuck.load(AtomicOrdering::Relaxed))
    }

    fn async_error(&self) -> Result<()> {
        match self.0.async_error.lock().unwrap().clone() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

const HEAP: usize = 4096;
const WORDS: usize = 4;
const CHUNK: usize = 64;
const CHUNKS: usize = 4;

/// PE `pe` of `n_pes` over a fake with 4 word slots and 4 chunk slots of 64 bytes.
fn gin(pe: usize, n_pes: usize) -> (GinTransport, Arc<FakeState>) {
    let mut layout = StagingLayout {
        base: 0,
        word_slots: WORDS,
        chunk_bytes: CHUNK,
        chunk_slots: CHUNKS,
    };
    let staging = Region::new(layout.size());
    layout.base = staging.base;
    let state = Arc::new(FakeState {
        log: Mutex::new(Vec::new()),
        // Slack past the window: a source that straddles its end is readable.
        heap: Region::new(HEAP + 64),
        staging,
        layout,
        remote: Mutex::new(vec![vec![0u8; HEAP]; n_pes]),
        stuck: AtomicBool::new(false),
        async_error: Mutex::new(None),
    });
    let t = GinTransport::with_backend(
        Box::new(Fake(Arc::clone(&state))),
        pe,
        n_pes,
        HEAP as u64,
        Duration::from_secs(5),
    )
    .unwrap();
    (t, state)
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + 3) as u8).collect()
}

fn word_slot(f: &FakeState, i: usize) -> Slot {
    f.layout.word(i)
}

fn chunk_slot(f: &FakeState, j: usize) -> Slot {
    f.layout.chunk(j)
}

fn expect_not_implemented(r: Result<impl fmt::Debug>, op: &str, pe: usize) {
    match r {
        Err(TransportError::NotImplemented { what }) => {
            assert!(what.contains(op), "{what:?} names {op}");
            assert!(what.contains(&format!("PE {pe}")), "{what:?} names PE {pe}");
        }
        other => panic!("expected NotImplemented for {op}, got {other:?}"),
    }
}

#[test]
fn gin_put_from_the_heap_window_is_one_put_with_exact_encoding() {
    let (t, f) = gin(0, 4);
    let data = pattern(100);
    f.heap.write(f.heap.base + 256, &data);
    let src = (f.heap.base + 256) as usize as *const u8;
    // SAFETY: `src` is 100 bytes of the fake's heap window, alive while `f` is.
    unsafe { t.put(Order::Stream(StreamHandle(USER)), 3, SymAddr(512), src, 100) }.unwrap();
    assert_eq!(
        f.ops(),
        [Op::Put {
            local: f.heap.base + 256,
            bytes: 100,
            peer: 3,
            offset: 512,
            stream: USER
        }]
    );
    assert_eq!(f.remote(3, 512, 100), data);
}

#[test]
fn gin_out_of_window_source_is_staged_copy_then_put() {
    let (t, f) = gin(1, 4);
    let data = pattern(40);
    // SAFETY: `data` is a live host buffer of 40 bytes.
    unsafe {
        t.put(
            Order::Stream(StreamHandle(USER)),
            2,
            SymAddr(8),
            data.as_ptr(),
            40,
        )
    }
    .unwrap();
    let c0 = chunk_slot(&f, 0);
    assert_eq!(
        f.ops(),
        [
            Op::SlotWait {
                slot: c0.index,
                stream: USER
            },
            Op::Copy {
                dst: c0.addr,
                src: data.as_ptr() as u64,
                bytes: 40,
                stream: USER
            },
            Op::Put {
                local: c0.addr,
                bytes: 40,
                peer: 2,
                offset: 8,
                stream: USER
            },
            Op::SlotRecord {
                slot: c0.index,
                stream: USER
            },
        ]
    );
    assert_eq!(f.remote(2, 8, 40), data);
}

#[test]
fn gin_a_source_straddling_the_window_end_is_staged() {
    let (t, f) = gin(0, 2);
    let src = (f.heap.base + HEAP as u64 - 4) as usize as *const u8;
    // SAFETY: 8 bytes of the fake heap's allocation (4 of them past the window).
    let r = unsafe { t.put(Order::Stream(StreamHandle(USER)), 1, SymAddr(0), src, 8) };
    r.unwrap();
    assert!(matches!(f.ops()[1], Op::Copy { .. }), "{:?}", f.ops());
}

#[test]
fn gin_large_put_is_chunked_in_order_through_the_staging_ring() {
    let (t, f) = gin(0, 4);
    let len = 4 * CHUNK + 44; // 5 pieces: 64, 64, 64, 64, 44
    let data = pattern(len);
    // SAFETY: `data` is a live host buffer of `len` bytes.
    unsafe {
        t.put(
            Order::Stream(StreamHandle(USER)),
            3,
            SymAddr(1000),
            data.as_ptr(),
            len,
        )
    }
    .unwrap();
    let pieces: Vec<(usize, usize, u64)> = f
        .puts()
        .into_iter()
        .map(|o| match o {
            Op::Put {
                offset,
                bytes,
                local,
                ..
            } => (offset, bytes, local),
            _ => unreachable!(),
        })
        .collect();
    let slots: Vec<u64> = [0, 1, 2, 3, 0]
        .iter()
        .map(|&j| chunk_slot(&f, j).addr)
        .collect();
    assert_eq!(
        pieces,
        [
            (1000, 64, slots[0]),
            (1064, 64, slots[1]),
            (1128, 64, slots[2]),
            (1192, 64, slots[3]),
            (1256, 44, slots[4]),
        ]
    );
    // Each piece: wait for the slot, copy into it, put from it, record it — in order.
    let ops = f.ops();
    assert_eq!(ops.len(), 5 * 4);
    for (k, piece) in ops.chunks(4).enumerate() {
        let slot = chunk_slot(&f, k % CHUNKS);
        assert_eq!(
            piece[0],
            Op::SlotWait {
                slot: slot.index,
                stream: USER
            }
        );
        assert!(
            matches!(piece[1], Op::Copy { dst, src, .. } if dst == slot.addr && src == data.as_ptr() as u64 + (k * CHUNK) as u64)
        );
        assert!(matches!(piece[2], Op::Put { local, .. } if local == slot.addr));
        assert_eq!(
            piece[3],
            Op::SlotRecord {
                slot: slot.index,
                stream: USER
            }
        );
    }
    assert_eq!(f.remote(3, 1000, len), data);
}

#[test]
fn gin_p_of_each_width_stores_into_a_word_slot_and_puts_it() {
    let (t, f) = gin(0, 4);
    let cases = [
        (Width::W1, 0xABu64, 17u64),
        (Width::W2, 0xBEEF, 34),
        (Width::W4, 0xDEAD_BEEF, 68),
        (Width::W8, 0x0123_4567_89AB_CDEF, 136),
    ];
    for (i, (width, bits, dst)) in cases.into_iter().enumerate() {
        f.clear();
        let dst = dst - dst % width.bytes() as u64;
        t.p(
            Order::Stream(StreamHandle(USER)),
            2,
            SymAddr(dst),
            Scalar { bits, width },
        )
        .unwrap();
        let w = word_slot(&f, i);
        assert_eq!(
            f.ops(),
            [
                Op::SlotWait {
                    slot: w.index,
                    stream: USER
                },
                Op::Store {
                    dst: w.addr,
                    bits,
                    bytes: width.bytes(),
                    stream: USER
                },
                Op::Put {
                    local: w.addr,
                    bytes: width.bytes(),
                    peer: 2,
                    offset: dst as usize,
                    stream: USER
                },
                Op::SlotRecord {
                    slot: w.index,
                    stream: USER
                },
            ],
            "{width:?}"
        );
        assert_eq!(
            f.remote(2, dst as usize, width.bytes()),
            bits.to_le_bytes()[..width.bytes()]
        );
    }
    // Bits above the width are not sent.
    f.clear();
    t.p(
        Order::Now,
        1,
        SymAddr(0),
        Scalar {
            bits: 0x1FF,
            width: Width::W1,
        },
    )
    .unwrap();
    assert!(matches!(
        f.ops()[1],
        Op::Store {
            bits: 0xFF,
            bytes: 1,
            ..
        }
    ));
    assert_eq!(
        t.p(
            Order::Now,
            1,
            SymAddr(2),
            Scalar {
                bits: 1,
                width: Width::W4
            }
        ),
        Err(TransportError::Misaligned {
            offset: 2,
            align: 4
        })
    );
}

#[test]
fn gin_put_signal_set_is_the_data_then_an_8_byte_put_to_the_signal() {
    let (t, f) = gin(0, 4);
    let data = pattern(24);
    let sig = SymAddr(2048);
    // SAFETY: `data` is a live host buffer of 24 bytes.
    unsafe {
        t.put_signal(
            Order::Stream(StreamHandle(USER)),
            3,
            SymAddr(64),
            data.as_ptr(),
            24,
            sig,
            0x5151,
            SignalOp::Set,
        )
    }
    .unwrap();
    let (c0, w0) = (chunk_slot(&f, 0), word_slot(&f, 0));
    assert_eq!(
        f.puts(),
        [
            Op::Put {
                local: c0.addr,
                bytes: 24,
                peer: 3,
                offset: 64,
                stream: USER
            },
            Op::Put {
                local: w0.addr,
                bytes: 8,
                peer: 3,
                offset: 2048,
                stream: USER
            },
        ]
    );
    // The value is staged before its put, and after the data's put.
    let ops = f.ops();
    let data_put = ops
        .iter()
        .position(|o| matches!(o, Op::Put { offset: 64, .. }));
    let store = ops
        .iter()
        .position(|o| matches!(o, Op::Store { bits: 0x5151, .. }));
    let sig_put = ops
        .iter()
        .position(|o| matches!(o, Op::Put { offset: 2048, .. }));
    assert!(data_put < store && store < sig_put, "{ops:?}");
    assert_eq!(f.remote(3, 64, 24), data);
    assert_eq!(f.remote(3, 2048, 8), 0x5151u64.to_le_bytes());

    // From the heap window, with no data: the signal alone.
    f.clear();
    // SAFETY: zero bytes are read.
    unsafe {
        t.put_signal(
            Order::Now,
            2,
            SymAddr(0),
            f.heap.base as usize as *const u8,
            0,
            SymAddr(8),
            1,
            SignalOp::Set,
        )
    }
    .unwrap();
    assert_eq!(f.puts().len(), 1);
    assert_eq!(
        t.signal_op(Order::Now, 2, SymAddr(12), 1, SignalOp::Set),
        Err(TransportError::Misaligned {
            offset: 12,
            align: 8
        })
    );
}

#[test]
fn gin_signal_op_set_is_one_8_byte_put() {
    let (t, f) = gin(0, 4);
    t.signal_op(
        Order::Stream(StreamHandle(USER)),
        2,
        SymAddr(4088),
        9,
        SignalOp::Set,
    )
    .unwrap();
    let w0 = word_slot(&f, 0);
    assert_eq!(
        f.puts(),
        [Op::Put {
            local: w0.addr,
            bytes: 8,
            peer: 2,
            offset: 4088,
            stream: USER
        }]
    );
    assert_eq!(f.remote(2, 4088, 8), 9u64.to_le_bytes());
}

#[test]
fn gin_add_get_and_atomics_are_not_implemented_naming_the_pe() {
    let (t, f) = gin(0, 4);
    let buf = [0u8; 8];
    let mut out = [0u8; 8];
    let order = Order::Stream(StreamHandle(USER));
    // SAFETY: `buf` is a live host buffer of 8 bytes (and nothing is read).
    let ps = unsafe {
        t.put_signal(
            order,
            3,
            SymAddr(0),
            buf.as_ptr(),
            8,
            SymAddr(8),
            1,
            SignalOp::Add,
        )
    };
    expect_not_implemented(ps, "SIGNAL_ADD", 3);
    expect_not_implemented(
        t.signal_op(order, 2, SymAddr(8), 1, SignalOp::Add),
        "ADD",
        2,
    );
    // SAFETY: `out` is a live host buffer of 8 bytes (and nothing is written).
    let get = unsafe { t.get(order, 3, out.as_mut_ptr(), SymAddr(0), 8) };
    expect_not_implemented(get, "get", 3);
    let shape = Strided {
        elem_size: 4,
        nelems: 2,
        dst_stride: 1,
        src_stride: 1,
    };
    // SAFETY: as above.
    let iget = unsafe { t.iget(order, 2, out.as_mut_ptr(), SymAddr(0), shape) };
    expect_not_implemented(iget, "iget", 2);
    expect_not_implemented(t.g(order, 3, SymAddr(0), Width::W8), "g on", 3);
    for op in AmoOp::ALL {
        expect_not_implemented(
            t.atomic(2, SymAddr(0), op, Width::W8, 1, 0),
            &format!("atomic {op:?}"),
            2,
        );
    }
    assert!(f.ops().is_empty(), "nothing reached NCCL: {:?}", f.ops());
    // A PE outside the world is that error, not NotImplemented.
    assert_eq!(
        t.g(order, 4, SymAddr(0), Width::W8),
        Err(TransportError::PeOutOfRange { pe: 4, n_pes: 4 })
    );
}

#[test]
fn gin_iput_stride_1_is_one_put() {
    let (t, f) = gin(0, 4);
    let shape = Strided {
        elem_size: 8,
        nelems: 5,
        dst_stride: 1,
        src_stride: 1,
    };
    f.heap.write(f.heap.base, &pattern(40));
    let src = f.heap.base as usize as *const u8;
    // SAFETY: 40 bytes of the fake's heap window.
    unsafe {
        t.iput(
            Order::Stream(StreamHandle(USER)),
            3,
            SymAddr(80),
            src,
            shape,
        )
    }
    .unwrap();
    assert_eq!(
        f.ops(),
        [Op::Put {
            local: f.heap.base,
            bytes: 40,
            peer: 3,
            offset: 80,
            stream: USER
        }]
    );
}

#[test]
fn gin_iput_strided_destination_is_one_put_per_element_at_the_right_offsets() {
    let (t, f) = gin(0, 4);
    let shape = Strided {
        elem_size: 4,
        nelems: 3,
        dst_stride: 3,
        src_stride: 2,
    };
    let src_bytes = pattern(shape.span(2).unwrap());
    f.heap.write(f.heap.base + 128, &src_bytes);
    let src = (f.heap.base + 128) as usize as *const u8;
    // SAFETY: the source span lies in the fake's heap window.
    unsafe {
        t.iput(
            Order::Stream(StreamHandle(USER)),
            1,
            SymAddr(400),
            src,
            shape,
        )
    }
    .unwrap();
    let expected: Vec<Op> = (0..3)
        .map(|i| Op::Put {
            local: f.heap.base + 128 + (i * 2 * 4) as u64,
            bytes: 4,
            peer: 1,
            offset: 400 + i * 3 * 4,
            stream: USER,
        })
        .collect();
    assert_eq!(f.ops(), expected, "directly from the heap window");
    for i in 0..3 {
        assert_eq!(
            f.remote(1, 400 + i * 12, 4),
            src_bytes[i * 8..i * 8 + 4],
            "element {i}"
        );
    }

    // From host memory: gathered into a chunk slot, then still one put per element.
    f.clear();
    let host = pattern(shape.span(2).unwrap());
    // SAFETY: `host` is a live buffer spanning the source.
    unsafe {
        t.iput(
            Order::Stream(StreamHandle(USER)),
            2,
            SymAddr(400),
            host.as_ptr(),
            shape,
        )
    }
    .unwrap();
    let c = chunk_slot(&f, 0);
    let ops = f.ops();
    assert_eq!(
        ops[1],
        Op::Gather {
            dst: c.addr,
            src: host.as_ptr() as u64,
            src_pitch: 8,
            elem: 4,
            count: 3,
            stream: USER
        }
    );
    let puts: Vec<(u64, usize)> = f
        .puts()
        .into_iter()
        .map(|o| match o {
            Op::Put { local, offset, .. } => (local, offset),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(puts, [(c.addr, 400), (c.addr + 4, 412), (c.addr + 8, 424)]);
    for i in 0..3 {
        assert_eq!(f.remote(2, 400 + i * 12, 4), host[i * 8..i * 8 + 4]);
    }
}

#[test]
fn gin_iput_contiguous_destination_gathers_chunks_of_a_strided_source() {
    let (t, f) = gin(0, 4);
    // 20 elements of 8 bytes at source stride 3: chunks of 64 bytes hold 8 elements,
    // so 3 gathers (8, 8, 4 elements) and 3 puts.
    let shape = Strided {
        elem_size: 8,
        nelems: 20,
        dst_stride: 1,
        src_stride: 3,
    };
    let host = pattern(shape.span(3).unwrap());
    // SAFETY: `host` spans the source.
    unsafe {
        t.iput(
            Order::Stream(StreamHandle(USER)),
            3,
            SymAddr(256),
            host.as_ptr(),
            shape,
        )
    }
    .unwrap();
    let gathers: Vec<(u64, usize)> = f
        .ops()
        .into_iter()
        .filter_map(|o| match o {
            Op::Gather { src, count, .. } => Some((src, count)),
            _ => None,
        })
        .collect();
    let base = host.as_ptr() as u64;
    assert_eq!(
        gathers,
        [(base, 8), (base + 8 * 24, 8), (base + 16 * 24, 4)]
    );
    let puts: Vec<(usize, usize)> = f
        .puts()
        .into_iter()
        .map(|o| match o {
            Op::Put { offset, bytes, .. } => (offset, bytes),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(puts, [(256, 64), (320, 64), (384, 32)]);
    let mut expected = Vec::new();
    for i in 0..20 {
        expected.extend_from_slice(&host[i * 24..i * 24 + 8]);
    }
    assert_eq!(f.remote(3, 256, 160), expected);
}

#[test]
fn gin_iput_checks_its_shape() {
    let (t, f) = gin(0, 4);
    let buf = [0u8; 64];
    let order = Order::Stream(StreamHandle(USER));
    let shape = Strided {
        elem_size: 3,
        nelems: 2,
        dst_stride: 1,
        src_stride: 1,
    };
    // SAFETY: `buf` is live; nothing is enqueued for a bad shape.
    let r = unsafe { t.iput(order, 1, SymAddr(0), buf.as_ptr(), shape) };
    assert!(matches!(r, Err(TransportError::BadWidth { bytes: 3, .. })));
    let zero_stride = Strided {
        elem_size: 4,
        dst_stride: 0,
        ..shape
    };
    // SAFETY: as above.
    let r = unsafe { t.iput(order, 1, SymAddr(0), buf.as_ptr(), zero_stride) };
    assert!(matches!(r, Err(TransportError::BadArgument { .. })));
    let too_far = Strided {
        elem_size: 4,
        nelems: 2,
        dst_stride: 2000,
        src_stride: 1,
    };
    // SAFETY: as above.
    let r = unsafe { t.iput(order, 1, SymAddr(0), buf.as_ptr(), too_far) };
    assert!(matches!(r, Err(TransportError::OutOfHeap { .. })), "{r:?}");
    assert!(f.ops().is_empty());
}

#[test]
fn gin_order_now_synchronizes_the_internal_stream_and_order_stream_does_not() {
    let (t, f) = gin(0, 4);
    let data = pattern(16);
    // SAFETY: `data` is a live host buffer of 16 bytes.
    unsafe { t.put(Order::Now, 2, SymAddr(0), data.as_ptr(), 16) }.unwrap();
    let ops = f.ops();
    assert_eq!(ops.last(), Some(&Op::Query { stream: INTERNAL }));
    assert!(
        ops.iter()
            .all(|o| !matches!(o, Op::Put { stream, .. } if *stream != INTERNAL)),
        "{ops:?}"
    );

    f.clear();
    // SAFETY: as above.
    unsafe {
        t.put(
            Order::Stream(StreamHandle(USER)),
            2,
            SymAddr(0),
            data.as_ptr(),
            16,
        )
    }
    .unwrap();
    t.p(
        Order::Stream(StreamHandle(USER)),
        2,
        SymAddr(0),
        Scalar {
            bits: 1,
            width: Width::W8,
        },
    )
    .unwrap();
    t.quiet(Order::Stream(StreamHandle(USER))).unwrap();
    t.fence(Order::Stream(StreamHandle(USER))).unwrap();
    assert!(
        f.ops().iter().all(|o| !matches!(o, Op::Query { .. })),
        "{:?}",
        f.ops()
    );

    f.clear();
    t.quiet(Order::Now).unwrap();
    assert_eq!(f.ops(), [Op::Query { stream: INTERNAL }]);
    f.clear();
    t.stream_synchronize(StreamHandle(USER)).unwrap();
    assert_eq!(f.ops(), [Op::Query { stream: USER }]);
}

#[test]
fn gin_a_stream_that_never_completes_times_out() {
    let (mut t, f) = gin(0, 2);
    t.timeout = Duration::from_millis(20);
    f.stuck.store(true, AtomicOrdering::Relaxed);
    let data = [1u8; 8];
    // SAFETY: `data` is a live host buffer of 8 bytes.
    let r = unsafe { t.put(Order::Now, 1, SymAddr(0), data.as_ptr(), 8) };
    match r {
        Err(TransportError::Timeout { op, pe, .. }) => assert_eq!((op, pe), ("put", 0)),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        t.stream_synchronize(StreamHandle(USER)),
        Err(TransportError::Timeout { .. })
    ));
}

#[test]
fn gin_stream_synchronize_reports_nccls_async_error() {
    let (t, f) = gin(0, 2);
    *f.async_error.lock().unwrap() = Some(TransportError::Gpu {
        what: "ncclCommGetAsyncError (asynchronous error): remote process exited".into(),
    });
    match t.stream_synchronize(StreamHandle(USER)) {
        Err(TransportError::StreamFailed { stream, cause }) => {
            assert_eq!(stream, StreamHandle(USER));
            assert!(cause.contains("remote process exited"), "{cause}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        t.quiet(Order::Now),
        Err(TransportError::Gpu { .. })
    ));
}

#[test]
fn gin_pe_out_of_range_and_ranges_past_the_heap_end() {
    let (t, f) = gin(0, 4);
    let data = [0u8; 16];
    let order = Order::Stream(StreamHandle(USER));
    // SAFETY: `data` is a live host buffer of 16 bytes; nothing is enqueued on errors.
    let r = unsafe { t.put(order, 4, SymAddr(0), data.as_ptr(), 16) };
    assert_eq!(r, Err(TransportError::PeOutOfRange { pe: 4, n_pes: 4 }));
    // SAFETY: as above.
    let r = unsafe { t.put(order, 1, SymAddr(HEAP as u64 - 8), data.as_ptr(), 16) };
    assert_eq!(
        r,
        Err(TransportError::OutOfHeap {
            offset: HEAP as u64 - 8,
            len: 16,
            heap_size: HEAP as u64
        })
    );
    // SAFETY: as above.
    let r = unsafe { t.put(order, 1, SymAddr(u64::MAX - 4), data.as_ptr(), 16) };
    assert!(matches!(r, Err(TransportError::OutOfHeap { .. })));
    // SAFETY: a null source is refused before use.
    let r = unsafe { t.put(order, 1, SymAddr(0), std::ptr::null(), 16) };
    assert!(matches!(r, Err(TransportError::BadArgument { .. })));
    let r = t.p(
        order,
        1,
        SymAddr(HEAP as u64),
        Scalar {
            bits: 0,
            width: Width::W1,
        },
    );
    assert!(matches!(r, Err(TransportError::OutOfHeap { .. })));
    let r = t.signal_op(order, 1, SymAddr(HEAP as u64), 0, SignalOp::Set);
    assert!(matches!(r, Err(TransportError::OutOfHeap { .. })));
    // SAFETY: as above.
    let r = unsafe {
        t.put_signal(
            order,
            1,
            SymAddr(0),
            data.as_ptr(),
            16,
            SymAddr(HEAP as u64),
            1,
            SignalOp::Set,
        )
    };
    assert!(matches!(r, Err(TransportError::OutOfHeap { .. })));
    assert_eq!(
        t.notify(order, 9),
        Err(TransportError::PeOutOfRange { pe: 9, n_pes: 4 })
    );
    assert!(f.ops().is_empty(), "{:?}", f.ops());
    // Zero bytes anywhere inside (and at the end of) the heap are fine and do nothing.
    // SAFETY: nothing is read.
    unsafe { t.put(order, 1, SymAddr(HEAP as u64), data.as_ptr(), 0) }.unwrap();
    assert!(f.ops().is_empty());
}

#[test]
fn gin_queries_and_pe_less_operations() {
    let (t, f) = gin(1, 4);
    assert_eq!((t.my_pe(), t.n_pes(), t.heap_size()), (1, 4, HEAP as u64));
    assert!(t.is_lsa_peer(1));
    for pe in [0, 2, 3, 7] {
        assert!(!t.is_lsa_peer(pe));
        assert!(t.peer_ptr(pe, SymAddr(0)).is_null());
    }
    assert_eq!(t.peer_ptr(1, SymAddr(16)) as u64, f.heap.base + 16);
    assert!(t.peer_ptr(1, SymAddr(HEAP as u64)).is_null());
    assert!(t.strict_ordering());
    assert_eq!(t.staging(), f.layout);
    for r in [
        t.stream_create().map(|_| ()),
        t.stream_destroy(StreamHandle(USER)),
        t.signal_fetch(SymAddr(0)).map(|_| ()),
        t.wait_until(Order::Now, SymAddr(0), WaitKind::SIGNAL, Cmp::Eq, 1),
        t.memset_local(SymAddr(0), 0, 8),
        t.barrier(
            Order::Now,
            TeamSync {
                team: 0,
                start: 0,
                stride: 1,
                size: 4,
            },
        ),
    ] {
        assert!(
            matches!(&r, Err(TransportError::NotImplemented { what }) if what.contains("LSA transport")),
            "{r:?}"
        );
    }
}

#[test]
fn gin_notify_and_wait_are_ncclsignal_and_ncclwaitsignal() {
    let (t, f) = gin(0, 4);
    t.notify(Order::Stream(StreamHandle(USER)), 3).unwrap();
    t.wait_notifications(Order::Stream(StreamHandle(USER)), 2, 5)
        .unwrap();
    t.wait_notifications(Order::Stream(StreamHandle(USER)), 2, 0)
        .unwrap();
    assert_eq!(
        f.ops(),
        [
            Op::Signal {
                peer: 3,
                stream: USER
            },
            Op::Wait {
                peer: 2,
                count: 5,
                stream: USER
            },
        ]
    );
    assert!(matches!(
        t.wait_notifications(Order::Now, 2, u32::MAX),
        Err(TransportError::BadArgument { .. })
    ));
}

#[test]
fn gin_finalize_then_every_call_fails() {
    let (t, f) = gin(0, 2);
    t.finalize().unwrap();
    assert_eq!(f.ops(), [Op::Query { stream: INTERNAL }]);
    t.finalize().unwrap();
    let data = [0u8; 4];
    // SAFETY: `data` is live; nothing is enqueued.
    let r = unsafe { t.put(Order::Now, 1, SymAddr(0), data.as_ptr(), 4) };
    assert_eq!(r, Err(TransportError::Finalized { pe: 0 }));
    assert_eq!(
        t.quiet(Order::Now),
        Err(TransportError::Finalized { pe: 0 })
    );
}

#[test]
fn gin_with_backend_checks_its_world() {
    let (t, f) = gin(0, 2);
    drop(t);
    let heap_too_big = GinTransport::with_backend(
        Box::new(Fake(Arc::clone(&f))),
        0,
        2,
        HEAP as u64 + 1,
        Duration::from_secs(1),
    );
    assert!(matches!(
        heap_too_big,
        Err(TransportError::BadArgument { .. })
    ));
    let pe_outside = GinTransport::with_backend(
        Box::new(Fake(Arc::clone(&f))),
        2,
        2,
        HEAP as u64,
        Duration::from_secs(1),
    );
    assert!(matches!(
        pe_outside,
        Err(TransportError::PeOutOfRange { pe: 2, n_pes: 2 })
    ));
}

#[test]
fn gin_new_refuses_nccl_without_host_rma() {
    let v = |m, p| NcclVersion::new(2, m, p);
    let path = "/opt/nccl/lib/libnccl.so.2";
    let refused = |r: Result<()>, why: &str| match r {
        Err(TransportError::NotImplemented { what }) => {
            assert!(
                what.starts_with(
                    "host RMA to non-LSA PEs needs NCCL ≥ 2.29.2 with hostRmaSupport; found NCCL"
                ),
                "{what}"
            );
            assert!(what.contains(path) && what.contains(why), "{what}");
        }
        other => panic!("{other:?}"),
    };
    refused(check_host_rma(v(28, 9), path, false, None), "2.28.9");
    refused(check_host_rma(v(28, 9), path, false, None), "ncclPutSignal");
    refused(
        check_host_rma(v(30, 3), path, false, Some(Some(true))),
        "does not export",
    );
    refused(
        check_host_rma(v(29, 7), path, true, None),
        "ncclCommQueryProperties",
    );
    refused(
        check_host_rma(v(31, 2), path, true, Some(Some(false))),
        "hostRmaSupport = false",
    );
    assert_eq!(
        check_host_rma(v(31, 2), path, true, Some(Some(true))),
        Ok(())
    );
    // 2.29.2 and 2.29.3 have host RMA but do not report the property.
    assert_eq!(check_host_rma(v(29, 2), path, true, Some(None)), Ok(()));
}

#[test]
fn gin_routing_sends_non_lsa_pes_to_gin_and_lsa_peers_to_implementation_0() {
    let config = MockConfig {
        heap_size: HEAP as u64,
        node_size: 2,
        ..MockConfig::default()
    };
    let mut world = MockWorld::new(4, config).unwrap();
    let mock = world.remove(0);
    let (gin, f) = gin(0, 4);
    let router = Router::new(0, 4, |pe| mock.is_lsa_peer(pe), Providers::nccl(true)).unwrap();
    assert_eq!(
        (0..4)
            .map(|pe| router.route(pe).unwrap())
            .collect::<Vec<_>>(),
        [0, 0, 1, 1]
    );
    let routed = Routed::new(
        vec![AnyTransport::Mock(mock), AnyTransport::Gin(gin)],
        router,
    )
    .unwrap();

    let v = 0x0102_0304_0506_0708u64.to_le_bytes();
    // SAFETY: `v` is a live host buffer of 8 bytes.
    unsafe { routed.put(Order::Now, 3, SymAddr(64), v.as_ptr(), 8) }.unwrap();
    let puts = f.puts();
    assert_eq!(puts.len(), 1);
    assert!(
        matches!(
            puts[0],
            Op::Put {
                peer: 3,
                bytes: 8,
                offset: 64,
                stream: INTERNAL,
                ..
            }
        ),
        "{puts:?}"
    );
    assert_eq!(f.remote(3, 64, 8), v);

    f.clear();
    // SAFETY: as above.
    unsafe { routed.put(Order::Now, 1, SymAddr(64), v.as_ptr(), 8) }.unwrap();
    assert!(f.puts().is_empty(), "PE 1 is an LSA peer: {:?}", f.ops());
    assert_eq!(
        routed.g(Order::Now, 1, SymAddr(64), Width::W8).unwrap(),
        u64::from_le_bytes(v)
    );
    // get from a non-LSA PE reaches GIN, which says it cannot.
    expect_not_implemented(routed.g(Order::Now, 2, SymAddr(0), Width::W8), "g on", 2);
    assert!(!routed.is_lsa_peer(2) && routed.peer_ptr(3, SymAddr(0)).is_null());

    // quiet and finalize reach both implementations.
    f.clear();
    routed.quiet(Order::Now).unwrap();
    assert_eq!(f.ops(), [Op::Query { stream: INTERNAL }]);
    routed.finalize().unwrap();
    drop(world);
}
