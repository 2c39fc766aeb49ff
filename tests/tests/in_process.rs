//! The host-API conformance checks on in-process worlds (PEs as threads, mock transport),
//! each check at several world sizes.

use std::time::Duration;

use niin_api::{WorldConfig, run_in_process};
use niin_tests::checks;

fn run(name: &str, n_pes: usize) {
    let (_, check) = checks::by_name(name).expect("check exists");
    let config = WorldConfig {
        timeout: Duration::from_secs(30),
        check_symmetry: true,
        ..WorldConfig::default()
    };
    if let Err(e) = run_in_process(n_pes, &config, |w| check(&w)) {
        panic!("{name} with {n_pes} PEs: {e}");
    }
}

macro_rules! in_process_tests {
    ($($name:ident: [$($n:literal),*];)*) => {$(
        #[test]
        fn $name() {
            $( run(stringify!($name), $n); )*
        }
    )*};
}

in_process_tests! {
    rma_every_type: [2, 3];
    strided_every_type: [2, 4];
    scalar_every_type: [2, 4];
    ring_put: [2, 4];
    all_to_all_put: [2, 5];
    put_signal_set_and_add: [2, 4];
    signal_ping_pong: [2, 4];
    wait_until_every_type_and_cmp: [2, 3];
    wait_until_all_and_vector: [2, 4];
    atomics_every_op: [2, 4];
    atomic_contention: [2, 8];
    barrier_repeated: [2, 6];
    stream_orders_put_after_wait: [2, 3];
    stream_operations: [2, 4];
    teams_split_translate_barrier: [1, 2, 5, 8];
    team_barrier_on_stream: [1, 2, 4, 5];
    collectives_every_type: [1, 2, 3, 4];
    collectives_on_stream: [2, 4];
    collectives_team_shapes: [1, 2, 5, 6];
    collectives_bad_input: [1, 3];
    heap_symmetric: [2, 4];
    bad_input: [1, 2];
}

#[test]
fn every_check_has_an_in_process_test() {
    let listed = [
        "rma_every_type",
        "strided_every_type",
        "scalar_every_type",
        "ring_put",
        "all_to_all_put",
        "put_signal_set_and_add",
        "signal_ping_pong",
        "wait_until_every_type_and_cmp",
        "wait_until_all_and_vector",
        "atomics_every_op",
        "atomic_contention",
        "barrier_repeated",
        "stream_orders_put_after_wait",
        "stream_operations",
        "teams_split_translate_barrier",
        "team_barrier_on_stream",
        "collectives_every_type",
        "collectives_on_stream",
        "collectives_team_shapes",
        "collectives_bad_input",
        "heap_symmetric",
        "bad_input",
    ];
    let all: Vec<&str> = checks::CHECKS.iter().map(|(n, _)| *n).collect();
    assert_eq!(all, listed);
}

#[test]
fn every_operation_after_finalize_is_an_error() {
    let results = run_in_process(2, &WorldConfig::default(), |w| {
        let buf = w.calloc::<u32>(4)?;
        let view = buf.all();
        w.finalize()?;
        let me = w.my_pe();
        let finalized = niin_api::Error::Finalized { pe: me };
        let errors = [
            w.malloc::<u8>(8).err(),
            w.put(view, &[1], 0).err(),
            w.get(&mut [0u32; 1], view, 0).err(),
            w.p(view, 1, 0).err(),
            w.atomic_add(view, 1, 0).err(),
            w.barrier_all().err(),
            w.quiet().err(),
            w.stream().err(),
            w.team_split_strided(niin_api::TeamId::WORLD, 0, 1, 2, None)
                .err(),
            w.finalize().err(),
            w.free(buf).err(),
        ];
        Ok(errors.iter().all(|e| e.as_ref() == Some(&finalized)))
    })
    .unwrap();
    assert_eq!(results, vec![true, true]);
}

#[test]
fn an_asymmetric_allocation_is_reported_by_every_pe() {
    let config = WorldConfig {
        check_symmetry: true,
        // The layout comparison alone: with the collective comparison on (the mock's
        // default) the differing malloc arguments are a CollectiveMismatch first
        // (niin-api/tests/collective_checks.rs covers that).
        check_collectives: Some(niin_api::CollectiveChecks::Off),
        ..WorldConfig::default()
    };
    let results = run_in_process(3, &config, |w| {
        // PE 1 asks for another size than the others: the heaps diverge here, and the
        // collective check inside this very malloc sees it on every PE.
        let bytes = if w.my_pe() == 1 { 5000 } else { 100 };
        Ok(vec![w.malloc::<u8>(bytes).err()])
    })
    .unwrap();
    for (pe, errs) in results.iter().enumerate() {
        match &errs[0] {
            Some(niin_api::Error::Asymmetric { pe: p, .. }) => assert_eq!(*p, pe),
            other => panic!("PE {pe}: expected an Asymmetric error, got {other:?}"),
        }
    }
}
