//! One named test per rule of [`TeamTable`], on single tables. The exhaustive all-PE
//! simulations against a brute-force model are in `model_tests.rs`.

use super::*;

fn table(n_pes: i32, my_pe: i32, node_size: i32) -> TeamTable {
    TeamTable::new(WorldLayout::new(n_pes, my_pe, node_size).unwrap())
}

/// Splits `parent` with this table's own free slots as the agreed set.
fn split(t: &mut TeamTable, parent: TeamId, start: i32, stride: i32, size: i32) -> TeamId {
    let agreed = t.free_slots();
    t.split_strided(parent, start, stride, size, None, agreed)
        .unwrap()
}

fn not_a_member(t: &TeamTable, team: TeamId) -> TeamError {
    TeamError::NotAMember {
        team,
        pe: t.layout().my_pe,
    }
}

#[test]
fn new_table_holds_the_six_predefined_teams() {
    let t = table(8, 5, 4);
    let live: Vec<TeamId> = t.teams().map(|(id, _)| id).collect();
    assert_eq!(live, TeamId::PREDEFINED.to_vec());
    assert_eq!(t.layout(), WorldLayout::new(8, 5, 4).unwrap());
    assert_eq!(
        (t.team_my_pe(TeamId::WORLD), t.team_n_pes(TeamId::WORLD)),
        (5, 8)
    );
    assert_eq!(
        (t.team_my_pe(TeamId::NODE), t.team_n_pes(TeamId::NODE)),
        (1, 4)
    );
    assert_eq!(t.members(TeamId::SHARED), t.members(TeamId::NODE));
    assert_eq!(t.members(TeamId::SAME_MYPE_NODE), Ok(Stride::new(1, 4, 2)));
    assert_eq!(t.team_my_pe(TeamId::SAME_MYPE_NODE), 1);
    assert_eq!(t.members(TeamId::SAME_GPU), Ok(Stride::new(5, 1, 1)));
    assert_eq!(t.members(TeamId::GPU_LEADERS), Ok(Stride::new(0, 1, 8)));
    assert_eq!(t.free_slots(), SlotSet::all());
}

#[test]
fn try_new_refuses_a_bad_layout() {
    let bad = WorldLayout {
        n_pes: 4,
        my_pe: 4,
        node_size: 2,
    };
    assert_eq!(
        TeamTable::try_new(bad),
        Err(TeamError::BadLayout {
            n_pes: 4,
            my_pe: 4,
            node_size: 2
        })
    );
    let zero_node = WorldLayout {
        n_pes: 4,
        my_pe: 0,
        node_size: 0,
    };
    assert!(TeamTable::try_new(zero_node).is_err());
}

#[test]
#[should_panic(expected = "world layout not representable")]
fn new_panics_on_a_bad_layout() {
    let _ = TeamTable::new(WorldLayout {
        n_pes: 0,
        my_pe: 0,
        node_size: 1,
    });
}

#[test]
fn my_pe_and_n_pes_of_invalid_team_are_minus_one() {
    let t = table(4, 1, 2);
    assert_eq!(t.team_my_pe(TeamId::INVALID), -1);
    assert_eq!(t.team_n_pes(TeamId::INVALID), -1);
    assert_eq!(t.team_my_pe(TeamId(-9)), -1);
    assert_eq!(
        t.members(TeamId::INVALID),
        Err(TeamError::InvalidTeam {
            team: TeamId::INVALID
        })
    );
    assert!(!t.contains(TeamId::INVALID));
}

#[test]
fn my_pe_and_n_pes_of_unknown_handle_are_minus_one() {
    let t = table(4, 1, 2);
    for team in [TeamId::FIRST_USER, TeamId(100), TeamId(i32::MAX)] {
        assert_eq!((t.team_my_pe(team), t.team_n_pes(team)), (-1, -1));
        assert_eq!(t.members(team), Err(not_a_member(&t, team)));
        assert!(!t.contains(team));
    }
}

#[test]
fn split_member_gets_lowest_agreed_slot() {
    let mut t = table(4, 2, 4);
    let mut agreed = SlotSet::all();
    agreed.remove(TeamId(6));
    agreed.remove(TeamId(7));
    let team = t
        .split_strided(TeamId::WORLD, 0, 2, 2, None, agreed)
        .unwrap();
    assert_eq!(team, TeamId(8));
    assert_eq!(t.members(team), Ok(Stride::new(0, 2, 2)));
    assert_eq!((t.team_my_pe(team), t.team_n_pes(team)), (1, 2));
    assert!(!t.free_slots().contains(team) && t.free_slots().contains(TeamId(6)));
}

#[test]
fn split_non_member_gets_invalid_and_takes_no_slot() {
    let mut t = table(4, 1, 4);
    let before = t.clone();
    let team = t
        .split_strided(TeamId::WORLD, 0, 2, 2, None, SlotSet::all())
        .unwrap();
    assert_eq!(team, TeamId::INVALID);
    assert_eq!(t, before);
}

fn assert_bad_split(parent_size: i32, parent: TeamId, t: &mut TeamTable, args: (i32, i32, i32)) {
    let (start, stride, size) = args;
    let before = t.clone();
    let agreed = t.free_slots();
    assert_eq!(
        t.split_strided(parent, start, stride, size, None, agreed),
        Err(TeamError::BadSplit {
            start,
            stride,
            size,
            parent_size
        }),
        "{args:?}"
    );
    assert_eq!(*t, before, "a refused split changes nothing");
}

#[test]
fn split_rejects_negative_start() {
    let mut t = table(4, 0, 4);
    assert_bad_split(4, TeamId::WORLD, &mut t, (-1, 1, 1));
    assert_bad_split(4, TeamId::WORLD, &mut t, (i32::MIN, 1, 2));
}

#[test]
fn split_rejects_start_at_or_beyond_parent_size() {
    let mut t = table(4, 0, 4);
    assert_bad_split(4, TeamId::WORLD, &mut t, (4, 1, 1));
    assert_bad_split(4, TeamId::WORLD, &mut t, (i32::MAX, 1, 1));
}

#[test]
fn split_rejects_non_positive_size() {
    let mut t = table(4, 0, 4);
    assert_bad_split(4, TeamId::WORLD, &mut t, (0, 1, 0));
    assert_bad_split(4, TeamId::WORLD, &mut t, (0, 1, -1));
}

#[test]
fn split_rejects_size_beyond_parent_size() {
    let mut t = table(4, 0, 4);
    assert_bad_split(4, TeamId::WORLD, &mut t, (0, 1, 5));
    assert_bad_split(4, TeamId::WORLD, &mut t, (0, 1, i32::MAX));
}

#[test]
fn split_rejects_stride_below_one() {
    let mut t = table(4, 0, 4);
    assert_bad_split(4, TeamId::WORLD, &mut t, (0, 0, 1)); // NVSHMEM: stride < 1, even for size 1
    assert_bad_split(4, TeamId::WORLD, &mut t, (0, 0, 2));
    assert_bad_split(4, TeamId::WORLD, &mut t, (3, -1, 2));
}

#[test]
fn split_rejects_last_pe_beyond_parent() {
    let mut t = table(8, 0, 8);
    // 1 3 5 7 fits; 1 3 5 7 9 does not.
    assert_bad_split(8, TeamId::WORLD, &mut t, (1, 2, 5));
    assert_bad_split(8, TeamId::WORLD, &mut t, (2, i32::MAX, 2));
    // On a non-world parent, NVSHMEM would only check against the world size.
    let low = split(&mut t, TeamId::WORLD, 0, 1, 4); // world 0..4
    assert_bad_split(4, low, &mut t, (2, 1, 3)); // would be world 2 3 4
}

#[test]
fn split_accepts_large_stride_for_one_pe() {
    let mut t = table(4, 3, 4);
    let team = split(&mut t, TeamId::WORLD, 3, i32::MAX, 1);
    assert_eq!(t.members(team), Ok(Stride::new(3, 1, 1)));
}

#[test]
fn split_rejects_invalid_parent() {
    let mut t = table(4, 0, 4);
    let agreed = t.free_slots();
    let before = t.clone();
    assert_eq!(
        t.split_strided(TeamId::INVALID, 0, 1, 1, None, agreed),
        Err(TeamError::InvalidTeam {
            team: TeamId::INVALID
        })
    );
    assert_eq!(t, before);
}

#[test]
fn split_by_non_member_of_parent_is_refused() {
    let mut t = table(4, 1, 4);
    // PE 1 is not in the even team, so it holds INVALID for it and no team under the handle
    // the even PEs got.
    assert_eq!(
        t.split_strided(TeamId::WORLD, 0, 2, 2, None, SlotSet::all()),
        Ok(TeamId::INVALID)
    );
    let err = not_a_member(&t, TeamId(6));
    assert_eq!(
        t.split_strided(TeamId(6), 0, 1, 1, None, SlotSet::all()),
        Err(err.clone())
    );
    assert_eq!(
        t.split_2d(TeamId(6), 1, None, None, SlotSet::all()),
        Err(err)
    );
}

#[test]
fn split_refuses_agreed_slot_in_use() {
    let mut t = table(2, 0, 2);
    let first = split(&mut t, TeamId::WORLD, 0, 1, 2);
    assert_eq!(first, TeamId(6));
    let before = t.clone();
    assert_eq!(
        t.split_strided(TeamId::WORLD, 0, 1, 1, None, SlotSet::all()),
        Err(TeamError::SlotInUse {
            team: TeamId(6),
            pe: 0
        })
    );
    assert_eq!(t, before);
}

#[test]
fn split_refuses_negative_config_on_members_only() {
    let bad = Some(TeamConfig::new(-2));
    let mut member = table(2, 0, 2);
    assert_eq!(
        member.split_strided(TeamId::WORLD, 0, 1, 1, bad, SlotSet::all()),
        Err(TeamError::BadConfig { num_contexts: -2 })
    );
    let mut other = table(2, 1, 2);
    assert_eq!(
        other.split_strided(TeamId::WORLD, 0, 1, 1, bad, SlotSet::all()),
        Ok(TeamId::INVALID)
    );
}

#[test]
fn split_keeps_the_config_it_was_given() {
    let mut t = table(2, 0, 2);
    let with = t.split_strided(
        TeamId::WORLD,
        0,
        1,
        2,
        Some(TeamConfig::new(3)),
        t.free_slots(),
    );
    let without = t.split_strided(TeamId::WORLD, 0, 1, 2, None, t.free_slots());
    assert_eq!(t.get_config(with.unwrap()), Ok(TeamConfig::new(3)));
    assert_eq!(t.get_config(without.unwrap()), Ok(TeamConfig::default()));
}

#[test]
fn split_2d_rejects_non_positive_xrange() {
    let mut t = table(6, 0, 6);
    let before = t.clone();
    for xrange in [0, -1, i32::MIN] {
        assert_eq!(
            t.split_2d(TeamId::WORLD, xrange, None, None, SlotSet::all()),
            Err(TeamError::BadXRange {
                xrange,
                parent_size: 6
            })
        );
    }
    assert_eq!(t, before);
}

#[test]
fn split_2d_treats_large_xrange_as_parent_size() {
    for xrange in [6, 7, i32::MAX] {
        let mut t = table(6, 4, 3);
        let (x, y) = t
            .split_2d(TeamId::WORLD, xrange, None, None, SlotSet::all())
            .unwrap();
        assert_eq!(t.members(x), Ok(Stride::new(0, 1, 6)));
        assert_eq!(t.members(y), Ok(Stride::new(4, 1, 1)));
        assert_eq!((t.team_my_pe(x), t.team_my_pe(y)), (4, 0));
    }
}

#[test]
fn split_2d_rejects_invalid_parent() {
    let mut t = table(6, 0, 6);
    assert_eq!(
        t.split_2d(TeamId::INVALID, 2, None, None, SlotSet::all()),
        Err(TeamError::InvalidTeam {
            team: TeamId::INVALID
        })
    );
}

#[test]
fn split_2d_uses_the_two_lowest_agreed_slots() {
    // Parent of 10 PEs, xrange 3: PE 7 is at (1, 2); row 6 7 8, column 1 4 7.
    let mut t = table(10, 7, 5);
    let mut agreed = SlotSet::all();
    agreed.remove(TeamId(7));
    let (x, y) = t
        .split_2d(TeamId::WORLD, 3, None, Some(TeamConfig::new(1)), agreed)
        .unwrap();
    assert_eq!((x, y), (TeamId(6), TeamId(8)));
    assert_eq!(t.members(x), Ok(Stride::new(6, 1, 3)));
    assert_eq!(t.members(y), Ok(Stride::new(1, 3, 3)));
    assert_eq!((t.team_my_pe(x), t.team_my_pe(y)), (1, 2));
    assert_eq!(t.get_config(x), Ok(TeamConfig::default()));
    assert_eq!(t.get_config(y), Ok(TeamConfig::new(1)));
}

#[test]
fn split_2d_refuses_either_slot_in_use_without_half_made_pair() {
    let mut t = table(4, 0, 4);
    let _first = split(&mut t, TeamId::WORLD, 0, 1, 1); // takes 6
    let mut stale = SlotSet::all();
    stale.remove(TeamId(7)); // lowest two: 6 (used here) and 8
    let before = t.clone();
    assert_eq!(
        t.split_2d(TeamId::WORLD, 2, None, None, stale),
        Err(TeamError::SlotInUse {
            team: TeamId(6),
            pe: 0
        })
    );
    assert_eq!(t, before);
    let bad_y = Some(TeamConfig::new(-1));
    assert_eq!(
        t.split_2d(TeamId::WORLD, 2, None, bad_y, t.free_slots()),
        Err(TeamError::BadConfig { num_contexts: -1 })
    );
    assert_eq!(t, before);
}

#[test]
fn destroy_of_predefined_team_is_refused() {
    let mut t = table(4, 0, 2);
    for team in TeamId::PREDEFINED {
        assert_eq!(t.destroy(team), Err(TeamError::Predefined { team }));
        assert!(t.contains(team));
    }
}

#[test]
fn destroy_of_invalid_is_a_no_op() {
    let mut t = table(4, 0, 2);
    let before = t.clone();
    assert_eq!(t.destroy(TeamId::INVALID), Ok(()));
    assert_eq!(t, before);
}

#[test]
fn destroy_of_unknown_handle_is_refused() {
    let mut t = table(4, 0, 2);
    assert_eq!(t.destroy(TeamId(6)), Err(not_a_member(&t, TeamId(6))));
    assert_eq!(
        t.destroy(TeamId(i32::MAX)),
        Err(not_a_member(&t, TeamId(i32::MAX)))
    );
    assert_eq!(
        t.destroy(TeamId(-2)),
        Err(TeamError::InvalidTeam { team: TeamId(-2) })
    );
    let team = split(&mut t, TeamId::WORLD, 0, 1, 2);
    t.destroy(team).unwrap();
    assert_eq!(
        t.destroy(team),
        Err(not_a_member(&t, team)),
        "double destroy"
    );
}

#[test]
fn destroy_frees_the_slot_for_reuse() {
    let mut t = table(4, 0, 4);
    let a = split(&mut t, TeamId::WORLD, 0, 1, 4);
    let b = split(&mut t, TeamId::WORLD, 0, 1, 3);
    let c = split(&mut t, TeamId::WORLD, 0, 1, 2);
    assert_eq!((a, b, c), (TeamId(6), TeamId(7), TeamId(8)));
    t.destroy(b).unwrap();
    assert!(t.free_slots().contains(b));
    assert_eq!(t.team_my_pe(b), -1);
    let d = split(&mut t, TeamId::WORLD, 0, 2, 2);
    assert_eq!(d, b, "lowest free slot is reused");
    assert_eq!(t.members(d), Ok(Stride::new(0, 2, 2)));
}

#[test]
fn handles_are_stable_across_other_creates_and_destroys() {
    let mut t = table(8, 0, 4);
    let a = split(&mut t, TeamId::WORLD, 0, 1, 8);
    let b = split(&mut t, TeamId::WORLD, 0, 2, 4);
    let c = split(&mut t, b, 0, 2, 2);
    let (a_members, c_members) = (t.members(a).unwrap(), t.members(c).unwrap());
    t.destroy(b).unwrap();
    let (x, y) = t.split_2d(a, 4, None, None, t.free_slots()).unwrap();
    let e = split(&mut t, c, 0, 1, 1);
    t.destroy(x).unwrap();
    assert_eq!(t.members(a), Ok(a_members));
    assert_eq!(
        t.members(c),
        Ok(c_members),
        "child outlives its destroyed parent"
    );
    assert_eq!(c_members.to_vec(), vec![0, 4]);
    assert_eq!(t.team_my_pe(c), 0);
    assert!(t.contains(y) && t.contains(e));
    assert_eq!(t.translate_pe(c, 1, a), 4);
}

#[test]
fn no_cap_on_user_teams() {
    let mut t = table(4, 0, 2);
    let teams: Vec<TeamId> = (0..1200)
        .map(|i| split(&mut t, TeamId::WORLD, 0, 1, 1 + i % 4))
        .collect();
    for (i, &team) in teams.iter().enumerate() {
        assert_eq!(team.0, 6 + i32::try_from(i).unwrap());
        let size = 1 + i32::try_from(i % 4).unwrap();
        assert_eq!(t.members(team), Ok(Stride::new(0, 1, size)));
        assert_eq!((t.team_my_pe(team), t.team_n_pes(team)), (0, size));
    }
    assert_eq!(t.team_n_pes(TeamId(1205)), 4);
    assert_eq!(t.free_slots().lowest(), TeamId(1206));
    assert_eq!(t.device_table().len(), 1206);
    for &team in &teams[..600] {
        t.destroy(team).unwrap();
    }
    assert_eq!(t.free_slots().lowest_n(2), vec![TeamId(6), TeamId(7)]);
    assert_eq!(
        t.team_n_pes(TeamId(1205)),
        4,
        "survivors keep their handles"
    );
}

#[test]
fn translate_pe_with_invalid_or_unknown_team_is_minus_one() {
    let t = table(4, 0, 2);
    for bad in [TeamId::INVALID, TeamId(-5), TeamId(6), TeamId(1000)] {
        assert_eq!(t.translate_pe(bad, 0, TeamId::WORLD), -1);
        assert_eq!(t.translate_pe(TeamId::WORLD, 0, bad), -1);
        assert_eq!(t.translate_pe(bad, 0, bad), -1);
    }
}

#[test]
fn translate_pe_out_of_range_is_minus_one() {
    let t = table(4, 0, 2);
    for pe in [-1, 4, 5, i32::MIN, i32::MAX] {
        assert_eq!(t.translate_pe(TeamId::WORLD, pe, TeamId::WORLD), -1, "{pe}");
    }
    // NODE has 2 PEs: index 2 is out of range even though NVSHMEM's `> size` test passes it.
    assert_eq!(t.translate_pe(TeamId::NODE, 2, TeamId::WORLD), -1);
    assert_eq!(t.translate_pe(TeamId::NODE, 1, TeamId::WORLD), 1);
}

#[test]
fn translate_pe_to_team_without_that_pe_is_minus_one() {
    let t = table(4, 0, 2); // NODE = {0, 1}, SAME_MYPE_NODE = {0, 2}
    assert_eq!(t.translate_pe(TeamId::WORLD, 3, TeamId::NODE), -1);
    assert_eq!(t.translate_pe(TeamId::NODE, 1, TeamId::SAME_MYPE_NODE), -1);
    assert_eq!(t.translate_pe(TeamId::WORLD, 2, TeamId::SAME_MYPE_NODE), 1);
    assert_eq!(t.translate_pe(TeamId::SAME_MYPE_NODE, 1, TeamId::WORLD), 2);
}

#[test]
fn get_config_of_invalid_or_unknown_team_is_refused() {
    let t = table(4, 0, 2);
    assert_eq!(
        t.get_config(TeamId::INVALID),
        Err(TeamError::InvalidTeam {
            team: TeamId::INVALID
        })
    );
    assert_eq!(t.get_config(TeamId(9)), Err(not_a_member(&t, TeamId(9))));
}

#[test]
fn get_config_of_predefined_team_is_the_default() {
    let t = table(4, 0, 2);
    for team in TeamId::PREDEFINED {
        assert_eq!(t.get_config(team), Ok(TeamConfig::default()));
    }
}

#[test]
fn free_slots_track_live_user_teams() {
    let mut t = table(3, 0, 3);
    let a = split(&mut t, TeamId::WORLD, 0, 1, 3);
    let b = split(&mut t, TeamId::WORLD, 0, 1, 2);
    let free = t.free_slots();
    assert!(!free.contains(a) && !free.contains(b) && free.contains(TeamId(8)));
    t.destroy(a).unwrap();
    t.destroy(b).unwrap();
    assert_eq!(t.free_slots(), SlotSet::all());
}

#[test]
fn device_table_reflects_teams_and_layout() {
    let mut t = table(6, 4, 4); // nodes {0 1 2 3} {4 5}
    let evens = split(&mut t, TeamId::WORLD, 0, 2, 3); // 6
    let gap = split(&mut t, TeamId::WORLD, 0, 1, 6); // 7
    let tail = split(&mut t, evens, 1, 1, 2); // 8: world 2 4
    t.destroy(gap).unwrap();
    let dt = t.device_table();
    let expect = |start, stride, size, my_pe| DeviceTeam {
        start,
        stride,
        size,
        my_pe,
    };
    assert_eq!(
        dt.teams,
        vec![
            expect(0, 1, 6, 4), // WORLD
            expect(4, 1, 2, 0), // SHARED
            expect(4, 1, 2, 0), // NODE
            expect(0, 4, 2, 1), // SAME_MYPE_NODE
            expect(4, 1, 1, 0), // SAME_GPU
            expect(0, 1, 6, 4), // GPU_LEADERS
            expect(0, 2, 3, 2), // evens
            DeviceTeam::UNUSED, // destroyed
            expect(2, 2, 2, 1), // tail
        ]
    );
    assert_eq!(dt.get(tail), Some(&expect(2, 2, 2, 1)));
    assert_eq!(dt.to_bytes().len(), 9 * 16);
    t.destroy(tail).unwrap();
    assert_eq!(
        t.device_table().len(),
        7,
        "the table ends at the highest live handle"
    );
    t.destroy(evens).unwrap();
    assert_eq!(t.device_table().len(), 6);
}
