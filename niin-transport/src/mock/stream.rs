//! Streams: one worker thread per stream running an in-order queue of operations.
//!
//! An operation is validated by the enqueuing call and then sent to the worker as a
//! boxed closure; the call returns at once. The worker runs the closures in order. The
//! first one that fails (a wait that times out, a barrier whose peer is gone) is kept,
//! and the worker skips every later operation until the stream is synchronized:
//! [`Stream::synchronize`] waits until everything sent before it has run (or been
//! skipped) and hands back the kept failure, clearing it, so the stream is usable again.
//! `g` on a stream is a [`Msg::Query`]: it runs in order and answers the caller, or, on a
//! failed stream, answers with the kept failure.

use std::collections::HashMap;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;
use std::thread::{self, JoinHandle};

use crossbeam_channel::{Receiver, Sender};

use crate::error::{Result, TransportError};
use crate::ops::StreamHandle;

/// An operation for the worker.
pub(crate) type Job = Box<dyn FnOnce() -> Result<()> + Send>;

/// A query for the worker: runs with the stream's kept failure, if any.
pub(crate) type Query = Box<dyn FnOnce(Option<&TransportError>) + Send>;

/// What the worker receives.
enum Msg {
    /// Run (or skip, on a failed stream) an operation.
    Op(Job),
    /// Run a query.
    Query(Query),
    /// Reply with the kept failure, clearing it.
    Sync(Sender<Option<TransportError>>),
    /// Finish: reply with the kept failure, then exit.
    Stop(Sender<Option<TransportError>>),
}

fn worker(rx: Receiver<Msg>) {
    let mut failed: Option<TransportError> = None;
    for msg in rx {
        match msg {
            Msg::Op(job) => {
                if failed.is_none() {
                    failed = match panic::catch_unwind(AssertUnwindSafe(job)) {
                        Ok(Ok(())) => None,
                        Ok(Err(e)) => Some(e),
                        Err(_) => Some(TransportError::Os {
                            what: "running a stream operation".into(),
                            cause: "it panicked".into(),
                        }),
                    };
                }
            }
            Msg::Query(query) => {
                // A panicking query drops its reply channel; the caller reports that.
                let _ = panic::catch_unwind(AssertUnwindSafe(|| query(failed.as_ref())));
            }
            Msg::Sync(reply) => {
                let _ = reply.send(failed.take());
            }
            Msg::Stop(reply) => {
                let _ = reply.send(failed.take());
                return;
            }
        }
    }
}

/// One stream: the sending end of its queue and its worker.
struct Stream {
    tx: Sender<Msg>,
    worker: JoinHandle<()>,
}

impl Stream {
    fn spawn(pe: usize, handle: StreamHandle) -> Result<Stream> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let worker = thread::Builder::new()
            .name(format!("niin-mock-pe{pe}-stream{}", handle.0))
            .spawn(move || worker(rx))
            .map_err(|e| TransportError::Os {
                what: format!(
                    "starting the worker thread of PE {pe}'s stream {}",
                    handle.0
                ),
                cause: e.to_string(),
            })?;
        Ok(Stream { tx, worker })
    }

    /// Asks for the kept failure with `make(reply)` and waits for the answer.
    fn ask(
        tx: &Sender<Msg>,
        handle: StreamHandle,
        make: fn(Sender<Option<TransportError>>) -> Msg,
    ) -> Result<Option<TransportError>> {
        let (reply, answer) = crossbeam_channel::bounded(1);
        tx.send(make(reply))
            .map_err(|_| TransportError::UnknownStream(handle))?;
        answer
            .recv()
            .map_err(|_| TransportError::UnknownStream(handle))
    }
}

/// The failure kept by a stream, as the contract reports it.
pub(crate) fn failed(stream: StreamHandle, cause: &TransportError) -> TransportError {
    TransportError::StreamFailed {
        stream,
        cause: cause.to_string(),
    }
}

struct Table {
    streams: HashMap<u64, Stream>,
    next: u64,
    closed: bool,
}

/// A PE's streams. The default stream (handle 0) starts on first use.
pub(crate) struct Streams {
    pe: usize,
    table: Mutex<Table>,
}

impl Streams {
    /// No streams yet, for PE `pe` (thread names).
    pub(crate) fn new(pe: usize) -> Streams {
        Streams {
            pe,
            table: Mutex::new(Table {
                streams: HashMap::new(),
                next: 1,
                closed: false,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        // A panic while holding the lock leaves the table consistent (every update is one
        // insert or remove), so a poisoned lock is still usable.
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The sender of `handle`'s queue (starting the default stream if needed).
    fn sender(&self, handle: StreamHandle) -> Result<Sender<Msg>> {
        let mut t = self.lock();
        if t.closed {
            return Err(TransportError::Finalized { pe: self.pe });
        }
        if handle == StreamHandle::DEFAULT && !t.streams.contains_key(&0) {
            let s = Stream::spawn(self.pe, handle)?;
            t.streams.insert(0, s);
        }
        t.streams
            .get(&handle.0)
            .map(|s| s.tx.clone())
            .ok_or(TransportError::UnknownStream(handle))
    }

    /// Starts a new stream.
    pub(crate) fn create(&self) -> Result<StreamHandle> {
        let mut t = self.lock();
        if t.closed {
            return Err(TransportError::Finalized { pe: self.pe });
        }
        let handle = StreamHandle(t.next);
        let s = Stream::spawn(self.pe, handle)?;
        t.next += 1;
        t.streams.insert(handle.0, s);
        Ok(handle)
    }

    /// Enqueues an operation on `handle`.
    pub(crate) fn enqueue(&self, handle: StreamHandle, job: Job) -> Result<()> {
        self.sender(handle)?
            .send(Msg::Op(job))
            .map_err(|_| TransportError::UnknownStream(handle))
    }

    /// Enqueues a query on `handle`.
    pub(crate) fn query(&self, handle: StreamHandle, query: Query) -> Result<()> {
        self.sender(handle)?
            .send(Msg::Query(query))
            .map_err(|_| TransportError::UnknownStream(handle))
    }

    /// Waits for everything enqueued on `handle`; returns (and clears) its failure.
    pub(crate) fn synchronize(&self, handle: StreamHandle) -> Result<()> {
        let tx = self.sender(handle)?;
        match Stream::ask(&tx, handle, Msg::Sync)? {
            None => Ok(()),
            Some(e) => Err(failed(handle, &e)),
        }
    }

    /// Drains and joins `handle`'s worker, then forgets the stream. Its kept failure,
    /// if any, is returned as `StreamFailed`; the stream is destroyed either way.
    pub(crate) fn destroy(&self, handle: StreamHandle) -> Result<()> {
        if handle == StreamHandle::DEFAULT {
            return Err(TransportError::BadArgument {
                op: "stream_destroy",
                what: "the default stream (handle 0) cannot be destroyed".into(),
            });
        }
        let stream = {
            let mut t = self.lock();
            if t.closed {
                return Err(TransportError::Finalized { pe: self.pe });
            }
            t.streams
                .remove(&handle.0)
                .ok_or(TransportError::UnknownStream(handle))?
        };
        stop(handle, stream)
    }

    /// Drains and joins every worker and refuses new streams (finalize). Returns the
    /// first kept failure among them.
    pub(crate) fn close(&self) -> Result<()> {
        let streams: Vec<(u64, Stream)> = {
            let mut t = self.lock();
            t.closed = true;
            t.streams.drain().collect()
        };
        let mut first = Ok(());
        let mut sorted = streams;
        sorted.sort_by_key(|(h, _)| *h);
        for (h, s) in sorted {
            let r = stop(StreamHandle(h), s);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

fn stop(handle: StreamHandle, stream: Stream) -> Result<()> {
    let kept = Stream::ask(&stream.tx, handle, Msg::Stop);
    drop(stream.tx);
    let joined = stream.worker.join();
    match (kept, joined) {
        (Ok(None), Ok(())) => Ok(()),
        (Ok(Some(e)), _) => Err(failed(handle, &e)),
        (Err(e), _) => Err(e),
        (Ok(None), Err(_)) => Err(TransportError::Os {
            what: format!("joining the worker of stream {}", handle.0),
            cause: "it panicked".into(),
        }),
    }
}
