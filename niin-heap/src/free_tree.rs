//! The free-block index: an address-ordered treap whose nodes also carry the largest
//! free-block length in their subtree.
//!
//! Every free block of the heap is one node, keyed by its start offset. Because each
//! node knows the maximum block length below it, "the lowest-address free block of at
//! least `k` bytes" is a single root-to-leaf descent, and the neighbour look-ups that
//! coalescing needs are ordinary ordered-tree searches.
//!
//! Nodes live in an arena (`Vec<Node>` plus a list of vacant slots) and link to each
//! other by index, so the tree needs no `unsafe`, no `Box` per node and no fixed capacity.
//! A node's priority is `splitmix64(offset)`: a fixed bijective mix of the key. The
//! tree's shape is therefore a pure function of the *set* of free offsets, identical on
//! every PE and independent of the order in which blocks were inserted, and it has
//! expected depth O(log n) (about 2·ln n) like any treap.

use crate::fingerprint::splitmix64;

/// Index meaning "no node".
const NIL: usize = usize::MAX;

/// One free block, and the bookkeeping of its subtree.
#[derive(Clone, Copy, Debug)]
struct Node {
    /// Start offset of the free block (the search key).
    offset: u64,
    /// Length of the free block in bytes.
    len: u64,
    /// Largest `len` in the subtree rooted here (this node included).
    max_len: u64,
    /// Treap priority (max-heap ordered): `splitmix64(offset)`.
    priority: u64,
    /// Left child (smaller offsets) or `NIL`.
    left: usize,
    /// Right child (larger offsets) or `NIL`.
    right: usize,
}

/// Address-ordered set of free blocks `(offset, len)` with subtree-maximum lengths.
///
/// All operations are O(depth) = expected O(log n), except
/// [`FreeTree::first_fit_aligned`], whose bound is documented on it.
#[derive(Clone, Debug)]
pub(crate) struct FreeTree {
    /// Node arena; slots listed in `vacant` are unused.
    nodes: Vec<Node>,
    /// Arena slots free for reuse.
    vacant: Vec<usize>,
    /// Root node index or `NIL`.
    root: usize,
    /// Number of nodes in the tree.
    count: usize,
}

impl FreeTree {
    /// An empty tree.
    pub(crate) fn new() -> Self {
        Self {
            nodes: Vec::new(),
            vacant: Vec::new(),
            root: NIL,
            count: 0,
        }
    }

    /// Number of free blocks.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Length of the largest free block, 0 if there is none. O(1).
    pub(crate) fn largest(&self) -> u64 {
        self.max_of(self.root)
    }

    /// Length of the free block starting exactly at `offset`, if any.
    pub(crate) fn get(&self, offset: u64) -> Option<u64> {
        let mut t = self.root;
        while t != NIL {
            let n = &self.nodes[t];
            t = match offset.cmp(&n.offset) {
                std::cmp::Ordering::Less => n.left,
                std::cmp::Ordering::Greater => n.right,
                std::cmp::Ordering::Equal => return Some(n.len),
            };
        }
        None
    }

    /// The free block with the greatest start offset strictly below `offset`.
    pub(crate) fn predecessor(&self, offset: u64) -> Option<(u64, u64)> {
        let mut best = None;
        let mut t = self.root;
        while t != NIL {
            let n = &self.nodes[t];
            if n.offset < offset {
                best = Some((n.offset, n.len));
                t = n.right;
            } else {
                t = n.left;
            }
        }
        best
    }

    /// The lowest-address free block whose length is at least `min_len`.
    ///
    /// One descent guided by the subtree maxima: go left whenever the left subtree holds
    /// a large enough block, else take this node if it is large enough, else go right.
    pub(crate) fn first_fit(&self, min_len: u64) -> Option<(u64, u64)> {
        // Every block has len >= 1, so 0 means 1 (and keeps the descent off NIL children).
        let min_len = min_len.max(1);
        let mut t = self.root;
        if self.max_of(t) < min_len {
            return None;
        }
        loop {
            let n = &self.nodes[t];
            if self.max_of(n.left) >= min_len {
                t = n.left;
            } else if n.len >= min_len {
                return Some((n.offset, n.len));
            } else {
                // The subtree maximum is >= min_len and neither the left subtree nor this
                // node has it, so the right subtree must.
                t = n.right;
            }
        }
    }

    /// The lowest-address free block that can hold `need` bytes starting at a multiple of
    /// `alignment` (a power of two). Returns `(block_offset, block_len, aligned_start)`.
    ///
    /// This is an in-order walk that skips every subtree whose maximum length is below
    /// `need` (no block there can fit at any alignment) and stops at the first block that
    /// fits. A block of length `>= need + alignment - 256` always fits (its 256-aligned
    /// start is at most `alignment - 256` bytes below the next `alignment` boundary), so
    /// the walk never goes past the block that [`FreeTree::first_fit`] would return for
    /// that length. The blocks it examines and rejects are "near misses": length in
    /// `[need, need + alignment - 256)` but a misplaced start. Cost: O((c + 1)·log n)
    /// where `c` is the number of near misses below the answer — O(log n) when there are
    /// none, O(n) in the (pathological) worst case.
    pub(crate) fn first_fit_aligned(&self, need: u64, alignment: u64) -> Option<(u64, u64, u64)> {
        self.aligned_walk(self.root, need, alignment)
    }

    /// Recursive part of [`FreeTree::first_fit_aligned`].
    fn aligned_walk(&self, mut t: usize, need: u64, alignment: u64) -> Option<(u64, u64, u64)> {
        // Recurse on the left child, loop on the right child: stack depth = tree depth.
        while t != NIL && self.nodes[t].max_len >= need {
            let n = &self.nodes[t];
            if let Some(hit) = self.aligned_walk(n.left, need, alignment) {
                return Some(hit);
            }
            if n.len >= need {
                if let Some(start) = aligned_fit(n.offset, n.len, need, alignment) {
                    return Some((n.offset, n.len, start));
                }
            }
            t = n.right;
        }
        None
    }

    /// Inserts the free block `(offset, len)`. The caller guarantees that no block starts
    /// at `offset` and that `len > 0`.
    pub(crate) fn insert(&mut self, offset: u64, len: u64) {
        debug_assert!(len > 0, "empty free block");
        debug_assert!(self.get(offset).is_none(), "duplicate free block");
        let node = Node {
            offset,
            len,
            max_len: len,
            priority: splitmix64(offset),
            left: NIL,
            right: NIL,
        };
        let n = match self.vacant.pop() {
            Some(slot) => {
                self.nodes[slot] = node;
                slot
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        };
        self.root = self.insert_at(self.root, n);
        self.count += 1;
    }

    /// Removes the free block starting at `offset`, returning its length.
    pub(crate) fn remove(&mut self, offset: u64) -> Option<u64> {
        let (root, removed) = self.remove_at(self.root, offset);
        self.root = root;
        if removed == NIL {
            return None;
        }
        self.count -= 1;
        self.vacant.push(removed);
        Some(self.nodes[removed].len)
    }

    /// Changes the length of the free block starting at `offset` in place (its key, and
    /// so its position, is unchanged) and fixes the subtree maxima on the path. Cheaper
    /// than `remove` + `insert`. Returns false if no block starts at `offset`.
    pub(crate) fn set_len(&mut self, offset: u64, len: u64) -> bool {
        debug_assert!(len > 0, "empty free block");
        self.set_len_at(self.root, offset, len)
    }

    /// Recursive part of [`FreeTree::set_len`].
    fn set_len_at(&mut self, t: usize, key: u64, len: u64) -> bool {
        if t == NIL {
            return false;
        }
        let n = self.nodes[t];
        let found = match key.cmp(&n.offset) {
            std::cmp::Ordering::Equal => {
                self.nodes[t].len = len;
                true
            }
            std::cmp::Ordering::Less => self.set_len_at(n.left, key, len),
            std::cmp::Ordering::Greater => self.set_len_at(n.right, key, len),
        };
        if found {
            self.pull(t);
        }
        found
    }

    /// All free blocks `(offset, len)` in address order. O(n).
    pub(crate) fn to_vec(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(self.count);
        let mut stack = Vec::new();
        let mut t = self.root;
        while t != NIL || !stack.is_empty() {
            while t != NIL {
                stack.push(t);
                t = self.nodes[t].left;
            }
            if let Some(top) = stack.pop() {
                out.push((self.nodes[top].offset, self.nodes[top].len));
                t = self.nodes[top].right;
            }
        }
        out
    }

    /// Subtree maximum of `t`, 0 for `NIL`.
    fn max_of(&self, t: usize) -> u64 {
        if t == NIL { 0 } else { self.nodes[t].max_len }
    }

    /// Recomputes `max_len` of `t` from its children.
    fn pull(&mut self, t: usize) {
        let n = self.nodes[t];
        self.nodes[t].max_len = n.len.max(self.max_of(n.left)).max(self.max_of(n.right));
    }

    /// Splits subtree `t` into (offsets `< key`, offsets `>= key`).
    fn split(&mut self, t: usize, key: u64) -> (usize, usize) {
        if t == NIL {
            return (NIL, NIL);
        }
        if self.nodes[t].offset < key {
            let (l, r) = self.split(self.nodes[t].right, key);
            self.nodes[t].right = l;
            self.pull(t);
            (t, r)
        } else {
            let (l, r) = self.split(self.nodes[t].left, key);
            self.nodes[t].left = r;
            self.pull(t);
            (l, t)
        }
    }

    /// Joins two subtrees where every offset in `a` is below every offset in `b`.
    fn merge(&mut self, a: usize, b: usize) -> usize {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a].priority > self.nodes[b].priority {
            let r = self.merge(self.nodes[a].right, b);
            self.nodes[a].right = r;
            self.pull(a);
            a
        } else {
            let l = self.merge(a, self.nodes[b].left);
            self.nodes[b].left = l;
            self.pull(b);
            b
        }
    }

    /// Inserts detached node `n` into subtree `t`, returning the new subtree root.
    fn insert_at(&mut self, t: usize, n: usize) -> usize {
        if t == NIL {
            return n;
        }
        if self.nodes[n].priority > self.nodes[t].priority {
            let (l, r) = self.split(t, self.nodes[n].offset);
            self.nodes[n].left = l;
            self.nodes[n].right = r;
            self.pull(n);
            return n;
        }
        if self.nodes[n].offset < self.nodes[t].offset {
            let l = self.insert_at(self.nodes[t].left, n);
            self.nodes[t].left = l;
        } else {
            let r = self.insert_at(self.nodes[t].right, n);
            self.nodes[t].right = r;
        }
        self.pull(t);
        t
    }

    /// Removes the node keyed `key` from subtree `t`: (new subtree root, removed or NIL).
    fn remove_at(&mut self, t: usize, key: u64) -> (usize, usize) {
        if t == NIL {
            return (NIL, NIL);
        }
        let n = self.nodes[t];
        match key.cmp(&n.offset) {
            std::cmp::Ordering::Equal => (self.merge(n.left, n.right), t),
            std::cmp::Ordering::Less => {
                let (l, removed) = self.remove_at(n.left, key);
                self.nodes[t].left = l;
                self.pull(t);
                (t, removed)
            }
            std::cmp::Ordering::Greater => {
                let (r, removed) = self.remove_at(n.right, key);
                self.nodes[t].right = r;
                self.pull(t);
                (t, removed)
            }
        }
    }

    /// Checks every structural invariant; returns a description of the first violation.
    /// O(n); used by tests.
    #[cfg(test)]
    pub(crate) fn check(&self) -> Result<(), String> {
        fn walk(
            tree: &FreeTree,
            t: usize,
            lo: Option<u64>,
            hi: Option<u64>,
            seen: &mut usize,
        ) -> Result<u64, String> {
            if t == NIL {
                return Ok(0);
            }
            *seen += 1;
            let n = tree.nodes[t];
            if lo.is_some_and(|lo| n.offset <= lo) || hi.is_some_and(|hi| n.offset >= hi) {
                return Err(format!("offset {} out of BST order", n.offset));
            }
            if n.priority != splitmix64(n.offset) {
                return Err(format!("node {} has a stale priority", n.offset));
            }
            for c in [n.left, n.right] {
                if c != NIL && tree.nodes[c].priority > n.priority {
                    return Err(format!("heap order broken below {}", n.offset));
                }
            }
            let l = walk(tree, n.left, lo, Some(n.offset), seen)?;
            let r = walk(tree, n.right, Some(n.offset), hi, seen)?;
            let max = n.len.max(l).max(r);
            if max != n.max_len {
                return Err(format!(
                    "node {} max_len {} != {}",
                    n.offset, n.max_len, max
                ));
            }
            Ok(max)
        }
        let mut seen = 0;
        walk(self, self.root, None, None, &mut seen)?;
        if seen != self.count {
            return Err(format!("count {} but {} nodes reachable", self.count, seen));
        }
        if self.nodes.len() != self.count + self.vacant.len() {
            return Err("arena slots leaked".to_owned());
        }
        Ok(())
    }
}

/// Where `need` bytes aligned to `alignment` start inside the block `(offset, len)`, if
/// they fit. Overflow-safe: an aligned start beyond `u64::MAX` simply does not fit.
pub(crate) fn aligned_fit(offset: u64, len: u64, need: u64, alignment: u64) -> Option<u64> {
    let start = offset.checked_next_multiple_of(alignment)?;
    let end = offset.checked_add(len)?;
    let alloc_end = start.checked_add(need)?;
    (alloc_end <= end).then_some(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic xorshift for test inputs.
    fn rng(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn empty_tree_answers_nothing() {
        let t = FreeTree::new();
        assert_eq!(t.len(), 0);
        assert_eq!(t.largest(), 0);
        assert_eq!(t.first_fit(1), None);
        assert_eq!(t.first_fit_aligned(256, 4096), None);
        assert_eq!(t.predecessor(100), None);
        assert_eq!(t.get(0), None);
        t.check().unwrap();
    }

    #[test]
    fn queries_match_a_sorted_vec() {
        let mut t = FreeTree::new();
        let mut model: Vec<(u64, u64)> = Vec::new();
        let mut s = 0x1234_5678_9abc_def1;
        for _ in 0..3000 {
            let key = (rng(&mut s) % 4096) * 256;
            let len = (rng(&mut s) % 64 + 1) * 256;
            if let Ok(i) = model.binary_search_by_key(&key, |b| b.0) {
                if rng(&mut s) % 3 == 0 {
                    assert!(t.set_len(key, len));
                    model[i].1 = len;
                } else {
                    assert_eq!(t.remove(key), Some(model[i].1));
                    model.remove(i);
                }
            } else {
                assert!(!t.set_len(key, len));
                t.insert(key, len);
                let i = model.partition_point(|b| b.0 < key);
                model.insert(i, (key, len));
            }
            let k = (rng(&mut s) % 70) * 256;
            assert_eq!(t.first_fit(k), model.iter().copied().find(|b| b.1 >= k));
            let q = (rng(&mut s) % 4200) * 256;
            assert_eq!(
                t.predecessor(q),
                model.iter().copied().rev().find(|b| b.0 < q)
            );
            let a = 256 << (rng(&mut s) % 6);
            let want = model
                .iter()
                .find_map(|&(o, l)| aligned_fit(o, l, k.max(256), a).map(|st| (o, l, st)));
            assert_eq!(t.first_fit_aligned(k.max(256), a), want);
            assert_eq!(t.largest(), model.iter().map(|b| b.1).max().unwrap_or(0));
        }
        t.check().unwrap();
        assert_eq!(t.to_vec(), model);
    }

    #[test]
    fn shape_depends_only_on_the_key_set() {
        let keys: Vec<u64> = (0..500).map(|i| i * 512).collect();
        let mut a = FreeTree::new();
        let mut b = FreeTree::new();
        for &k in &keys {
            a.insert(k, 256);
        }
        for &k in keys.iter().rev() {
            b.insert(k, 256);
        }
        assert_eq!(a.nodes[a.root].offset, b.nodes[b.root].offset);
        a.check().unwrap();
        b.check().unwrap();
    }

    #[test]
    fn arena_slots_are_reused() {
        let mut t = FreeTree::new();
        for round in 0..10 {
            for i in 0..100 {
                t.insert(i * 256, 256 + round);
            }
            for i in 0..100 {
                assert_eq!(t.remove(i * 256), Some(256 + round));
            }
        }
        assert_eq!(t.nodes.len(), 100);
        assert_eq!(t.remove(0), None);
        t.check().unwrap();
    }

    #[test]
    fn aligned_fit_is_overflow_safe() {
        assert_eq!(aligned_fit(256, 1 << 20, 256, 1 << 63), None);
        assert_eq!(aligned_fit(0, 1 << 20, 256, 1 << 63), Some(0));
        assert_eq!(aligned_fit(u64::MAX - 255, 256, 256, 512), None);
        assert_eq!(aligned_fit(256, 4096, 256, 1024), Some(1024));
        assert_eq!(aligned_fit(256, 1024, 256, 1024), Some(1024));
        assert_eq!(aligned_fit(256, 1023, 256, 1024), None);
    }
}
