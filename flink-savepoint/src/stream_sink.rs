//! Where one subtask's keyed stream is written: in memory while it is at most the inline
//! threshold, then (from the first byte beyond it) a temporary file in the savepoint
//! directory, synced and renamed to its final name when the stream is complete.
//!
//! The stream's length is not known before it is written (Snappy-framed key groups), so the
//! choice between an inline handle and a relative file is made by its size as it grows, as
//! Flink's `FsCheckpointStateOutputStream` does with its in-memory buffer. Memory: at most
//! the inline threshold, then one write buffer.
//!
//! A file stream is made durable while it is written: every [`SYNC_EVERY`] bytes a
//! background thread is asked to `fdatasync` the file (a request is dropped while the
//! previous one runs), so the disk writes back the stream during the copy instead of all of
//! it in the final sync, which then has only the tail left. The final sync (and its error)
//! is what counts: the thread's errors are returned too, since a write-back error is
//! reported only once per open file.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, SyncSender};
use std::thread::{self, JoinHandle};

use crate::error::Result;
use crate::input::io_err;

/// Write buffer of state files.
const WRITE_BUFFER: usize = 1 << 20;
/// Bytes written between two background write-back requests.
pub(crate) const SYNC_EVERY: u64 = 32 << 20;

/// The background `fdatasync` thread of one file.
struct Syncer {
    requests: SyncSender<()>,
    thread: JoinHandle<io::Result<()>>,
    /// Position at the last request.
    requested_at: u64,
}

impl Syncer {
    fn start(file: &File, position: u64) -> io::Result<Self> {
        let clone = file.try_clone()?;
        let (requests, rx) = mpsc::sync_channel::<()>(1);
        let thread = thread::Builder::new()
            .name("savepoint-sync".into())
            .spawn(move || {
                while rx.recv().is_ok() {
                    clone.sync_data()?;
                }
                Ok(())
            })?;
        Ok(Syncer {
            requests,
            thread,
            requested_at: position,
        })
    }

    /// Asks for a write-back when [`SYNC_EVERY`] bytes were written since the last request.
    fn poke(&mut self, position: u64) {
        if position - self.requested_at >= SYNC_EVERY {
            // Full (a sync is running) or closed (the thread failed; `stop` reports it).
            let _ = self.requests.try_send(());
            self.requested_at = position;
        }
    }

    /// Stops the thread and returns its first error.
    fn stop(self) -> io::Result<()> {
        drop(self.requests);
        self.thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("write-back thread panicked")))
    }
}

/// A keyed stream being written; counts its bytes.
pub(crate) struct StreamSink {
    threshold: u64,
    position: u64,
    memory: Vec<u8>,
    temp: PathBuf,
    file: Option<BufWriter<File>>,
    syncer: Option<Syncer>,
}

/// A completed stream.
pub(crate) enum Finished {
    /// At most the threshold: these bytes go inline into `_metadata`.
    Inline(Vec<u8>),
    /// Written to the target file, `size` bytes.
    File {
        /// The stream length.
        size: u64,
    },
}

impl StreamSink {
    /// A sink that spills to `temp` once more than `threshold` bytes are written.
    pub(crate) fn new(threshold: u64, temp: PathBuf) -> Self {
        StreamSink {
            threshold,
            position: 0,
            memory: Vec::new(),
            temp,
            file: None,
            syncer: None,
        }
    }

    /// Bytes written so far (the position of the next byte in the stream).
    pub(crate) fn position(&self) -> u64 {
        self.position
    }

    /// The temporary file's path (for error messages).
    pub(crate) fn temp_path(&self) -> &Path {
        &self.temp
    }

    fn spill(&mut self) -> io::Result<&mut BufWriter<File>> {
        if self.file.is_none() {
            let file = File::create(&self.temp)?;
            let syncer = Syncer::start(&file, self.position);
            // Stored first, so that `drop` removes the file whatever fails next.
            let w = self
                .file
                .insert(BufWriter::with_capacity(WRITE_BUFFER, file));
            self.syncer = Some(syncer?);
            w.write_all(&self.memory)?;
            self.memory = Vec::new();
        }
        self.file
            .as_mut()
            .ok_or_else(|| io::Error::other("stream file missing"))
    }

    /// Completes the stream: an inline stream is returned; a file stream is flushed, synced
    /// and renamed to `target`.
    ///
    /// # Errors
    /// [`crate::Error::Io`].
    pub(crate) fn finish(mut self, target: &Path) -> Result<Finished> {
        let Some(w) = self.file.take() else {
            return Ok(Finished::Inline(std::mem::take(&mut self.memory)));
        };
        let temp = &self.temp;
        let stopped = self.syncer.take().map_or(Ok(()), Syncer::stop);
        let result = w
            .into_inner()
            .map_err(|e| io_err(temp, e.into_error()))
            .and_then(|file| {
                stopped.map_err(|e| io_err(temp, e))?;
                file.sync_all().map_err(|e| io_err(temp, e))
            })
            .and_then(|()| fs::rename(temp, target).map_err(|e| io_err(target, e)));
        if result.is_err() {
            // Best effort, as in `drop`.
            let _ = fs::remove_file(temp);
        }
        result.map(|()| Finished::File {
            size: self.position,
        })
    }
}

impl Write for StreamSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let end = self.position + buf.len() as u64;
        if self.file.is_none() && end <= self.threshold {
            self.memory.extend_from_slice(buf);
        } else {
            self.spill()?.write_all(buf)?;
            if let Some(syncer) = &mut self.syncer {
                syncer.poke(end);
            }
        }
        self.position = end;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for StreamSink {
    /// A stream that was not finished leaves no temporary file (best effort: it is garbage
    /// either way, and never named like a state file).
    fn drop(&mut self) {
        if let Some(syncer) = self.syncer.take() {
            let _ = syncer.stop();
        }
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.temp);
        }
    }
}
