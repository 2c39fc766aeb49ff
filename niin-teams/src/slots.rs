//! [`SlotSet`]: a set of free user-team handles, unbounded, as a growable bitset.

use crate::id::TeamId;

const WORD_BITS: i64 = 64;

/// A set of user-team handles (team slots), conceptually unbounded: every handle at least
/// [`TeamId::FIRST_USER`] that has not been removed is in the set.
///
/// [`TeamTable::free_slots`](crate::TeamTable::free_slots) gives the slots one PE has free. To
/// create a team, the API layer intersects the free slots of every parent-team member and passes
/// the result to the split, which takes the lowest handle of it, as NVSHMEM takes the lowest set
/// bit of the AND-reduced `psync_pool_avail` bitmap (but without NVSHMEM's `NVSHMEM_MAX_TEAMS`
/// cap).
///
/// Representation, for exchanging sets between PEs: bit `b` of word `w` stands for handle
/// `FIRST_USER + 64*w + b` (1 = free), and every handle past the last word is free. Sets are
/// normalized (no trailing all-ones word), so `==` compares the sets themselves. To AND-reduce
/// across PEs with fixed-size buffers, agree on `n = max(word_len())`, exchange
/// [`to_words(n)`](SlotSet::to_words), AND them word by word and rebuild with
/// [`from_words`](SlotSet::from_words); or intersect whole sets with
/// [`intersect`](SlotSet::intersect).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SlotSet {
    words: Vec<u64>,
}

impl SlotSet {
    /// The set of all user handles.
    pub fn all() -> Self {
        SlotSet::default()
    }

    /// Position of `team` as (word, bit); `None` for non-user handles.
    fn locate(team: TeamId) -> Option<(usize, u32)> {
        if !team.is_user() {
            return None;
        }
        let offset = i64::from(team.0) - i64::from(TeamId::FIRST_USER.0);
        let word = usize::try_from(offset / WORD_BITS).ok()?;
        let bit = u32::try_from(offset % WORD_BITS).ok()?;
        Some((word, bit))
    }

    /// Handle of (word, bit); `None` when it does not fit an `i32`.
    fn handle(word: usize, bit: u32) -> Option<TeamId> {
        let word = i64::try_from(word).ok()?;
        let raw = i64::from(TeamId::FIRST_USER.0) + word * WORD_BITS + i64::from(bit);
        i32::try_from(raw).ok().map(TeamId)
    }

    fn normalize(&mut self) {
        while self.words.last() == Some(&u64::MAX) {
            self.words.pop();
        }
    }

    /// Whether `team` is in the set; never true for predefined or negative handles.
    pub fn contains(&self, team: TeamId) -> bool {
        match Self::locate(team) {
            Some((w, b)) => self.words.get(w).is_none_or(|word| word >> b & 1 == 1),
            None => false,
        }
    }

    /// Removes `team`; returns whether it was in the set.
    pub fn remove(&mut self, team: TeamId) -> bool {
        let Some((w, b)) = Self::locate(team) else {
            return false;
        };
        if !self.contains(team) {
            return false;
        }
        if self.words.len() <= w {
            self.words.resize(w + 1, u64::MAX);
        }
        self.words[w] &= !(1u64 << b);
        true
    }

    /// Puts `team` back; returns whether it was missing. Predefined and negative handles are
    /// never in the set, so for them this does nothing and returns false.
    pub fn insert(&mut self, team: TeamId) -> bool {
        let Some((w, b)) = Self::locate(team) else {
            return false;
        };
        if self.contains(team) {
            return false;
        }
        self.words[w] |= 1u64 << b;
        self.normalize();
        true
    }

    /// The handles in both sets.
    pub fn intersect(&self, other: &SlotSet) -> SlotSet {
        let len = self.words.len().max(other.words.len());
        let word = |s: &SlotSet, i: usize| s.words.get(i).copied().unwrap_or(u64::MAX);
        let mut out = SlotSet {
            words: (0..len).map(|i| word(self, i) & word(other, i)).collect(),
        };
        out.normalize();
        out
    }

    /// The handles in every set; [`SlotSet::all`] for no sets.
    pub fn intersect_all<'a>(sets: impl IntoIterator<Item = &'a SlotSet>) -> SlotSet {
        sets.into_iter()
            .fold(SlotSet::all(), |acc, s| acc.intersect(s))
    }

    /// The lowest handle in the set; [`TeamId::INVALID`] only if no handle in the set fits an
    /// `i32` (about two billion handles removed).
    pub fn lowest(&self) -> TeamId {
        self.lowest_n(1).first().copied().unwrap_or(TeamId::INVALID)
    }

    /// The `n` lowest handles in the set, ascending; fewer only if the set runs out of handles
    /// that fit an `i32`.
    pub fn lowest_n(&self, n: usize) -> Vec<TeamId> {
        let mut out = Vec::with_capacity(n.min(1024));
        let mut w = 0usize;
        while out.len() < n {
            let word = self.words.get(w).copied().unwrap_or(u64::MAX);
            let mut rest = word;
            while rest != 0 && out.len() < n {
                let b = rest.trailing_zeros();
                rest &= rest - 1;
                match Self::handle(w, b) {
                    Some(team) => out.push(team),
                    None => return out,
                }
            }
            w += 1;
        }
        out
    }

    /// Number of words of the normalized representation.
    pub fn word_len(&self) -> usize {
        self.words.len()
    }

    /// The normalized words (see [`SlotSet`] for their meaning).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// The words padded with all-ones words to `max(n_words, word_len())` words.
    pub fn to_words(&self, n_words: usize) -> Vec<u64> {
        let mut words = self.words.clone();
        if words.len() < n_words {
            words.resize(n_words, u64::MAX);
        }
        words
    }

    /// The set with these words (see [`SlotSet`]); handles past the last word are free.
    pub fn from_words(words: &[u64]) -> SlotSet {
        let mut set = SlotSet {
            words: words.to_vec(),
        };
        set.normalize();
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(raw: &[i32]) -> Vec<TeamId> {
        raw.iter().copied().map(TeamId).collect()
    }

    #[test]
    fn all_holds_every_user_handle_and_nothing_else() {
        let s = SlotSet::all();
        assert_eq!(s.lowest(), TeamId::FIRST_USER);
        assert_eq!(s.lowest_n(3), ids(&[6, 7, 8]));
        assert!(s.contains(TeamId(6)) && s.contains(TeamId(1_000_000)));
        for t in TeamId::PREDEFINED {
            assert!(!s.contains(t));
        }
        assert!(!s.contains(TeamId::INVALID));
        assert_eq!(s.word_len(), 0);
    }

    #[test]
    fn remove_and_insert() {
        let mut s = SlotSet::all();
        assert!(s.remove(TeamId(6)));
        assert!(!s.remove(TeamId(6)));
        assert!(s.remove(TeamId(8)));
        assert_eq!(s.lowest_n(3), ids(&[7, 9, 10]));
        assert!(!s.remove(TeamId::WORLD) && !s.insert(TeamId::WORLD));
        assert!(!s.remove(TeamId::INVALID) && !s.insert(TeamId::INVALID));
        assert!(s.insert(TeamId(6)));
        assert!(!s.insert(TeamId(6)));
        assert!(s.insert(TeamId(8)));
        assert_eq!(
            s,
            SlotSet::all(),
            "normalized back to the empty representation"
        );
    }

    #[test]
    fn set_is_unbounded() {
        let mut s = SlotSet::all();
        for raw in 6..1006 {
            assert!(s.remove(TeamId(raw)));
        }
        assert_eq!(s.lowest(), TeamId(1006));
        assert!(s.remove(TeamId(5000)));
        assert!(!s.contains(TeamId(5000)) && s.contains(TeamId(4999)));
        assert!(s.insert(TeamId(500)));
        assert_eq!(s.lowest_n(2), ids(&[500, 1006]));
    }

    #[test]
    fn intersection_keeps_common_handles() {
        let mut a = SlotSet::all();
        let mut b = SlotSet::all();
        a.remove(TeamId(6));
        b.remove(TeamId(7));
        b.remove(TeamId(200));
        let c = a.intersect(&b);
        assert_eq!(c.lowest_n(3), ids(&[8, 9, 10]));
        assert!(!c.contains(TeamId(200)) && c.contains(TeamId(201)));
        assert_eq!(c, b.intersect(&a));
        assert_eq!(SlotSet::intersect_all([&a, &b]), c);
        assert_eq!(SlotSet::intersect_all(std::iter::empty()), SlotSet::all());
        assert_eq!(a.intersect(&SlotSet::all()), a);
    }

    #[test]
    fn words_round_trip_and_and_reduce() {
        let mut a = SlotSet::all();
        a.remove(TeamId(6));
        a.remove(TeamId(6 + 64));
        let mut b = SlotSet::all();
        b.remove(TeamId(7));
        assert_eq!((a.word_len(), b.word_len()), (2, 1));
        let n = a.word_len().max(b.word_len());
        let (wa, wb) = (a.to_words(n), b.to_words(n));
        assert_eq!(wa.len(), 2);
        assert_eq!(wb, vec![!0b10u64, u64::MAX]);
        let anded: Vec<u64> = wa.iter().zip(&wb).map(|(x, y)| x & y).collect();
        assert_eq!(SlotSet::from_words(&anded), a.intersect(&b));
        assert_eq!(SlotSet::from_words(a.words()), a);
        assert_eq!(SlotSet::from_words(&[u64::MAX, u64::MAX]), SlotSet::all());
        assert_eq!(a.to_words(0), a.words());
    }

    #[test]
    fn handles_beyond_i32_are_never_produced() {
        let offset = i64::from(i32::MAX) - i64::from(TeamId::FIRST_USER.0);
        let word = usize::try_from(offset / 64).unwrap();
        let bit = u32::try_from(offset % 64).unwrap();
        assert_eq!(SlotSet::locate(TeamId(i32::MAX)), Some((word, bit)));
        assert_eq!(SlotSet::handle(word, bit), Some(TeamId(i32::MAX)));
        if bit < 63 {
            assert_eq!(SlotSet::handle(word, bit + 1), None);
        }
        assert_eq!(SlotSet::handle(word + 1, 0), None);
    }
}
