//! Routing per target PE: which path ([`RouteKind`]) a PE's operations take and which
//! implementation serves that path ([`Router`]), and [`Routed`], the [`Transport`] that
//! sends every PE-targeted call to the implementation its PE routes to.
//!
//! An LSA peer (the same NVLink domain on a GPU, the same simulated node in the mock;
//! always this PE itself) takes the LSA path; any other PE the GIN path. In a CPU world
//! the mock serves both ([`Providers::CPU`]). In an NCCL world the LSA transport serves
//! LSA peers and the GIN transport the others ([`Providers::nccl`]); when there is no GIN
//! transport, routing to a non-LSA PE fails with `NotImplemented` naming that PE — never
//! a silent fallback.

use crate::AnyTransport;
use crate::coll::{self, CollMemory, Collective};
use crate::error::{Result, TransportError};
use crate::mock::MockTransport;
use crate::ops::{
    AmoOp, Cmp, DeferredWait, Order, Scalar, SignalOp, StreamHandle, Strided, SymAddr, TeamSplit,
    TeamSync, WaitKind, Width,
};
use crate::transport::{Fingerprints, Transport};

/// The path operations on a PE take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RouteKind {
    /// Load/store access: an LSA peer (this PE included).
    Lsa,
    /// Network access: any other PE.
    Gin,
}

/// Which implementation serves each path, as an index into [`Routed`]'s
/// implementations; `None` where no implementation of that path exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Providers {
    /// Serves LSA peers.
    pub lsa: Option<usize>,
    /// Serves every other PE.
    pub gin: Option<usize>,
}

impl Providers {
    /// A CPU world: the mock, implementation 0, serves both paths.
    pub const CPU: Providers = Providers {
        lsa: Some(0),
        gin: Some(0),
    };

    /// An NCCL world: the LSA transport is implementation 0; the GIN transport, when
    /// there is one, implementation 1.
    pub const fn nccl(has_gin: bool) -> Providers {
        Providers {
            lsa: Some(0),
            gin: if has_gin { Some(1) } else { None },
        }
    }

    /// The implementation serving `kind`, if any.
    pub const fn of(&self, kind: RouteKind) -> Option<usize> {
        match kind {
            RouteKind::Lsa => self.lsa,
            RouteKind::Gin => self.gin,
        }
    }
}

/// The route of every PE of a world, as seen from one PE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Router {
    my_pe: usize,
    kinds: Vec<RouteKind>,
    providers: Providers,
}

impl Router {
    /// The routes from `my_pe` in a world of `n_pes` PEs: `is_lsa(pe)` says whether
    /// `pe` is an LSA peer (`my_pe` always is); `providers` which implementation serves
    /// each path.
    pub fn new(
        my_pe: usize,
        n_pes: usize,
        is_lsa: impl Fn(usize) -> bool,
        providers: Providers,
    ) -> Result<Router> {
        if my_pe >= n_pes {
            return Err(TransportError::PeOutOfRange { pe: my_pe, n_pes });
        }
        let kinds = (0..n_pes)
            .map(|pe| {
                if pe == my_pe || is_lsa(pe) {
                    RouteKind::Lsa
                } else {
                    RouteKind::Gin
                }
            })
            .collect();
        Ok(Router {
            my_pe,
            kinds,
            providers,
        })
    }

    /// The PE these routes start from.
    pub fn my_pe(&self) -> usize {
        self.my_pe
    }

    /// Number of PEs in the world.
    pub fn n_pes(&self) -> usize {
        self.kinds.len()
    }

    /// Which implementation serves each path.
    pub fn providers(&self) -> Providers {
        self.providers
    }

    /// The path to `pe`.
    pub fn kind(&self, pe: usize) -> Result<RouteKind> {
        self.kinds
            .get(pe)
            .copied()
            .ok_or(TransportError::PeOutOfRange {
                pe,
                n_pes: self.kinds.len(),
            })
    }

    /// The implementation that serves `pe`, or `NotImplemented` naming `pe` when no
    /// implementation serves its path.
    pub fn route(&self, pe: usize) -> Result<usize> {
        let kind = self.kind(pe)?;
        self.providers
            .of(kind)
            .ok_or_else(|| TransportError::NotImplemented {
                what: match kind {
                    RouteKind::Gin => format!(
                        "operations from PE {} on non-LSA PE {pe}: this world has no GIN transport \
                     (NCCL without GIN support, or GIN disabled); only LSA peers are reachable",
                        self.my_pe
                    ),
                    RouteKind::Lsa => format!(
                        "operations from PE {} on LSA PE {pe}: this world has no LSA transport",
                        self.my_pe
                    ),
                },
            })
    }
}

/// A [`Transport`] over several implementations: PE-targeted calls go to the
/// implementation `pe` routes to; calls on this PE's own memory and resources (streams,
/// waits, `signal_fetch`, `memset_local`, barriers) go to the primary implementation
/// (implementation 0); `fence`, `quiet`, `stream_synchronize` and `finalize` reach
/// every implementation, and a barrier quiets the others before the primary's barrier.
#[derive(Debug)]
pub struct Routed {
    implementations: Vec<AnyTransport>,
    router: Router,
}

impl Drop for Routed {
    /// Drops the implementations in reverse order: the secondary ones (GIN) hold
    /// resources the primary (LSA) owns — the heap's window — and must let go first.
    fn drop(&mut self) {
        while self.implementations.pop().is_some() {}
    }
}

impl Routed {
    /// Combines `implementations` (0 is the primary) with `router`, whose providers must
    /// name existing implementations, each of the same PE and world as the router.
    pub fn new(implementations: Vec<AnyTransport>, router: Router) -> Result<Routed> {
        let bad = |what: String| {
            Err(TransportError::BadArgument {
                op: "routing",
                what,
            })
        };
        if implementations.is_empty() {
            return bad("no transport implementation given".into());
        }
        for (name, index) in [("LSA", router.providers.lsa), ("GIN", router.providers.gin)] {
            if let Some(i) = index.filter(|&i| i >= implementations.len()) {
                return bad(format!(
                    "the {name} path is served by implementation {i}, but only {} exist",
                    implementations.len()
                ));
            }
        }
        for (i, t) in implementations.iter().enumerate() {
            if t.my_pe() != router.my_pe() || t.n_pes() != router.n_pes() {
                return bad(format!(
                    "implementation {i} is PE {} of {}, the router PE {} of {}",
                    t.my_pe(),
                    t.n_pes(),
                    router.my_pe(),
                    router.n_pes()
                ));
            }
        }
        Ok(Routed {
            implementations,
            router,
        })
    }

    /// A CPU world's PE: the mock serves every PE, with LSA peers as the mock defines
    /// them (its simulated nodes).
    pub fn cpu(mock: MockTransport) -> Routed {
        let router = Router::new(
            mock.my_pe(),
            mock.n_pes(),
            |pe| mock.is_lsa_peer(pe),
            Providers::CPU,
        )
        .expect("a mock transport's PE lies in its world");
        Routed {
            implementations: vec![AnyTransport::Mock(mock)],
            router,
        }
    }

    /// The routes.
    pub fn router(&self) -> &Router {
        &self.router
    }

    /// The implementations; 0 is the primary.
    pub fn implementations(&self) -> &[AnyTransport] {
        &self.implementations
    }

    /// The implementation that serves `pe`.
    pub fn target(&self, pe: usize) -> Result<&AnyTransport> {
        Ok(&self.implementations[self.router.route(pe)?])
    }

    fn primary(&self) -> &AnyTransport {
        &self.implementations[0]
    }

    /// Registered buffers are served by the primary (LSA) transport alone: an error naming
    /// the first PE that another implementation serves (GIN routing by window is not built
    /// for them).
    fn registering_through_lsa(&self) -> Result<()> {
        match (0..self.n_pes()).find(|&pe| !self.is_lsa_peer(pe)) {
            None => Ok(()),
            Some(pe) => Err(TransportError::NotImplemented {
                what: format!(
                    "registering application buffers as symmetric memory in a world with PEs \
                     outside this PE's LSA team (PE {pe}): GIN reaches memory by NCCL window, \
                     and routing registered buffers to their own windows is not built"
                ),
            }),
        }
    }

    /// Calls `f` on every implementation; returns the first error after calling all.
    fn each(&self, mut f: impl FnMut(&AnyTransport) -> Result<()>) -> Result<()> {
        let mut first = Ok(());
        for t in &self.implementations {
            let r = f(t);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

/// Blocking collectives in a GPU world: this PE's host RMA to every member.
impl CollMemory for Routed {
    fn coll_pe(&self) -> usize {
        self.my_pe()
    }

    fn coll_read(&self, pe: usize, addr: SymAddr, buf: &mut [u8]) -> Result<()> {
        // SAFETY: `buf` is a live local buffer of `buf.len()` bytes, written only by this
        // call, which completes before it returns (Order::Now).
        unsafe { self.get(Order::Now, pe, buf.as_mut_ptr(), addr, buf.len()) }
    }

    fn coll_write(&self, pe: usize, addr: SymAddr, buf: &[u8]) -> Result<()> {
        // SAFETY: `buf` is live and read only during this call (Order::Now).
        unsafe { self.put(Order::Now, pe, addr, buf.as_ptr(), buf.len()) }
    }

    fn coll_barrier(&self, team: &TeamSync) -> Result<()> {
        self.barrier(Order::Now, *team)
    }
}

impl Transport for Routed {
    fn my_pe(&self) -> usize {
        self.router.my_pe()
    }

    fn n_pes(&self) -> usize {
        self.router.n_pes()
    }

    fn heap_size(&self) -> u64 {
        self.primary().heap_size()
    }

    fn is_lsa_peer(&self, pe: usize) -> bool {
        self.router.kind(pe) == Ok(RouteKind::Lsa)
    }

    fn peer_ptr(&self, pe: usize, addr: SymAddr) -> *mut u8 {
        match self.target(pe) {
            Ok(t) if self.is_lsa_peer(pe) => t.peer_ptr(pe, addr),
            _ => std::ptr::null_mut(),
        }
    }

    fn check_registration(&self, local: u64, len: u64) -> Result<()> {
        self.registering_through_lsa()?;
        self.primary().check_registration(local, len)
    }

    fn register_buffer(&self, local: u64, len: u64) -> Result<SymAddr> {
        self.registering_through_lsa()?;
        self.primary().register_buffer(local, len)
    }

    fn unregister_buffer(&self, addr: SymAddr) -> Result<()> {
        self.primary().unregister_buffer(addr)
    }

    fn stream_create(&self) -> Result<StreamHandle> {
        self.primary().stream_create()
    }

    fn stream_destroy(&self, stream: StreamHandle) -> Result<()> {
        let others = self.implementations[1..]
            .iter()
            .try_for_each(|t| t.stream_synchronize(stream));
        let destroyed = self.primary().stream_destroy(stream);
        others.and(destroyed)
    }

    fn stream_synchronize(&self, stream: StreamHandle) -> Result<()> {
        self.each(|t| t.stream_synchronize(stream))
    }

    unsafe fn put(
        &self,
        order: Order,
        pe: usize,
        dst: SymAddr,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        // SAFETY: the caller's contract of `put` is passed on unchanged.
        unsafe { self.target(pe)?.put(order, pe, dst, src, len) }
    }

    unsafe fn get(
        &self,
        order: Order,
        pe: usize,
        dst: *mut u8,
        src: SymAddr,
        len: usize,
    ) -> Result<()> {
        // SAFETY: the caller's contract of `get` is passed on unchanged.
        unsafe { self.target(pe)?.get(order, pe, dst, src, len) }
    }

    unsafe fn iput(
        &self,
        order: Order,
        pe: usize,
        dst: SymAddr,
        src: *const u8,
        shape: Strided,
    ) -> Result<()> {
        // SAFETY: the caller's contract of `iput` is passed on unchanged.
        unsafe { self.target(pe)?.iput(order, pe, dst, src, shape) }
    }

    unsafe fn iget(
        &self,
        order: Order,
        pe: usize,
        dst: *mut u8,
        src: SymAddr,
        shape: Strided,
    ) -> Result<()> {
        // SAFETY: the caller's contract of `iget` is passed on unchanged.
        unsafe { self.target(pe)?.iget(order, pe, dst, src, shape) }
    }

    fn p(&self, order: Order, pe: usize, dst: SymAddr, value: Scalar) -> Result<()> {
        self.target(pe)?.p(order, pe, dst, value)
    }

    fn g(&self, order: Order, pe: usize, src: SymAddr, width: Width) -> Result<u64> {
        self.target(pe)?.g(order, pe, src, width)
    }

    unsafe fn put_signal(
        &self,
        order: Order,
        pe: usize,
        dst: SymAddr,
        src: *const u8,
        len: usize,
        sig: SymAddr,
        value: u64,
        op: SignalOp,
    ) -> Result<()> {
        // SAFETY: the caller's contract of `put_signal` is passed on unchanged.
        unsafe {
            self.target(pe)?
                .put_signal(order, pe, dst, src, len, sig, value, op)
        }
    }

    fn signal_op(
        &self,
        order: Order,
        pe: usize,
        sig: SymAddr,
        value: u64,
        op: SignalOp,
    ) -> Result<()> {
        self.target(pe)?.signal_op(order, pe, sig, value, op)
    }

    fn signal_fetch(&self, sig: SymAddr) -> Result<u64> {
        self.primary().signal_fetch(sig)
    }

    fn wait_until(
        &self,
        order: Order,
        ivar: SymAddr,
        kind: WaitKind,
        cmp: Cmp,
        value: u64,
    ) -> Result<()> {
        self.primary().wait_until(order, ivar, kind, cmp, value)
    }

    fn wait_until_all(
        &self,
        order: Order,
        ivars: SymAddr,
        nelems: usize,
        kind: WaitKind,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: u64,
    ) -> Result<()> {
        self.primary()
            .wait_until_all(order, ivars, nelems, kind, status, cmp, value)
    }

    fn wait_until_all_vector(
        &self,
        order: Order,
        ivars: SymAddr,
        kind: WaitKind,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[u64],
    ) -> Result<()> {
        self.primary()
            .wait_until_all_vector(order, ivars, kind, status, cmp, values)
    }

    unsafe fn wait_until_all_deferred(
        &self,
        stream: StreamHandle,
        ivars: SymAddr,
        nelems: usize,
        kind: WaitKind,
        cmp: Cmp,
        arrays: DeferredWait,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.primary()
                .wait_until_all_deferred(stream, ivars, nelems, kind, cmp, arrays)
        }
    }

    fn atomic(
        &self,
        pe: usize,
        addr: SymAddr,
        op: AmoOp,
        width: Width,
        operand: u64,
        compare: u64,
    ) -> Result<u64> {
        self.target(pe)?
            .atomic(pe, addr, op, width, operand, compare)
    }

    fn fence(&self, order: Order) -> Result<()> {
        self.each(|t| t.fence(order))
    }

    fn quiet(&self, order: Order) -> Result<()> {
        self.each(|t| t.quiet(order))
    }

    fn barrier(&self, order: Order, team: TeamSync) -> Result<()> {
        self.implementations[1..]
            .iter()
            .try_for_each(|t| t.quiet(order))?;
        self.primary().barrier(order, team)
    }

    fn compares_fingerprints(&self, team: &TeamSync) -> bool {
        self.primary().compares_fingerprints(team)
    }

    fn barrier_with_fingerprint(&self, team: TeamSync, fingerprint: u64) -> Result<Fingerprints> {
        self.implementations[1..]
            .iter()
            .try_for_each(|t| t.quiet(Order::Now))?;
        self.primary().barrier_with_fingerprint(team, fingerprint)
    }

    /// The mock runs collectives itself (blocking and on streams). In a GPU world the LSA
    /// transport runs a team of LSA peers (copy engines and reduction kernels, on the
    /// stream) and, through NCCL, a team with other nodes' PEs (the world's communicator,
    /// or the team's own, made at its split) where NCCL has the type and operator
    /// (`lsa/coll.rs`); any other team runs the blocking form with this router's own
    /// blocking RMA and barrier ([`coll::run`]), and refuses the stream form, naming the
    /// member that only GIN reaches.
    fn collective(&self, order: Order, c: &Collective) -> Result<()> {
        match self.primary() {
            AnyTransport::Mock(m) => return m.collective(order, c),
            AnyTransport::Lsa(l) if l.runs_collective(c) => return l.collective(order, c),
            _ => {}
        }
        c.validate(self.my_pe())?;
        let remote = (0..c.team.size)
            .map(|j| c.team.world_pe(j))
            .find(|&pe| !self.is_lsa_peer(pe))
            .unwrap_or(self.my_pe());
        match order {
            Order::Now => coll::run(self, c),
            Order::Stream(_) => Err(TransportError::NotImplemented {
                what: format!(
                    "{} on a stream (nvshmemx_*_on_stream) over team {}: PE {} is not an LSA \
                     peer of PE {} (a stream collective of a team with PEs on other nodes goes \
                     through NCCL, on the team's communicator, where NCCL has the type and \
                     operator: 16-bit integers and bitwise operators it has not): use the \
                     blocking host form or the device collective",
                    c.kind.name(),
                    c.team.team,
                    remote,
                    self.my_pe()
                ),
            }),
        }
    }

    /// Every implementation hears of it (only the LSA transport keeps anything: a team's
    /// NCCL communicator).
    fn team_split(&self, split: &TeamSplit) -> Result<()> {
        self.each(|t| t.team_split(split))
    }

    fn team_destroyed(&self, team: i32) -> Result<()> {
        self.each(|t| t.team_destroyed(team))
    }

    fn memset_local(&self, addr: SymAddr, byte: u8, len: usize) -> Result<()> {
        self.primary().memset_local(addr, byte, len)
    }

    fn finalize(&self) -> Result<()> {
        self.each(|t| t.finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::{MockConfig, MockWorld};

    fn mock_world(n: usize, node_size: usize) -> Vec<MockTransport> {
        let config = MockConfig {
            heap_size: 4096,
            node_size,
            ..MockConfig::default()
        };
        MockWorld::new(n, config).unwrap()
    }

    #[test]
    fn mock_world_routes_node_peers_to_lsa_and_others_to_gin_all_through_the_mock() {
        let mut world = mock_world(4, 2);
        let routed = Routed::cpu(world.remove(0));
        let r = routed.router();
        let kinds: Vec<_> = (0..4).map(|pe| r.kind(pe).unwrap()).collect();
        assert_eq!(
            kinds,
            [
                RouteKind::Lsa,
                RouteKind::Lsa,
                RouteKind::Gin,
                RouteKind::Gin
            ]
        );
        for pe in 0..4 {
            assert_eq!(r.route(pe).unwrap(), 0, "PE {pe} is served by the mock");
        }
        assert!(routed.is_lsa_peer(1) && !routed.is_lsa_peer(2));
        assert!(!routed.peer_ptr(1, SymAddr(0)).is_null());
        assert!(routed.peer_ptr(2, SymAddr(0)).is_null());
        // A put to a non-LSA PE still works through the mock's network.
        let v = 7u64.to_ne_bytes();
        // SAFETY: `v` is a live local buffer of 8 bytes.
        unsafe {
            routed
                .put(Order::Now, 3, SymAddr(8), v.as_ptr(), 8)
                .unwrap()
        };
        assert_eq!(routed.g(Order::Now, 3, SymAddr(8), Width::W8).unwrap(), 7);
        routed.quiet(Order::Now).unwrap();
        routed.finalize().unwrap();
    }

    #[test]
    fn missing_gin_is_not_implemented_naming_the_pe() {
        let mut world = mock_world(4, 2);
        let mock = world.remove(0);
        let router = Router::new(0, 4, |pe| mock.is_lsa_peer(pe), Providers::nccl(false)).unwrap();
        let routed = Routed::new(vec![AnyTransport::Mock(mock)], router).unwrap();
        assert_eq!(routed.router().route(1).unwrap(), 0);
        let e = routed.router().route(2).unwrap_err();
        match &e {
            TransportError::NotImplemented { what } => {
                assert!(what.contains("non-LSA PE 2"), "{what}");
                assert!(what.contains("GIN"), "{what}");
            }
            other => panic!("{other:?}"),
        }
        let v = [0u8; 4];
        // SAFETY: `v` is a live local buffer of 4 bytes.
        let put = unsafe { routed.put(Order::Now, 3, SymAddr(0), v.as_ptr(), 4) };
        assert!(
            matches!(put, Err(TransportError::NotImplemented { what }) if what.contains("PE 3"))
        );
        assert!(
            routed
                .p(
                    Order::Now,
                    1,
                    SymAddr(0),
                    Scalar {
                        bits: 1,
                        width: Width::W1
                    }
                )
                .is_ok()
        );
        assert!(routed.peer_ptr(2, SymAddr(0)).is_null());
    }

    #[test]
    fn routing_a_pe_out_of_range_is_an_error() {
        let r = Router::new(1, 4, |_| true, Providers::CPU).unwrap();
        assert_eq!(
            r.kind(4),
            Err(TransportError::PeOutOfRange { pe: 4, n_pes: 4 })
        );
        assert_eq!(
            r.route(9),
            Err(TransportError::PeOutOfRange { pe: 9, n_pes: 4 })
        );
        assert_eq!(
            Router::new(4, 4, |_| true, Providers::CPU),
            Err(TransportError::PeOutOfRange { pe: 4, n_pes: 4 })
        );
    }

    #[test]
    fn self_is_always_lsa() {
        let r = Router::new(2, 4, |_| false, Providers::nccl(true)).unwrap();
        assert_eq!(r.kind(2).unwrap(), RouteKind::Lsa);
        assert_eq!(r.route(2).unwrap(), 0);
        assert_eq!(r.route(0).unwrap(), 1);
    }

    #[test]
    fn routed_rejects_providers_without_implementations() {
        let mut world = mock_world(2, usize::MAX);
        let mock = world.remove(0);
        let router = Router::new(0, 2, |_| true, Providers::nccl(true)).unwrap();
        assert!(matches!(
            Routed::new(vec![AnyTransport::Mock(mock)], router),
            Err(TransportError::BadArgument { .. })
        ));
    }
}
