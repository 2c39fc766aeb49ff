//! Application buffers made symmetric: [`World::register_symmetric`] and
//! [`World::unregister_symmetric`] (NVSHMEM's `nvshmemx_buffer_register_symmetric` and
//! `nvshmemx_buffer_unregister_symmetric`).
//!
//! The transport does the mapping (niin-transport's `lsa/registered.rs`: on NCCL, a window
//! over the buffer and a second mapping of it at a symmetric address); this module makes
//! the call collective and safe to get wrong:
//!
//! 1. Every PE checks its own arguments (size, and that the transport can register the
//!    memory), and the PEs compare results and sizes before anyone enters the transport's
//!    collective part. A PE with a bad buffer makes every PE fail with an error naming it,
//!    instead of leaving the others waiting in NCCL.
//! 2. The transport registers; the PEs compare the symmetric addresses they got. Any
//!    failure or difference undoes the registration on every PE that made one.
//! 3. The world remembers the buffer: every operation then accepts views of it
//!    ([`World::sym_at`], and the checks of every operation), as it accepts allocations.
//!
//! Unregistration compares first too (all PEs must name a registered buffer), then each
//! PE waits for its device work and lets go of the mapping.

use niin_transport::{SymAddr, Transport};

use crate::buffer::SymSlice;
use crate::error::{Error, Result};
use crate::world::World;

/// One registered buffer as the world records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RegisteredBuffer {
    /// Heap offset of its symmetric address (the same on every PE).
    pub(crate) offset: u64,
    /// Bytes registered.
    pub(crate) len: u64,
}

impl RegisteredBuffer {
    /// Whether `[offset, offset + len)` lies inside this buffer.
    pub(crate) fn covers(&self, offset: u64, len: u64) -> bool {
        offset >= self.offset
            && offset
                .checked_add(len)
                .is_some_and(|end| end <= self.offset + self.len)
    }
}

/// The first PE that disagrees in a round of [`World::dissent`].
#[derive(Clone, Copy, Debug)]
struct Dissent {
    /// That PE.
    pe: usize,
    /// Whether its own step succeeded.
    ok: bool,
    /// The value it had.
    value: u64,
}

impl World {
    /// One agreement round (collective over all PEs): every PE tells whether its step
    /// succeeded and the value it holds; the first PE that failed, else the first whose
    /// value differs from this PE's `value`, or `None` when all agree.
    fn dissent(&self, ok: bool, value: u64) -> Result<Option<Dissent>> {
        let all = self.all_words([u64::from(ok), value])?;
        let dissent = |pe: usize| Dissent {
            pe,
            ok: all[pe][0] != 0,
            value: all[pe][1],
        };
        Ok(all
            .iter()
            .position(|w| w[0] == 0)
            .or_else(|| all.iter().position(|w| w[1] != value))
            .map(dissent))
    }

    fn registration_error(&self, op: &'static str, what: String) -> Error {
        Error::BadArgument {
            pe: self.my_pe(),
            op,
            what,
        }
    }

    /// Makes `len` bytes of this process's memory at `local` symmetric
    /// (`nvshmemx_buffer_register_symmetric`; collective over all PEs, the same `len`
    /// everywhere, ends with a barrier). On a GPU transport `local` must be the start of a
    /// CUDA VMM allocation (`cuMemCreate`, mapped and accessible to the PE's device, with a
    /// shareable handle type for multi-process worlds). Returns the view that names the
    /// buffer on every PE; its local address is `heap_base() + offset` (an alias of
    /// `local`: both reach the same bytes). The mock transport cannot register (its error
    /// says why), nor can a world with PEs outside the LSA team yet.
    pub fn register_symmetric(&self, local: *mut u8, len: usize) -> Result<SymSlice<u8>> {
        const OP: &str = "register_symmetric";
        self.check_live()?;
        let transport = &self.inner.transport;
        let checked = if local.is_null() {
            Err(self.registration_error(OP, "the buffer is NULL".to_owned()))
        } else if len == 0 {
            Err(self.registration_error(OP, "the size is 0".to_owned()))
        } else {
            self.transport_result(transport.check_registration(local as u64, len as u64))
        };
        let dissent = self.dissent(checked.is_ok(), len as u64)?;
        checked?;
        match dissent {
            None => {}
            Some(d) if !d.ok => {
                return Err(self.registration_error(
                    OP,
                    format!(
                        "PE {} cannot register its buffer (its error is on its own stderr), so \
                         no PE registers",
                        d.pe
                    ),
                ));
            }
            Some(d) => {
                return Err(self.registration_error(
                    OP,
                    format!(
                        "PE {} registers {} bytes and this PE {len}: every PE must pass the \
                         same size",
                        d.pe, d.value
                    ),
                ));
            }
        }
        let made = self.transport_result(transport.register_buffer(local as u64, len as u64));
        let offset = made.as_ref().map_or(0, |a| a.0);
        let dissent = self.dissent(made.is_ok(), offset);
        let addr = made?;
        let why = match dissent {
            Ok(None) => {
                self.registered().push(RegisteredBuffer {
                    offset: addr.0,
                    len: len as u64,
                });
                return Ok(SymSlice::new(self.id(), addr.0, len));
            }
            Err(e) => e,
            Ok(Some(d)) if !d.ok => self.registration_error(
                OP,
                format!(
                    "PE {} failed to register its buffer (its error is on its own stderr); \
                     this PE's registration is undone",
                    d.pe
                ),
            ),
            Ok(Some(d)) => self.registration_error(
                OP,
                format!(
                    "PE {} got symmetric address heap+{:#x} and this PE heap+{offset:#x}; the \
                     registration is undone",
                    d.pe, d.value
                ),
            ),
        };
        let _ = transport.unregister_buffer(addr);
        Err(why)
    }

    /// Ends the registration of the buffer whose symmetric view starts at heap offset
    /// `offset` and is `len` bytes long (`nvshmemx_buffer_unregister_symmetric`;
    /// collective, every PE names the same buffer). The PEs compare first: if any PE names
    /// no registered buffer, every PE fails and nothing is unregistered. Then each PE waits
    /// for its device work and releases the mapping; the application's own memory stays.
    pub fn unregister_symmetric(&self, offset: u64, len: usize) -> Result<()> {
        const OP: &str = "unregister_symmetric";
        self.check_live()?;
        let known = self
            .registered()
            .iter()
            .find(|b| b.offset == offset)
            .copied();
        let mine = match known {
            None => Err(self.registration_error(
                OP,
                format!(
                    "heap+{offset:#x} is not the start of a buffer registered with \
                     register_symmetric"
                ),
            )),
            Some(b) if b.len != len as u64 => Err(self.registration_error(
                OP,
                format!(
                    "the buffer at heap+{offset:#x} was registered with {} bytes, not {len}",
                    b.len
                ),
            )),
            Some(_) => Ok(()),
        };
        let dissent = self.dissent(mine.is_ok(), offset)?;
        mine?;
        if let Some(d) = dissent {
            return Err(self.registration_error(
                OP,
                format!(
                    "PE {} names another or no registered buffer (heap+{:#x}), so no PE \
                     unregisters",
                    d.pe, d.value
                ),
            ));
        }
        self.registered().retain(|b| b.offset != offset);
        self.transport_result(self.inner.transport.unregister_buffer(SymAddr(offset)))
    }

    /// Every registered buffer, as (heap offset, bytes), in registration order: what the
    /// device's table of them holds (niin-ffi publishes it for `nvshmem_ptr` on the device).
    pub fn registered_buffers(&self) -> Vec<(u64, u64)> {
        self.registered()
            .iter()
            .map(|b| (b.offset, b.len))
            .collect()
    }

    /// The registered buffer that holds `[offset, offset + len)`, if any.
    pub(crate) fn registered_covering(&self, offset: u64, len: u64) -> Option<RegisteredBuffer> {
        self.registered()
            .iter()
            .find(|b| b.covers(offset, len))
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{WorldConfig, run_in_process};

    #[test]
    fn covers_is_exact_at_both_ends() {
        let b = RegisteredBuffer {
            offset: 0x1000,
            len: 0x100,
        };
        assert!(b.covers(0x1000, 0x100));
        assert!(b.covers(0x10ff, 1));
        assert!(!b.covers(0x10ff, 2));
        assert!(!b.covers(0xfff, 1));
        assert!(!b.covers(0x1000, u64::MAX));
    }

    #[test]
    fn the_mock_refuses_on_every_pe_and_names_why() {
        let config = WorldConfig::default();
        let results = run_in_process(3, &config, |w| {
            let mut local = vec![0u8; 4096];
            let r = w.register_symmetric(local.as_mut_ptr(), local.len());
            // The world is still usable: the collective ended on every PE.
            w.barrier_all().unwrap();
            Ok(r.map(|s| s.offset()).map_err(|e| e.to_string()))
        })
        .unwrap();
        for (pe, r) in results.iter().enumerate() {
            let e = r.as_ref().unwrap_err();
            assert!(e.contains(&format!("PE {pe}")), "{e}");
            assert!(e.contains("mock transport"), "{e}");
            assert!(e.contains("cuMemCreate"), "{e}");
        }
    }

    #[test]
    fn one_pe_with_a_bad_size_fails_every_pe_without_a_hang() {
        let config = WorldConfig::default();
        let results = run_in_process(3, &config, |w| {
            let mut local = vec![0u8; 4096];
            let len = if w.my_pe() == 1 { 0 } else { local.len() };
            Ok(w.register_symmetric(local.as_mut_ptr(), len)
                .map(|s| s.offset())
                .map_err(|e| e.to_string()))
        })
        .unwrap();
        assert!(results[1].as_ref().unwrap_err().contains("the size is 0"));
        for pe in [0, 2] {
            // Their own arguments pass the mock's check; PE 1's failure stops them before
            // the transport's registration.
            let e = results[pe].as_ref().unwrap_err();
            assert!(e.contains("PE 1 cannot register its buffer"), "{e}");
        }
    }

    #[test]
    fn unregistering_what_was_never_registered_fails_on_every_pe() {
        let config = WorldConfig::default();
        let results = run_in_process(2, &config, |w| {
            let buf = w.malloc::<u8>(64).unwrap();
            let r = w.unregister_symmetric(buf.offset(), 64);
            w.barrier_all().unwrap();
            Ok(r.map_err(|e| e.to_string()))
        })
        .unwrap();
        for r in results {
            let e = r.unwrap_err();
            assert!(e.starts_with("PE "), "{e}");
            assert!(e.contains("not the start of a buffer registered"), "{e}");
        }
    }
}
