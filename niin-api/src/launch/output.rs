//! Forwarding the output of the PEs: one thread polls every PE's stdout and stderr pipe
//! and writes whole lines, prefixed with `[pe N] `, to the launcher's stdout or stderr.

use std::fs::File;
use std::io::{self, Read as _, Write};
use std::os::fd::AsRawFd as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};

use super::OutputMode;

/// Lines longer than this are forwarded in pieces of this size.
pub(super) const MAX_LINE: usize = 64 * 1024;

/// How long one `poll` waits before the thread looks at its stop flag again, in ms.
const POLL_MS: libc::c_int = 50;

/// Which output stream of a PE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StreamKind {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Splits a byte stream into lines, keeping an incomplete last line for later.
#[derive(Debug, Default)]
pub(super) struct LineBuffer {
    pending: Vec<u8>,
}

impl LineBuffer {
    /// Feeds `data`; calls `emit` with every completed line (including its `\n`), and with
    /// pieces of [`MAX_LINE`] bytes of a line that grows longer than that.
    pub(super) fn push(&mut self, mut data: &[u8], mut emit: impl FnMut(&[u8])) {
        while !data.is_empty() {
            let room = MAX_LINE.saturating_sub(self.pending.len());
            let window = &data[..data.len().min(room + 1)];
            let (piece, rest) = match window.iter().position(|&b| b == b'\n') {
                Some(end) => data.split_at(end + 1),
                None if data.len() > room => data.split_at(room),
                None => {
                    self.pending.extend_from_slice(data);
                    return;
                }
            };
            if self.pending.is_empty() {
                emit(piece);
            } else {
                self.pending.extend_from_slice(piece);
                emit(&self.pending);
                self.pending.clear();
            }
            data = rest;
        }
    }

    /// Ends the stream: emits the incomplete last line, if any (without `\n`).
    pub(super) fn finish(&mut self, mut emit: impl FnMut(&[u8])) {
        if !self.pending.is_empty() {
            emit(&self.pending);
            self.pending.clear();
        }
    }
}

/// Writes `prefix` + `line` to `out` in one `write_all`, adding a `\n` when a prefix is
/// used and the line has none (so that the next prefixed line starts on its own line).
pub(super) fn write_line(
    out: &mut impl Write,
    prefix: &[u8],
    line: &[u8],
    scratch: &mut Vec<u8>,
) -> io::Result<()> {
    scratch.clear();
    scratch.extend_from_slice(prefix);
    scratch.extend_from_slice(line);
    if !prefix.is_empty() && !line.ends_with(b"\n") {
        scratch.push(b'\n');
    }
    out.write_all(scratch)?;
    out.flush()
}

/// One pipe being read.
struct Stream {
    pe: usize,
    kind: StreamKind,
    /// `None` once at end of file.
    file: Option<File>,
    lines: LineBuffer,
}

/// Where the data goes.
///
/// When niinrun's stdout (stderr) is a closed pipe, the PEs' stdout (stderr) pipes are
/// closed as well, so that the PEs get SIGPIPE as if they wrote to it directly; other
/// write errors are ignored and the output is still drained.
struct Sink {
    mode: OutputMode,
    /// `[pe N] ` prefixes, by PE; empty in [`OutputMode::Plain`].
    prefixes: Vec<Vec<u8>>,
    /// Raw output by PE, in [`OutputMode::Capture`].
    captured: Vec<(Vec<u8>, Vec<u8>)>,
    scratch: Vec<u8>,
    /// Whether niinrun's stdout / stderr is a broken pipe.
    broken: [bool; 2],
}

impl Sink {
    fn new(mode: OutputMode, n_pes: usize) -> Self {
        let prefixes = match mode {
            OutputMode::Prefixed => (0..n_pes)
                .map(|pe| format!("[pe {pe}] ").into_bytes())
                .collect(),
            OutputMode::Plain | OutputMode::Capture => vec![Vec::new(); n_pes],
        };
        let captured = match mode {
            OutputMode::Capture => vec![(Vec::new(), Vec::new()); n_pes],
            OutputMode::Prefixed | OutputMode::Plain => Vec::new(),
        };
        Self {
            mode,
            prefixes,
            captured,
            scratch: Vec::new(),
            broken: [false; 2],
        }
    }

    /// Whether niinrun's stream `kind` is a broken pipe.
    fn is_broken(&self, kind: StreamKind) -> bool {
        self.broken[kind as usize]
    }

    /// Handles `data` read from `stream` (`None`: end of file).
    fn consume(&mut self, stream: &mut Stream, data: Option<&[u8]>) {
        if self.mode == OutputMode::Capture {
            let (out, err) = &mut self.captured[stream.pe];
            let buf = if stream.kind == StreamKind::Stdout {
                out
            } else {
                err
            };
            buf.extend_from_slice(data.unwrap_or_default());
            return;
        }
        let prefix = &self.prefixes[stream.pe];
        let scratch = &mut self.scratch;
        let kind = stream.kind;
        let broken = &mut self.broken[kind as usize];
        let emit = |line: &[u8]| {
            if *broken {
                return;
            }
            let written = match kind {
                StreamKind::Stdout => write_line(&mut io::stdout().lock(), prefix, line, scratch),
                StreamKind::Stderr => write_line(&mut io::stderr().lock(), prefix, line, scratch),
            };
            if written.is_err_and(|e| e.kind() == io::ErrorKind::BrokenPipe) {
                *broken = true;
            }
        };
        match data {
            Some(data) => stream.lines.push(data, emit),
            None => stream.lines.finish(emit),
        }
    }
}

/// The output thread of a job.
pub(super) struct Forwarder {
    thread: JoinHandle<Vec<(Vec<u8>, Vec<u8>)>>,
    stop: Arc<AtomicBool>,
}

impl Forwarder {
    /// Starts the thread reading `pipes` (PE, stream, read end) of a job of `n_pes` PEs.
    pub(super) fn start(
        pipes: Vec<(usize, StreamKind, File)>,
        mode: OutputMode,
        n_pes: usize,
    ) -> io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let streams = pipes
            .into_iter()
            .map(|(pe, kind, file)| Stream {
                pe,
                kind,
                file: Some(file),
                lines: LineBuffer::default(),
            })
            .collect();
        let sink = Sink::new(mode, n_pes);
        let flag = Arc::clone(&stop);
        let thread = thread::Builder::new()
            .name("niinrun-output".to_owned())
            .spawn(move || forward(streams, sink, &flag))?;
        Ok(Self { thread, stop })
    }

    /// Whether every pipe reached end of file (and everything was written).
    pub(super) fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Reads what the pipes still hold without waiting for end of file (some process
    /// outside the PEs' process groups may keep a pipe open), flushes incomplete lines,
    /// and returns the captured output by PE (empty unless [`OutputMode::Capture`]).
    pub(super) fn finish(self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap_or_default()
    }
}

/// The body of the output thread.
fn forward(mut streams: Vec<Stream>, mut sink: Sink, stop: &AtomicBool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut buf = vec![0_u8; 64 * 1024];
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(streams.len());
    let mut which: Vec<usize> = Vec::with_capacity(streams.len());
    loop {
        let draining = stop.load(Ordering::SeqCst);
        fds.clear();
        which.clear();
        for (i, stream) in streams.iter().enumerate() {
            if let Some(file) = &stream.file {
                fds.push(libc::pollfd {
                    fd: file.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                });
                which.push(i);
            }
        }
        if fds.is_empty() {
            break;
        }
        let timeout = if draining { 0 } else { POLL_MS };
        // SAFETY: `fds` holds `fds.len()` initialised `pollfd`s, valid and exclusively
        // borrowed for the duration of the call; their descriptors are open (owned by
        // `streams`, which outlives the call).
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if ready < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        if ready == 0 {
            if draining {
                break;
            }
            continue;
        }
        for (pfd, &i) in fds.iter().zip(&which) {
            if pfd.revents == 0 {
                continue;
            }
            let stream = &mut streams[i];
            let Some(file) = stream.file.as_mut() else {
                continue;
            };
            match file.read(&mut buf) {
                Ok(0) => {
                    stream.file = None;
                    sink.consume(stream, None);
                }
                Ok(n) => {
                    sink.consume(stream, Some(&buf[..n]));
                    if sink.is_broken(stream.kind) {
                        let kind = stream.kind;
                        for other in streams.iter_mut().filter(|s| s.kind == kind) {
                            other.file = None;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    stream.file = None;
                    sink.consume(stream, None);
                }
            }
        }
    }
    for stream in &mut streams {
        if stream.file.take().is_some() {
            sink.consume(stream, None);
        }
    }
    sink.captured
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(chunks: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut buffer = LineBuffer::default();
        let mut out = Vec::new();
        for chunk in chunks {
            buffer.push(chunk, |l| out.push(l.to_vec()));
        }
        buffer.finish(|l| out.push(l.to_vec()));
        out
    }

    #[test]
    fn splits_lines_across_chunks() {
        let got = lines(&[b"a\nb", b"c\n", b"\n", b"d\ne\nf"]);
        assert_eq!(got, [&b"a\n"[..], b"bc\n", b"\n", b"d\n", b"e\n", b"f"]);
        assert_eq!(lines(&[b"x\n"]), [b"x\n"]);
        assert!(lines(&[b"", b""]).is_empty());
    }

    #[test]
    fn partial_final_line_is_emitted_at_finish() {
        let mut buffer = LineBuffer::default();
        let mut out: Vec<Vec<u8>> = Vec::new();
        buffer.push(b"no newline", |l| out.push(l.to_vec()));
        assert!(out.is_empty(), "an incomplete line waits for more data");
        buffer.finish(|l| out.push(l.to_vec()));
        assert_eq!(out, [b"no newline"]);
        buffer.finish(|l| out.push(l.to_vec()));
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn non_utf8_bytes_pass_through() {
        let got = lines(&[b"\xff\xfe\n\x80", b"\xc3\n\xc3", b"\xa9"]);
        assert_eq!(got, [&b"\xff\xfe\n"[..], b"\x80\xc3\n", b"\xc3\xa9"]);
    }

    #[test]
    fn long_lines_are_split() {
        let long = vec![b'x'; MAX_LINE * 2 + 10];
        let mut data = long.clone();
        data.push(b'\n');
        let got = lines(&[&data[..100], &data[100..]]);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].len(), MAX_LINE);
        assert_eq!(got[1].len(), MAX_LINE);
        assert_eq!(got[2].len(), 11);
        assert_eq!(got.concat(), data);

        // A line of exactly MAX_LINE bytes plus its newline stays whole.
        let mut exact = vec![b'y'; MAX_LINE];
        exact.push(b'\n');
        assert_eq!(lines(&[&exact[..MAX_LINE], b"\n"]), [exact.clone()]);
        assert_eq!(lines(&[&exact]), [exact]);
    }

    #[test]
    fn prefixed_lines() {
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        write_line(&mut out, b"[pe 3] ", b"hello\n", &mut scratch).unwrap();
        write_line(&mut out, b"[pe 3] ", b"partial", &mut scratch).unwrap();
        write_line(&mut out, b"", b"raw", &mut scratch).unwrap();
        write_line(&mut out, b"", b"\xff\n", &mut scratch).unwrap();
        assert_eq!(out, b"[pe 3] hello\n[pe 3] partial\nraw\xff\n");
    }

    #[test]
    fn forwarder_captures_by_pe_until_end_of_file() {
        let mut pipes = Vec::new();
        let mut writers = Vec::new();
        for pe in 0..2 {
            for kind in [StreamKind::Stdout, StreamKind::Stderr] {
                let (read, write) = std::os::unix::net::UnixStream::pair().unwrap();
                pipes.push((pe, kind, File::from(std::os::fd::OwnedFd::from(read))));
                writers.push((pe, kind, write));
            }
        }
        let forwarder = Forwarder::start(pipes, OutputMode::Capture, 2).unwrap();
        for (pe, kind, mut w) in writers {
            write!(w, "pe{pe} {kind:?}\npartial").unwrap();
        }
        while !forwarder.is_finished() {
            thread::sleep(std::time::Duration::from_millis(1));
        }
        let captured = forwarder.finish();
        assert_eq!(captured[1].0, b"pe1 Stdout\npartial");
        assert_eq!(captured[0].1, b"pe0 Stderr\npartial");
    }
}
