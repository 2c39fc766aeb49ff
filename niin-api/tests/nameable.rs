//! Every type that appears in a public signature of niin-api can be named through
//! `niin_api::` alone, without depending on the crates under it: this file names each one
//! (a type missing from niin-api's re-exports fails to compile here). Types defined in
//! niin-api itself are kept nameable by `#![deny(unnameable_types)]` in its lib.rs; the
//! types of niin-heap, niin-teams and niin-transport that its signatures use are listed
//! here.

#![allow(dead_code)]

/// The lower crates' types in niin-api's public signatures (methods, fields, variants).
struct Lower {
    // Error's variants and their sources.
    heap_error: niin_api::HeapError,
    size_error: niin_api::SizeError,
    layout: niin_api::Layout,
    team_error: niin_api::TeamError,
    transport_error: niin_api::TransportError,
    departure: niin_api::Departure,
    bootstrap_error: niin_api::bootstrap::BootstrapError,
    // World's queries.
    heap_stats: niin_api::HeapStats,
    fingerprint: niin_api::Fingerprint,
    device_parts: Option<niin_api::DeviceParts>,
    device_team_table: niin_api::DeviceTeamTable,
    device_team: niin_api::DeviceTeam,
    // Streams.
    stream_handle: niin_api::StreamHandle,
    // Teams.
    team_id: niin_api::TeamId,
    team_config: niin_api::TeamConfig,
    // The collective check's calls.
    coll_kind: niin_api::CollKind,
    elem: niin_api::Elem,
    reduce_op: niin_api::ReduceOp,
    cmp: niin_api::Cmp,
    signal_op: niin_api::SignalOp,
    // DeviceParts' fields, through the re-exported crate.
    comm: Option<niin_api::niin_transport::nccl::Comm>,
}

/// niin-api's own public types, by the paths its docs give.
struct Own<'w> {
    world: niin_api::World,
    config: niin_api::WorldConfig,
    transport_kind: niin_api::TransportKind,
    error: niin_api::Error,
    team: niin_api::Team,
    stream: niin_api::Stream<'w>,
    buffer: niin_api::SymBuffer<u64>,
    slice: niin_api::SymSlice<u64>,
    job_place: niin_api::JobPlace,
    call: niin_api::CollectiveCall,
    kind: niin_api::CollectiveKind,
    bf16: niin_api::Bf16,
    half: niin_api::Half,
    placement: niin_api::bootstrap::Placement,
}

/// The signatures that hand these types out, typed out: a change of a return type to a
/// type that is not re-exported fails here.
fn signatures(w: &niin_api::World) -> niin_api::Result<()> {
    let _: niin_api::HeapStats = w.heap_stats();
    let _: niin_api::Fingerprint = w.fingerprint();
    let _: Option<niin_api::DeviceParts> = w.nccl_parts();
    let _: niin_api::DeviceTeamTable = w.device_team_table();
    let _: Option<usize> = w.team_my_pe(niin_api::TeamId::WORLD);
    let _: Option<usize> = w.team_n_pes(niin_api::TeamId::WORLD);
    let _: Option<usize> = w.team_translate_pe(niin_api::TeamId::WORLD, 0, niin_api::TeamId::WORLD);
    let team: niin_api::Team = w.team(niin_api::TeamId::WORLD)?;
    let _: niin_api::TeamConfig = team.config()?;
    let s: niin_api::Stream<'_> = w.stream()?;
    let _: niin_api::StreamHandle = s.handle();
    Ok(())
}

#[test]
fn the_types_of_public_signatures_are_nameable() {
    // Errors and their causes can be matched from niin_api alone.
    let e = niin_api::Error::Transport {
        pe: 0,
        source: niin_api::TransportError::PeerGone {
            pe: 1,
            op: "barrier",
            why: niin_api::Departure::Finalized,
        },
    };
    assert!(matches!(
        e,
        niin_api::Error::Transport {
            source: niin_api::TransportError::PeerGone { pe: 1, .. },
            ..
        }
    ));
    let e = niin_api::Error::Team {
        pe: 0,
        source: niin_api::TeamError::InvalidTeam {
            team: niin_api::TeamId::INVALID,
        },
    };
    assert!(e.to_string().contains("NVSHMEM_TEAM_INVALID"), "{e}");
    niin_api::run_in_process(1, &niin_api::WorldConfig::default(), |w| signatures(&w)).unwrap();
}
