//! How ranks talk: a small message-passing interface the engines are written
//! against, with two implementations — MPI (feature `mpi`, the real one, launched
//! by `mpirun`) and threads in one process (tests of the protocol without MPI).
//!
//! # Invariants the engines rely on
//! - Messages from one rank to another with the same tag arrive in the order they
//!   were sent (MPI's non-overtaking rule).
//! - `send` never waits for the receiver to post a receive: it hands the buffer to
//!   the transport and returns once fewer than [`MAX_IN_FLIGHT`] of the calling
//!   thread's sends are incomplete. The storage engines answer with `reply`,
//!   which never waits (the protocol bounds the replies in flight: one chunk
//!   request per computation engine and storage engine, one vertex chunk, one
//!   offer). So a storage engine never blocks behind its own rank's computation
//!   engine sending results to a rank that is itself waiting for one of its
//!   replies, nor behind a computation engine that is blocked sending it puts —
//!   either would deadlock once messages are large enough for MPI's rendezvous
//!   protocol.
//! - Receives poll ([`Transport::try_recv`]) with a short sleep between polls
//!   ([`recv`]): both threads of a rank wait without spinning a core, which
//!   matters when ranks share a machine.
//! - Collectives (`all_gather`) are built from point-to-point messages with a tag
//!   of their own and are called by the computation engines only, in the same
//!   order on every rank.

use crate::error::{DistError, Result};
use std::time::{Duration, Instant};

/// A message tag.
pub type Tag = i32;

/// Sends a rank may have incomplete before `send` waits for the oldest.
pub const MAX_IN_FLIGHT: usize = 8;

/// Point-to-point messages between ranks.
pub trait Transport: Send + Sync {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// Hands `data` to the transport for rank `to` (see the module docs).
    fn send(&self, to: usize, tag: Tag, data: Vec<u8>) -> Result<()>;
    /// Like `send`, but never waits for earlier sends to complete (the storage
    /// engines' replies; see the module docs).
    fn reply(&self, to: usize, tag: Tag, data: Vec<u8>) -> Result<()> {
        self.send(to, tag, data)
    }
    /// A message with `tag` from `from` (any rank when `None`), if one arrived.
    fn try_recv(&self, from: Option<usize>, tag: Tag) -> Result<Option<(usize, Vec<u8>)>>;
    /// Stops every rank (a rank that cannot go on must not leave the others waiting).
    fn abort(&self, code: i32) -> !;
    /// Bytes this rank sent and received.
    fn traffic(&self) -> (u64, u64);
}

/// Waits for a message with `tag` from `from`; the time spent waiting is added
/// to `idle`. A rank that failed ([`abort_all`]) makes this fail with its message.
pub fn recv(
    t: &dyn Transport,
    from: Option<usize>,
    tag: Tag,
    idle: &mut Duration,
) -> Result<(usize, Vec<u8>)> {
    wait(t, from, tag, idle, true, &mut || false)
}

/// [`recv`] for the storage engines, which leave failures to their
/// computation engine; while no request is there, `work` runs (read-ahead:
/// it says whether it did anything — the time it takes is not idle).
pub(crate) fn recv_request(
    t: &dyn Transport,
    idle: &mut Duration,
    work: &mut dyn FnMut() -> bool,
) -> Result<(usize, Vec<u8>)> {
    loop {
        if let Some(m) = t.try_recv(None, crate::TAG_REQ)? {
            return Ok(m);
        }
        if !work() {
            return wait(t, None, crate::TAG_REQ, idle, false, work);
        }
    }
}

/// Tells every other rank that this one failed, and why.
pub fn abort_all(t: &dyn Transport, message: &str) {
    for r in 0..t.size() {
        if r != t.rank() {
            let _ = t.send(r, crate::TAG_ABORT, message.as_bytes().to_vec());
        }
    }
}

fn wait(
    t: &dyn Transport,
    from: Option<usize>,
    tag: Tag,
    idle: &mut Duration,
    watch: bool,
    work: &mut dyn FnMut() -> bool,
) -> Result<(usize, Vec<u8>)> {
    if let Some(m) = t.try_recv(from, tag)? {
        return Ok(m);
    }
    let mut start = Instant::now();
    let mut polls = 0u32;
    loop {
        if let Some(m) = t.try_recv(from, tag)? {
            *idle += start.elapsed();
            return Ok(m);
        }
        // Work found while waiting is done, and not counted as idle.
        let t0 = Instant::now();
        if work() {
            *idle += t0 - start;
            start = Instant::now();
            polls = 0;
            continue;
        }
        if watch {
            if let Some((r, m)) = t.try_recv(None, crate::TAG_ABORT)? {
                return Err(DistError::Stopped {
                    rank: r,
                    message: String::from_utf8_lossy(&m).into_owned(),
                });
            }
        }
        polls += 1;
        if polls < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(30));
        }
        if outcore_io::cancel::requested() {
            return Err(DistError::Cancelled);
        }
    }
}

/// Every rank's `data`, in rank order (called by every computation engine).
pub fn all_gather(t: &dyn Transport, data: &[u8], idle: &mut Duration) -> Result<Vec<Vec<u8>>> {
    let n = t.size();
    for to in 0..n {
        t.send(to, crate::TAG_GATHER, data.to_vec())?;
    }
    let mut out = vec![Vec::new(); n];
    for (from, slot) in out.iter_mut().enumerate() {
        *slot = recv(t, Some(from), crate::TAG_GATHER, idle)?.1;
    }
    Ok(out)
}

/// Waits until every computation engine reached it.
pub fn barrier(t: &dyn Transport, idle: &mut Duration) -> Result<()> {
    all_gather(t, &[], idle).map(|_| ())
}

/// The transport of one rank among threads of one process (tests).
pub mod local {
    use super::*;
    use std::collections::VecDeque;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    type Queue = Mutex<VecDeque<(usize, Tag, Vec<u8>)>>;

    /// One rank's end of an in-process network.
    pub struct Local {
        rank: usize,
        inboxes: Arc<Vec<Queue>>,
        sent: AtomicU64,
        received: AtomicU64,
    }

    /// `n` connected ranks.
    pub fn network(n: usize) -> Vec<Local> {
        let inboxes: Arc<Vec<Queue>> = Arc::new((0..n).map(|_| Mutex::default()).collect());
        (0..n)
            .map(|rank| Local {
                rank,
                inboxes: inboxes.clone(),
                sent: AtomicU64::new(0),
                received: AtomicU64::new(0),
            })
            .collect()
    }

    impl Transport for Local {
        fn rank(&self) -> usize {
            self.rank
        }
        fn size(&self) -> usize {
            self.inboxes.len()
        }
        fn send(&self, to: usize, tag: Tag, data: Vec<u8>) -> Result<()> {
            self.sent.fetch_add(data.len() as u64, Ordering::Relaxed);
            self.inboxes[to]
                .lock()
                .expect("inbox")
                .push_back((self.rank, tag, data));
            Ok(())
        }
        fn try_recv(&self, from: Option<usize>, tag: Tag) -> Result<Option<(usize, Vec<u8>)>> {
            let mut q = self.inboxes[self.rank].lock().expect("inbox");
            let hit = q
                .iter()
                .position(|(f, t, _)| *t == tag && from.is_none_or(|x| x == *f));
            Ok(hit.map(|i| {
                let (f, _, d) = q.remove(i).expect("present");
                self.received.fetch_add(d.len() as u64, Ordering::Relaxed);
                (f, d)
            }))
        }
        fn abort(&self, code: i32) -> ! {
            panic!("rank {} aborted with code {code}", self.rank)
        }
        fn traffic(&self) -> (u64, u64) {
            (
                self.sent.load(Ordering::Relaxed),
                self.received.load(Ordering::Relaxed),
            )
        }
    }
}

/// The MPI transport: one duplicate of `MPI_COMM_WORLD` shared by the rank's
/// computation and storage threads (`MPI_THREAD_MULTIPLE`).
#[cfg(feature = "mpi")]
pub mod mpi_transport {
    use super::*;
    use mpi::point_to_point::MatchedReceiveVec;
    use mpi::raw::{AsRaw, FromRaw};
    use mpi::request::{Request, StaticScope};
    use mpi::topology::SimpleCommunicator;
    use mpi::traits::*;
    use std::mem::ManuallyDrop;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Mutex;

    /// A send in flight and the buffer it reads.
    struct Pending {
        req: Request<'static, [u8], StaticScope>,
        buf: *mut [u8],
        /// The thread that sent it: each thread waits only for its own sends.
        owner: std::thread::ThreadId,
    }
    // SAFETY: with MPI_THREAD_MULTIPLE any thread may test a request; the buffer is
    // owned by this entry alone (leaked from a Box in `send`, reclaimed only after
    // the request completed), and entries are only touched under the mutex.
    unsafe impl Send for Pending {}

    /// A communicator handle that may move between threads.
    struct Comm(ManuallyDrop<SimpleCommunicator>);
    // SAFETY: MPI was initialised with MPI_THREAD_MULTIPLE (checked in `Mpi::init`),
    // so the communicator may be used from any thread at once; the handle is freed
    // by no one but the process's end (ManuallyDrop), so no thread can use a freed one.
    unsafe impl Send for Comm {}
    // SAFETY: as above; every MPI call on it is thread-safe under MPI_THREAD_MULTIPLE.
    unsafe impl Sync for Comm {}

    /// MPI for one process: the universe (finalised when dropped) and the transport.
    pub struct Mpi {
        _universe: mpi::environment::Universe,
        comm: Comm,
        rank: usize,
        size: usize,
        pending: Mutex<Vec<Pending>>,
        sent: AtomicU64,
        received: AtomicU64,
    }

    impl Mpi {
        /// Initialises MPI with full thread support.
        pub fn init() -> Result<Mpi> {
            let (universe, level) = mpi::initialize_with_threading(mpi::Threading::Multiple)
                .ok_or_else(|| DistError::Protocol("MPI was already initialised".into()))?;
            if level != mpi::Threading::Multiple {
                return Err(DistError::Protocol(format!(
                    "this MPI library gives thread level {level:?}; outcore dist needs MPI_THREAD_MULTIPLE"
                )));
            }
            let world = universe.world();
            let dup = world.duplicate();
            let raw = dup.as_raw();
            std::mem::forget(dup);
            // SAFETY: `raw` is a live user communicator (just duplicated) whose
            // owning wrapper was forgotten, so this is its only wrapper.
            let comm = Comm(ManuallyDrop::new(unsafe {
                SimpleCommunicator::from_raw(raw)
            }));
            Ok(Mpi {
                rank: world.rank() as usize,
                size: world.size() as usize,
                _universe: universe,
                comm,
                pending: Mutex::new(Vec::new()),
                sent: AtomicU64::new(0),
                received: AtomicU64::new(0),
            })
        }

        /// Tests the sends in flight, dropping the finished ones; returns how many remain.
        fn progress(&self, pending: &mut Vec<Pending>) -> usize {
            for p in std::mem::take(pending) {
                match p.req.test() {
                    Ok(_) => {
                        // SAFETY: the request completed, so MPI no longer reads the
                        // buffer; it was leaked from a Box in `send` and is freed once.
                        drop(unsafe { Box::from_raw(p.buf) });
                    }
                    Err(req) => pending.push(Pending {
                        req,
                        buf: p.buf,
                        owner: p.owner,
                    }),
                }
            }
            pending.len()
        }

        /// Hands `data` to MPI; with `wait`, returns once fewer than
        /// [`MAX_IN_FLIGHT`] of the calling thread's sends are incomplete.
        fn post(&self, to: usize, tag: Tag, data: Vec<u8>, wait: bool) -> Result<()> {
            if data.len() > i32::MAX as usize {
                return Err(DistError::Protocol(format!(
                    "a message of {} bytes is larger than MPI can send at once",
                    data.len()
                )));
            }
            self.sent.fetch_add(data.len() as u64, Ordering::Relaxed);
            let buf: &'static mut [u8] = Box::leak(data.into_boxed_slice());
            let ptr: *mut [u8] = buf;
            // SAFETY: `ptr` came from the leak just above and is not freed until the
            // request completes (`progress`), so the 'static borrow MPI reads through
            // stays valid; nothing writes to it meanwhile.
            let shared: &'static [u8] = unsafe { &*ptr };
            let req = self
                .comm
                .0
                .process_at_rank(to as i32)
                .immediate_send_with_tag(StaticScope, shared, tag);
            let mut pending = self.pending.lock().expect("pending");
            pending.push(Pending {
                req,
                buf: ptr,
                owner: std::thread::current().id(),
            });
            // Only this thread's own sends count: the storage engine's replies
            // must never wait behind the computation engine's sends to a rank
            // that is itself waiting for such a reply.
            while {
                self.progress(&mut pending);
                wait && Self::mine(&pending) >= MAX_IN_FLIGHT
            } {
                drop(pending);
                std::thread::sleep(Duration::from_micros(30));
                pending = self.pending.lock().expect("pending");
            }
            Ok(())
        }

        /// Incomplete sends of the calling thread.
        fn mine(pending: &[Pending]) -> usize {
            let me = std::thread::current().id();
            pending.iter().filter(|p| p.owner == me).count()
        }

        /// Waits for every send of this rank to complete.
        pub fn flush(&self) {
            loop {
                let left = self.progress(&mut self.pending.lock().expect("pending"));
                if left == 0 {
                    return;
                }
                std::thread::sleep(Duration::from_micros(30));
            }
        }
    }

    impl Drop for Mpi {
        fn drop(&mut self) {
            self.flush();
        }
    }

    impl Transport for Mpi {
        fn rank(&self) -> usize {
            self.rank
        }
        fn size(&self) -> usize {
            self.size
        }
        fn send(&self, to: usize, tag: Tag, data: Vec<u8>) -> Result<()> {
            self.post(to, tag, data, true)
        }
        fn reply(&self, to: usize, tag: Tag, data: Vec<u8>) -> Result<()> {
            self.post(to, tag, data, false)
        }
        fn try_recv(&self, from: Option<usize>, tag: Tag) -> Result<Option<(usize, Vec<u8>)>> {
            {
                let mut pending = self.pending.lock().expect("pending");
                if !pending.is_empty() {
                    self.progress(&mut pending);
                }
            }
            let probe = match from {
                Some(r) => self
                    .comm
                    .0
                    .process_at_rank(r as i32)
                    .immediate_matched_probe_with_tag(tag),
                None => self
                    .comm
                    .0
                    .any_process()
                    .immediate_matched_probe_with_tag(tag),
            };
            Ok(probe.map(|m| {
                let (data, status) = m.matched_receive_vec::<u8>();
                self.received
                    .fetch_add(data.len() as u64, Ordering::Relaxed);
                (status.source_rank() as usize, data)
            }))
        }
        fn abort(&self, code: i32) -> ! {
            self.comm.0.abort(code)
        }
        fn traffic(&self) -> (u64, u64) {
            (
                self.sent.load(Ordering::Relaxed),
                self.received.load(Ordering::Relaxed),
            )
        }
    }
}
