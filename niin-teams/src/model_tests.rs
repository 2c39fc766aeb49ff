//! All-PE simulations checked against a brute-force set model.
//!
//! Every PE of a world gets a real [`TeamTable`] and a model: a map from handle to the team's
//! world PEs in team order, built with plain filters and index lists, never with `Stride`
//! arithmetic. Splits run on every parent member with `agreed` = the intersection of their
//! `free_slots()`, as the API layer does; the model predicts each new team's members and its
//! handle (the lowest handle no parent member uses), so "every member got the same handle" is
//! checked on every split.

use std::collections::BTreeMap;

use proptest::prelude::*;

use crate::{SlotSet, TeamError, TeamId, TeamTable, WorldLayout};

type Model = BTreeMap<TeamId, Vec<i32>>;

struct Pe {
    table: TeamTable,
    model: Model,
}

struct Sim {
    pes: Vec<Pe>,
}

fn to_i32(x: usize) -> i32 {
    i32::try_from(x).unwrap()
}

fn position(list: &[i32], pe: i32) -> i32 {
    list.iter().position(|&q| q == pe).map_or(-1, to_i32)
}

/// The predefined teams of world PE `pe`, by filtering all PEs.
fn model_predefined(n: i32, node_size: i32, pe: i32) -> Model {
    let filter = |keep: &dyn Fn(i32) -> bool| (0..n).filter(|&q| keep(q)).collect::<Vec<i32>>();
    let all = filter(&|_| true);
    let node = filter(&|q| q / node_size == pe / node_size);
    let same_rank = filter(&|q| q % node_size == pe % node_size);
    Model::from([
        (TeamId::WORLD, all.clone()),
        (TeamId::SHARED, node.clone()),
        (TeamId::NODE, node),
        (TeamId::SAME_MYPE_NODE, same_rank),
        (TeamId::SAME_GPU, vec![pe]),
        (TeamId::GPU_LEADERS, all),
    ])
}

/// A triplet is valid when every selected index is a parent PE (OpenSHMEM 1.5) and the stride
/// is positive (NVSHMEM), by enumeration.
fn model_triplet_ok(parent_len: usize, start: i32, stride: i32, size: i32) -> bool {
    stride >= 1
        && size >= 1
        && (0..i64::from(size)).all(|i| {
            let idx = i64::from(start) + i * i64::from(stride);
            idx >= 0 && idx < i64::try_from(parent_len).unwrap()
        })
}

impl Sim {
    fn new(n: i32, node_size: i32) -> Sim {
        let pes = (0..n)
            .map(|pe| Pe {
                table: TeamTable::new(WorldLayout::new(n, pe, node_size).unwrap()),
                model: model_predefined(n, node_size, pe),
            })
            .collect();
        Sim { pes }
    }

    fn n(&self) -> usize {
        self.pes.len()
    }

    fn all(&self, team: TeamId) -> Vec<TeamId> {
        vec![team; self.n()]
    }

    /// The parent teams named by `handles` (INVALID = does not take part), each as its member
    /// list with the PEs calling on it.
    fn groups(&self, handles: &[TeamId]) -> Vec<(Vec<i32>, Vec<usize>)> {
        let mut groups: BTreeMap<(TeamId, Vec<i32>), Vec<usize>> = BTreeMap::new();
        for (p, &h) in handles.iter().enumerate() {
            if h != TeamId::INVALID {
                let list = self.pes[p].model[&h].clone();
                groups.entry((h, list)).or_default().push(p);
            }
        }
        groups
            .into_iter()
            .map(|((_, list), callers)| {
                let mut sorted = list.clone();
                sorted.sort_unstable();
                let callers_i32: Vec<i32> = callers.iter().map(|&p| to_i32(p)).collect();
                assert_eq!(sorted, callers_i32, "every parent member takes part");
                (list, callers)
            })
            .collect()
    }

    fn agreed(&self, callers: &[usize]) -> SlotSet {
        let free: Vec<SlotSet> = callers
            .iter()
            .map(|&p| self.pes[p].table.free_slots())
            .collect();
        SlotSet::intersect_all(&free)
    }

    /// The `k` lowest user handles no caller's model uses.
    fn model_free(&self, callers: &[usize], k: usize) -> Vec<TeamId> {
        (TeamId::FIRST_USER.0..)
            .map(TeamId)
            .filter(|t| callers.iter().all(|&p| !self.pes[p].model.contains_key(t)))
            .take(k)
            .collect()
    }

    /// `split_strided` on every PE whose handle is not INVALID; returns each PE's new handle.
    fn split_strided(
        &mut self,
        parents: &[TeamId],
        start: i32,
        stride: i32,
        size: i32,
    ) -> Vec<TeamId> {
        let mut out = vec![TeamId::INVALID; self.n()];
        for (list, callers) in self.groups(parents) {
            let agreed = self.agreed(&callers);
            let valid = model_triplet_ok(list.len(), start, stride, size);
            let new_list: Vec<i32> = if valid {
                (0..size)
                    .map(|i| list[usize::try_from(start + i * stride).unwrap()])
                    .collect()
            } else {
                Vec::new()
            };
            let expected = self.model_free(&callers, 1)[0];
            for &p in &callers {
                let pe = &mut self.pes[p];
                let before = pe.table.clone();
                let r =
                    pe.table
                        .split_strided(parents[p], start, stride, size, None, agreed.clone());
                let me = to_i32(p);
                if !valid {
                    let parent_size = to_i32(list.len());
                    assert_eq!(
                        r,
                        Err(TeamError::BadSplit {
                            start,
                            stride,
                            size,
                            parent_size
                        })
                    );
                    assert_eq!(pe.table, before);
                } else if new_list.contains(&me) {
                    assert_eq!(
                        r,
                        Ok(expected),
                        "PE {me}: <{start},{stride},{size}> of {list:?}"
                    );
                    pe.model.insert(expected, new_list.clone());
                    out[p] = expected;
                } else {
                    assert_eq!(r, Ok(TeamId::INVALID), "PE {me} is not in {new_list:?}");
                    assert_eq!(pe.table, before);
                }
            }
        }
        out
    }

    /// `split_2d` on every PE whose handle is not INVALID; returns each PE's (x, y) handles.
    fn split_2d(&mut self, parents: &[TeamId], xrange: i32) -> Vec<(TeamId, TeamId)> {
        let mut out = vec![(TeamId::INVALID, TeamId::INVALID); self.n()];
        for (list, callers) in self.groups(parents) {
            let agreed = self.agreed(&callers);
            let expected = self.model_free(&callers, 2);
            let len = list.len();
            for &p in &callers {
                let pe = &mut self.pes[p];
                let before = pe.table.clone();
                let r = pe
                    .table
                    .split_2d(parents[p], xrange, None, None, agreed.clone());
                if xrange < 1 {
                    let parent_size = to_i32(len);
                    assert_eq!(
                        r,
                        Err(TeamError::BadXRange {
                            xrange,
                            parent_size
                        })
                    );
                    assert_eq!(pe.table, before);
                    continue;
                }
                let xr = usize::try_from(xrange).unwrap().min(len);
                let me = usize::try_from(position(&list, to_i32(p))).unwrap();
                let pick = |same: &dyn Fn(usize) -> bool| -> Vec<i32> {
                    (0..len).filter(|&q| same(q)).map(|q| list[q]).collect()
                };
                let row = pick(&|q| q / xr == me / xr);
                let column = pick(&|q| q % xr == me % xr);
                assert_eq!(r, Ok((expected[0], expected[1])), "PE {p}, xrange {xrange}");
                pe.model.insert(expected[0], row);
                pe.model.insert(expected[1], column);
                out[p] = (expected[0], expected[1]);
            }
        }
        out
    }

    /// `destroy` on every PE whose handle is not INVALID.
    fn destroy(&mut self, handles: &[TeamId]) {
        for (pe, &h) in self.pes.iter_mut().zip(handles) {
            assert_eq!(pe.table.destroy(h), Ok(()));
            pe.model.remove(&h);
        }
    }

    /// Checks every PE; translation only between pairs involving `focus` when given.
    fn check(&self, focus: Option<&[TeamId]>) {
        for (p, pe) in self.pes.iter().enumerate() {
            check_pe(pe, to_i32(p), focus);
        }
    }
}

fn check_pe(pe: &Pe, me: i32, focus: Option<&[TeamId]>) {
    let t = &pe.table;
    let live: Vec<TeamId> = t.teams().map(|(id, _)| id).collect();
    let model: Vec<TeamId> = pe.model.keys().copied().collect();
    assert_eq!(live, model, "PE {me}: live handles");
    let device = t.device_table();
    for (&team, list) in &pe.model {
        assert_eq!(
            t.members(team).unwrap().to_vec(),
            *list,
            "PE {me}: members of {team}"
        );
        assert_eq!(t.team_n_pes(team), to_i32(list.len()));
        assert_eq!(
            t.team_my_pe(team),
            position(list, me),
            "PE {me}: my_pe in {team}"
        );
        let d = device.get(team).unwrap();
        assert_eq!((d.size, d.my_pe), (to_i32(list.len()), position(list, me)));
        for (i, &w) in list.iter().enumerate() {
            assert_eq!(d.start + to_i32(i) * d.stride, w);
        }
        assert_eq!(t.translate_pe(TeamId::INVALID, 0, team), -1);
        assert_eq!(t.translate_pe(team, 0, TeamId::INVALID), -1);
    }
    for (k, d) in device.teams.iter().enumerate() {
        assert_eq!(d.is_used(), pe.model.contains_key(&TeamId(to_i32(k))));
    }
    for (&src, src_list) in &pe.model {
        for (&dest, dest_list) in &pe.model {
            if focus.is_some_and(|f| !f.contains(&src) && !f.contains(&dest)) {
                continue;
            }
            for src_pe in -1..=to_i32(src_list.len()) {
                let expect = usize::try_from(src_pe)
                    .ok()
                    .and_then(|i| src_list.get(i))
                    .map_or(-1, |&w| position(dest_list, w));
                assert_eq!(
                    t.translate_pe(src, src_pe, dest),
                    expect,
                    "PE {me}: translate {src_pe} of {src} to {dest}"
                );
            }
        }
    }
}

#[test]
fn predefined_teams_match_model_for_every_layout() {
    for n in 1..=16 {
        for node_size in 1..=n {
            Sim::new(n, node_size).check(None);
        }
    }
}

/// Every triplet in a box around the valid ones, on the parent `parents`: valid triplets must
/// build the model's team with the model's handle on all members; the others must be refused
/// on every member. Each new team is checked, then destroyed.
fn every_triplet(sim: &mut Sim, parents: &[TeamId], parent_size: i32) {
    for start in -1..=parent_size {
        for stride in -1..=parent_size + 1 {
            for size in -1..=parent_size + 1 {
                let new = sim.split_strided(parents, start, stride, size);
                let live: Vec<TeamId> = new
                    .iter()
                    .copied()
                    .filter(|&h| h != TeamId::INVALID)
                    .collect();
                if let Some(&first) = live.first() {
                    sim.check(Some(&[first]));
                    sim.destroy(&new);
                }
            }
        }
    }
}

#[test]
fn split_strided_of_world_matches_model() {
    for n in 1..=16 {
        let mut sim = Sim::new(n, (n + 1) / 2);
        // Even PEs hold handle 6, odd PEs do not: the agreed slot must skip it for everyone.
        let evens = sim.split_strided(&sim.all(TeamId::WORLD), 0, 2, (n + 1) / 2);
        assert!(evens.iter().step_by(2).all(|&h| h == TeamId(6)));
        let first_free = sim.split_strided(&sim.all(TeamId::WORLD), 0, 1, n);
        assert!(first_free.iter().all(|&h| h == TeamId(7)));
        sim.destroy(&first_free);
        let world = sim.all(TeamId::WORLD);
        every_triplet(&mut sim, &world, n);
        sim.check(None);
    }
}

#[test]
fn split_strided_of_user_team_matches_model() {
    for n in 2..=16 {
        let mut sim = Sim::new(n, 4.min(n));
        let odds = sim.split_strided(&sim.all(TeamId::WORLD), 1, 2, n / 2);
        every_triplet(&mut sim, &odds, n / 2);
        // A grandchild parent: every other odd PE.
        let inner = sim.split_strided(&odds, 0, 2, (n / 2 + 1) / 2);
        every_triplet(&mut sim, &inner, (n / 2 + 1) / 2);
        sim.check(None);
    }
}

#[test]
fn split_strided_of_node_team_matches_model() {
    // NODE is one handle naming a different team on each node; each node splits on its own.
    for (n, node_size) in [(7, 3), (8, 4), (5, 5), (6, 1)] {
        let mut sim = Sim::new(n, node_size);
        let node = sim.all(TeamId::NODE);
        every_triplet(&mut sim, &node, node_size);
        sim.check(None);
    }
}

#[test]
fn split_2d_matches_model() {
    for n in 1..=16 {
        let mut sim = Sim::new(n, 3.min(n));
        let odds = if n >= 2 {
            sim.split_strided(&sim.all(TeamId::WORLD), 1, 2, n / 2)
        } else {
            vec![]
        };
        let mut parents = vec![
            sim.all(TeamId::WORLD),
            sim.all(TeamId::NODE),
            sim.all(TeamId::SAME_MYPE_NODE),
        ];
        if !odds.is_empty() {
            parents.push(odds);
        }
        for parent in &parents {
            for xrange in -1..=n + 2 {
                let pairs = sim.split_2d(parent, xrange);
                if let Some(&(x, y)) = pairs.iter().find(|(x, _)| *x != TeamId::INVALID) {
                    sim.check(Some(&[x, y]));
                    let xs: Vec<TeamId> = pairs.iter().map(|p| p.0).collect();
                    let ys: Vec<TeamId> = pairs.iter().map(|p| p.1).collect();
                    sim.destroy(&xs);
                    sim.destroy(&ys);
                }
            }
        }
        sim.check(None);
    }
}

#[test]
fn split_2d_twice_gives_3d_grid() {
    // The OpenSHMEM example: 12 PEs as 3 x 2 x 2.
    let mut sim = Sim::new(12, 4);
    let first = sim.split_2d(&sim.all(TeamId::WORLD), 3);
    let yz: Vec<TeamId> = first.iter().map(|p| p.1).collect();
    let second = sim.split_2d(&yz, 2);
    sim.destroy(&yz);
    sim.check(None);
    for (pe, (xy, yzp)) in sim.pes.iter().zip(first.iter().zip(&second)) {
        let me = pe.table.layout().my_pe;
        let (x, y, z) = (
            pe.table.team_my_pe(xy.0),
            pe.table.team_my_pe(yzp.0),
            pe.table.team_my_pe(yzp.1),
        );
        assert_eq!(me, x + 3 * y + 6 * z, "PE {me} at ({x}, {y}, {z})");
    }
}

#[derive(Clone, Debug)]
enum Op {
    Strided {
        who: usize,
        team: usize,
        start: i32,
        stride: i32,
        size: i32,
    },
    TwoD {
        who: usize,
        team: usize,
        xrange: i32,
    },
    Destroy {
        who: usize,
        team: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (
            any::<usize>(),
            any::<usize>(),
            -1..9i32,
            -1..9i32,
            -1..10i32
        )
            .prop_map(|(who, team, start, stride, size)| Op::Strided {
                who,
                team,
                start,
                stride,
                size
            }),
        (any::<usize>(), any::<usize>(), -1..10i32).prop_map(|(who, team, xrange)| Op::TwoD {
            who,
            team,
            xrange
        }),
        (any::<usize>(), any::<usize>()).prop_map(|(who, team)| Op::Destroy { who, team }),
    ]
}

impl Sim {
    /// For the `team`-th live team of PE `who` (any, or user only): the handle every PE holds
    /// for that team (INVALID for non-members).
    fn handles_of(&self, who: usize, team: usize, user_only: bool) -> Option<Vec<TeamId>> {
        let pe = &self.pes[who % self.n()];
        let teams: Vec<(&TeamId, &Vec<i32>)> = pe
            .model
            .iter()
            .filter(|(h, _)| !user_only || h.is_user())
            .collect();
        if teams.is_empty() {
            return None;
        }
        let (&h, list) = teams[team % teams.len()];
        Some(
            self.pes
                .iter()
                .map(|q| {
                    if q.model.get(&h) == Some(list) {
                        h
                    } else {
                        TeamId::INVALID
                    }
                })
                .collect(),
        )
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random sequences of splits and destroys on random teams keep every table equal to the
    /// model: members, numbering, translation, handle agreement and reuse.
    #[test]
    fn random_team_histories_match_model(
        n in 1..=9i32,
        node_size_pick in 0..9i32,
        ops in proptest::collection::vec(op(), 1..24),
    ) {
        let mut sim = Sim::new(n, node_size_pick % n + 1);
        for op in ops {
            match op {
                Op::Strided { who, team, start, stride, size } => {
                    if let Some(parents) = sim.handles_of(who, team, false) {
                        sim.split_strided(&parents, start, stride, size);
                    }
                }
                Op::TwoD { who, team, xrange } => {
                    if let Some(parents) = sim.handles_of(who, team, false) {
                        sim.split_2d(&parents, xrange);
                    }
                }
                Op::Destroy { who, team } => {
                    if let Some(handles) = sim.handles_of(who, team, true) {
                        sim.destroy(&handles);
                    }
                }
            }
            sim.check(None);
        }
    }
}
