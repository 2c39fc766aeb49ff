//! The process-global world: NVSHMEM's one-library-per-process model.
//!
//! ```text
//!                 init ok                      last finalize
//! Uninitialized ─────────> Initialized{world, n} ─────────────> Finalized
//!      │   ^  (Initializing while          │ ^  init: n += 1          │
//!      └───┘   init runs; back on failure) └─┘  finalize: n -= 1      │ init again
//!                                                                      v
//!                                                      Initializing ─> Initialized
//! ```
//!
//! The state sits behind one `Mutex`, which is held only to read or change the state,
//! never during communication: a call clones the [`World`] handle (an `Arc`) out of the
//! lock and works on the clone, so a thread blocked in a barrier never blocks another
//! thread's `nvshmem_my_pe`. Init itself runs outside the lock too, with the state set to
//! `Initializing` so a second thread neither starts a second world nor sees a half-made
//! one.
//!
//! As in NVSHMEM 3.4.5, init and finalize nest: a second `nvshmem_init` while
//! initialized only counts, and the finalize that brings the count to zero ends the
//! world (collectively). After that, init starts a new world.

use std::sync::{Mutex, MutexGuard};

use niin_api::World;

use crate::error::{FfiError, FfiResult};

/// Where the library stands.
enum State {
    /// Before the first init.
    Uninitialized,
    /// An init is running on some thread (outside the lock).
    Initializing,
    /// A world exists; `inits` counts the inits not yet matched by a finalize.
    Initialized { world: World, inits: u32 },
    /// The last finalize ended the world.
    Finalized,
}

static STATE: Mutex<State> = Mutex::new(State::Uninitialized);

fn state() -> MutexGuard<'static, State> {
    // The lock is only held for plain state changes that do not panic, so a poisoned
    // lock still guards a consistent state.
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A handle on the world, for a call that needs an initialized library.
pub(crate) fn world() -> FfiResult<World> {
    match &*state() {
        State::Initialized { world, .. } => Ok(world.clone()),
        State::Uninitialized => Err(FfiError::NotInitialized),
        State::Initializing => Err(FfiError::Initializing),
        State::Finalized => Err(FfiError::Finalized),
    }
}

/// Whether the library is initialized (`nvshmemx_init_status`).
pub(crate) fn is_initialized() -> bool {
    matches!(&*state(), State::Initialized { .. })
}

/// Initializes the library with the world `make` builds, unless it is initialized
/// already, in which case the init is only counted (NVSHMEM's nested init). `make` runs
/// without the lock held.
pub(crate) fn init(make: impl FnOnce() -> FfiResult<World>) -> FfiResult<()> {
    let after_finalize = {
        let mut s = state();
        let after_finalize = match &mut *s {
            State::Initialized { inits, .. } => {
                *inits = inits.saturating_add(1);
                return Ok(());
            }
            State::Initializing => return Err(FfiError::Initializing),
            State::Uninitialized => false,
            State::Finalized => true,
        };
        // Claimed under the same lock that saw the state: one init at a time.
        *s = State::Initializing;
        after_finalize
    };
    // Puts the state back if `make` fails or panics.
    struct Restore {
        after_finalize: bool,
        armed: bool,
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            if self.armed {
                *state() = if self.after_finalize {
                    State::Finalized
                } else {
                    State::Uninitialized
                };
            }
        }
    }
    let mut restore = Restore {
        after_finalize,
        armed: true,
    };
    let world = make()?;
    restore.armed = false;
    *state() = State::Initialized { world, inits: 1 };
    Ok(())
}

/// What a finalize has to do.
pub(crate) enum Finalize {
    /// An inner finalize of nested inits: nothing more to do.
    Nested,
    /// The last finalize: end this world (collectively).
    Last(World),
}

/// Counts a finalize; the last one takes the world out (the state is `Finalized` from
/// then on, before the world's collective finalize runs).
pub(crate) fn finalize() -> FfiResult<Finalize> {
    let mut s = state();
    match &mut *s {
        State::Initialized { inits, .. } if *inits > 1 => {
            *inits -= 1;
            Ok(Finalize::Nested)
        }
        State::Initialized { .. } => match std::mem::replace(&mut *s, State::Finalized) {
            State::Initialized { world, .. } => Ok(Finalize::Last(world)),
            _ => unreachable!("matched Initialized above"),
        },
        State::Uninitialized => Err(FfiError::NotInitialized),
        State::Initializing => Err(FfiError::Initializing),
        State::Finalized => Err(FfiError::Finalized),
    }
}

/// Takes the world out for `nvshmem_global_exit`, whatever the init count.
pub(crate) fn take_for_exit() -> Option<World> {
    let mut s = state();
    match std::mem::replace(&mut *s, State::Finalized) {
        State::Initialized { world, .. } => Some(world),
        other => {
            *s = other;
            None
        }
    }
}
