//! Fibers made of steps: [`Step`], [`Wait`] and [`Resume`], which wait for a socket without
//! holding a stack.

use super::io::IoState;
use super::task::{park_begin, park_end, with_current, ParkBegin, Task};
use crate::reactor::Dir;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

/// What a fiber waiting without a stack runs when woken: the rest of its steps after the
/// wait (see [`Step`]). Kept in the fiber's slab slot as a value, not a boxed closure, so a
/// park costs no allocation and a wake-up reads no separately allocated line. It stays on the
/// fiber's worker thread, so it need not be `Send`.
pub(crate) struct Next(IoWait);

impl Next {
    /// The body of the fiber's next coroutine.
    pub(crate) fn run(self) -> Option<Next> {
        let Next(w) = self;
        drive_steps(|task| {
            let timed_out = park_end(task);
            w.woken(task, timed_out)
        })
    }
}

/// What a fiber started with [`Builder::spawn_steps`](crate::fiber::Builder::spawn_steps)
/// does after each step: finish, or wait for a socket **without holding a stack** and then
/// run its next step.
///
/// A fiber blocked in `read` keeps its stack for as long as it waits. A keep-alive connection
/// waits most of its life, and when thousands take turns, each wake-up finds its fiber's stack
/// gone from the CPU caches. A fiber made of steps ends each step by returning a `Step`
/// instead: while it waits it is a task record and a closure, its stack is back in the
/// worker's pool, and its next step starts on the stack used last, which is still cached.
/// Inside a step, blocking calls work as in any fiber.
///
/// Steps come from [`Step::done`] and [`Wait::then`] (or [`Wait::resume_with`]), on a wait
/// such as [`TcpStream::when_readable`](crate::net::TcpStream::when_readable).
///
/// ```
/// use std::io::{Read, Write};
/// use fibra::fiber::{Builder, Step};
/// use fibra::net::{TcpListener, TcpStream};
///
/// /// Echoes what has arrived, then waits for more without holding a stack.
/// fn echo(conn: TcpStream) -> Step {
///     let mut buf = [0u8; 512];
///     loop {
///         match conn.try_read(&mut buf) {
///             Ok(n @ 1..) if (&conn).write_all(&buf[..n]).is_ok() => {}
///             Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
///             _ => return Step::done(), // end of stream or an error
///         }
///     }
///     conn.when_readable().then(move |ready| match ready {
///         Ok(()) => echo(conn),
///         Err(_) => Step::done(),
///     })
/// }
///
/// fibra::run(|| {
///     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
///     let addr = listener.local_addr().unwrap();
///     fibra::spawn(move || {
///         let (conn, _) = listener.accept().unwrap();
///         Builder::new().spawn_steps(move || echo(conn)).unwrap();
///     });
///     let mut client = TcpStream::connect(addr).unwrap();
///     for word in [b"ping", b"pong"] {
///         client.write_all(word).unwrap();
///         let mut reply = [0u8; 4];
///         client.read_exact(&mut reply).unwrap();
///         assert_eq!(&reply, word);
///     }
/// });
/// ```
#[must_use = "a fiber only waits (or ends) by returning the step"]
pub struct Step(pub(crate) StepKind);

pub(crate) enum StepKind {
    Done,
    /// Run `then` with this outcome at once.
    Now(io::Result<()>, Then),
    /// Wait for readiness, then run `then`.
    Wait(IoWait),
}

/// The rest of a fiber made of steps, given the outcome of its wait.
pub(crate) type Then = Box<dyn Resume>;

/// The rest of a fiber made of steps, as a value: what runs once a [`Wait`] ends, given its
/// outcome. [`Wait::then`] makes one from a closure (boxing it); implementing `Resume` for a
/// state that is boxed already and handing that box to [`Wait::resume_with`] waits without
/// an allocation.
///
/// ```
/// use std::io::{Read, Write};
/// use fibra::fiber::{Builder, Resume, Step};
/// use fibra::net::{TcpListener, TcpStream};
///
/// /// An echo connection that counts what it echoed; its box is the rest of the fiber.
/// struct Echo {
///     conn: TcpStream,
///     echoed: usize,
/// }
///
/// impl Resume for Echo {
///     fn resume(mut self: Box<Self>, ready: std::io::Result<()>) -> Step {
///         if ready.is_err() {
///             return Step::done();
///         }
///         let mut buf = [0u8; 512];
///         loop {
///             match self.conn.try_read(&mut buf) {
///                 Ok(n @ 1..) if (&self.conn).write_all(&buf[..n]).is_ok() => self.echoed += n,
///                 Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
///                 _ => return Step::done(), // end of stream or an error
///             }
///         }
///         let wait = self.conn.when_readable();
///         wait.resume_with(self) // the same box: no allocation per wait
///     }
/// }
///
/// fibra::run(|| {
///     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
///     let addr = listener.local_addr().unwrap();
///     fibra::spawn(move || {
///         let (conn, _) = listener.accept().unwrap();
///         let echo = Box::new(Echo { conn, echoed: 0 });
///         Builder::new().spawn_steps(move || echo.resume(Ok(()))).unwrap();
///     });
///     let mut client = TcpStream::connect(addr).unwrap();
///     for word in [b"ping", b"pong"] {
///         client.write_all(word).unwrap();
///         let mut reply = [0u8; 4];
///         client.read_exact(&mut reply).unwrap();
///         assert_eq!(&reply, word);
///     }
/// });
/// ```
pub trait Resume: 'static {
    /// Runs the next step with the wait's outcome: `Ok` once ready, or the error the blocking
    /// operation would have returned.
    fn resume(self: Box<Self>, ready: io::Result<()>) -> Step;
}

/// A closure as a [`Resume`] (what [`Wait::then`] boxes).
struct ResumeFn<F>(F);

impl<F: FnOnce(io::Result<()>) -> Step + 'static> Resume for ResumeFn<F> {
    fn resume(self: Box<Self>, ready: io::Result<()>) -> Step {
        (self.0)(ready)
    }
}

/// A wait for readiness `dir` of a socket, until tick `deadline` (0: none).
pub(crate) struct IoWait {
    state: Arc<IoState>,
    then: Then,
    /// The deadline shifted left by one, with the direction in the low bit (1: write). One
    /// word instead of a byte and a word: the wait is four whole words, with no padding. With
    /// a one-byte field, the copies of the wait as it goes through `Step`, `Option<Next>` and
    /// the fiber's slot moved its last seven bytes with two overlapping 4-byte moves, and the
    /// next copy's load of them waited for both stores (store-to-load forwarding fails).
    deadline_dir: u64,
}

impl IoWait {
    /// The latest deadline a wait keeps: 2^63 ticks (milliseconds) is never.
    const MAX_DEADLINE: u64 = u64::MAX >> 1;

    fn new(state: Arc<IoState>, dir: Dir, deadline: u64, then: Then) -> IoWait {
        IoWait {
            state,
            then,
            deadline_dir: deadline.min(Self::MAX_DEADLINE) << 1 | u64::from(dir == Dir::Write),
        }
    }

    fn dir(&self) -> Dir {
        if self.deadline_dir & 1 == 0 {
            Dir::Read
        } else {
            Dir::Write
        }
    }

    fn deadline(&self) -> u64 {
        self.deadline_dir >> 1
    }
}

/// Something a fiber made of steps can wait for without holding a stack; [`Wait::then`] turns
/// it into the fiber's next [`Step`]. Made by
/// [`TcpStream::when_readable`](crate::net::TcpStream::when_readable), or ready at once with
/// [`Wait::ready`] and [`Wait::now`] (for a source that already has data buffered, such as a
/// TLS session holding decrypted plaintext).
pub struct Wait(WaitKind);

enum WaitKind {
    /// The outcome is known already (an error, or a wait on a plain thread).
    Now(io::Result<()>),
    Io {
        state: Arc<IoState>,
        dir: Dir,
        deadline: u64,
    },
}

impl std::fmt::Debug for Wait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            WaitKind::Now(result) => f.debug_tuple("Wait::Now").field(result).finish(),
            WaitKind::Io { dir, deadline, .. } => f
                .debug_struct("Wait::Io")
                .field("dir", dir)
                .field("deadline", deadline)
                .finish(),
        }
    }
}

impl Wait {
    /// A wait that is over already, with the outcome `result`: the step it makes runs its
    /// continuation at once, in the same fiber and on the same stack, without parking.
    pub fn now(result: io::Result<()>) -> Wait {
        Wait(WaitKind::Now(result))
    }

    /// A wait that is ready at once: `Wait::now(Ok(()))`. For a source whose next read is
    /// known to return without blocking (data buffered in user space).
    pub fn ready() -> Wait {
        Wait::now(Ok(()))
    }

    pub(crate) fn io(state: Arc<IoState>, dir: Dir, deadline: u64) -> Wait {
        Wait(WaitKind::Io {
            state,
            dir,
            deadline,
        })
    }

    /// The step that waits, then runs `then` (in the same fiber, on a stack from the worker's
    /// pool) with the outcome: `Ok` once ready, or the error the blocking operation would have
    /// returned (`TimedOut` after the socket's timeout).
    pub fn then(self, then: impl FnOnce(io::Result<()>) -> Step + 'static) -> Step {
        self.resume_with(Box::new(ResumeFn(then)))
    }

    /// As [`Wait::then`], with the rest of the fiber as a boxed [`Resume`]: a fiber that keeps
    /// its state in a box already passes that box on, and a wait costs no allocation.
    pub fn resume_with(self, next: Box<dyn Resume>) -> Step {
        match self.0 {
            WaitKind::Now(result) => Step(StepKind::Now(result, next)),
            WaitKind::Io {
                state,
                dir,
                deadline,
            } => Step(StepKind::Wait(IoWait::new(state, dir, deadline, next))),
        }
    }
}

impl Step {
    /// The fiber is finished.
    pub fn done() -> Step {
        Step(StepKind::Done)
    }
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            StepKind::Done => "Step::Done",
            StepKind::Now(..) => "Step::Now",
            StepKind::Wait(..) => "Step::Wait",
        })
    }
}

impl IoWait {
    /// The step after the wait ended: `then`, or the same wait again after a spurious
    /// wake-up.
    #[inline(always)]
    fn woken(self, task: &Task, timed_out: bool) -> Step {
        match self
            .state
            .after_wait_of(task.waiter_id(), self.dir(), timed_out)
        {
            Err(e) => self.then.resume(Err(e)),
            Ok(()) if IoState::is_ready(self.state.snapshot(), self.dir()) => {
                self.then.resume(Ok(()))
            }
            Ok(()) => Step(StepKind::Wait(self)),
        }
    }
}

/// Runs steps until the fiber finishes (`None`) or waits without its stack (the body to run
/// when woken).
#[inline(always)]
fn run_steps(task: &Task, mut step: Step) -> Option<Next> {
    loop {
        step = match step.0 {
            StepKind::Done => return None,
            StepKind::Now(result, then) => then.resume(result),
            StepKind::Wait(w) => {
                if !w.state.add_waiter(w.dir(), task.waiter_id(), || task.arc()) {
                    w.then.resume(Ok(()))
                } else {
                    match park_begin(task, w.deadline()) {
                        ParkBegin::Parked => return Some(Next(w)),
                        ParkBegin::Notified => w.woken(task, false),
                        ParkBegin::Raced => {
                            let timed_out = park_end(task);
                            w.woken(task, timed_out)
                        }
                    }
                }
            }
        };
    }
}

/// Runs the steps that start with `first`, and records the fiber's outcome once it is
/// finished (or a step panicked).
pub(crate) fn drive_steps(first: impl FnOnce(&Task) -> Step) -> Option<Next> {
    with_current(|task| {
        let task = task.expect("fibra: steps run in a fiber");
        match panic::catch_unwind(AssertUnwindSafe(|| run_steps(task, first(task)))) {
            Ok(Some(next)) => Some(next),
            Ok(None) => {
                task.complete(Some(Ok(Box::new(()))));
                None
            }
            Err(payload) => {
                task.complete(Some(Err(payload)));
                None
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_keeps_its_direction_and_deadline_in_one_word() {
        let then: Then = Box::new(ResumeFn(|_| Step::done()));
        let mut w = IoWait::new(IoState::new(), Dir::Read, 0, then);
        for (dir, deadline, kept) in [
            (Dir::Read, 0, 0),
            (Dir::Write, 0, 0),
            (Dir::Read, 1, 1),
            (Dir::Write, 12_345, 12_345),
            (Dir::Read, u64::MAX >> 1, u64::MAX >> 1),
            // Later than 2^63 ticks (a saturated `ticks_after`) is never, as before.
            (Dir::Write, u64::MAX, u64::MAX >> 1),
        ] {
            w = IoWait::new(w.state, dir, deadline, w.then);
            assert_eq!((w.dir(), w.deadline()), (dir, kept));
        }
        assert_eq!(std::mem::size_of::<IoWait>(), 4 * 8);
    }
}
