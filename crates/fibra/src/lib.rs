//! # fibra — stackful fibers with std-like blocking I/O
//!
//! Write plain blocking Rust — `stream.read(..)`, `sleep(..)`, `rx.recv()` — and each blocking
//! point parks a cheap fiber instead of an OS thread. Fibers run on one worker thread per core,
//! each with its own edge-triggered epoll reactor, timer heap and pooled, guard-paged stacks.
//!
//! ```
//! use std::io::{Read, Write};
//! use fibra::net::{TcpListener, TcpStream};
//!
//! fibra::run(|| {
//!     // An echo server: one fiber per connection, written as with std threads.
//!     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     fibra::spawn(move || loop {
//!         let (mut conn, _) = listener.accept().unwrap();
//!         fibra::spawn(move || {
//!             let mut buf = [0u8; 1024];
//!             while let Ok(n @ 1..) = conn.read(&mut buf) {
//!                 conn.write_all(&buf[..n]).unwrap();
//!             }
//!         });
//!     });
//!
//!     let mut client = TcpStream::connect(addr).unwrap();
//!     client.write_all(b"hello").unwrap();
//!     let mut reply = [0u8; 5];
//!     client.read_exact(&mut reply).unwrap();
//!     assert_eq!(&reply, b"hello");
//! });
//! ```
//!
//! ## Model
//! - [`spawn`] takes `FnOnce() -> T + Send + 'static` and places the fiber on a worker
//!   (round-robin). Once started a fiber never moves to another thread, so holding an `Rc`,
//!   a thread-local borrow or a `MutexGuard` across a blocking call is sound, and the API has
//!   no `unsafe`.
//! - A panic stays in its fiber and comes back from [`JoinHandle::join`]. A fiber that
//!   overflows its stack is reported by name before the process aborts.
//! - [`Runtime::block_on`] returns when its root fiber returns; fibers still alive when the
//!   [`Runtime`] is dropped are cancelled: unwound once with a [`Cancelled`] payload so their
//!   destructors run. Blocking calls in those destructors do not unwind again: timed waits
//!   time out, socket waits fail ("the runtime is shutting down"), `sleep` and
//!   `Notify::wait` return, and locks, channels and joins wait for the cancelled fibers that
//!   release them.
//! - A panic in user code never unwinds a worker: a detached fiber's value is dropped in its
//!   own fiber, and a panic there is reported by the panic hook like a thread's.
//! - [`task::spawn_blocking`] runs blocking code on a helper thread while the fiber parks.
//! - [`block_on`] runs a future on the calling fiber, parking it while the future is pending;
//!   its waker works from any thread (for async-only clients).
//! - [`fiber::on_shared_stack`] runs a burst of work on a stack the worker lends to whichever
//!   fiber asks, which stays in the CPU caches while each fiber's own stack goes cold when
//!   thousands take turns.
//! - A fiber made of steps ([`fiber::Builder::spawn_steps`], [`fiber::Step`]) holds no stack
//!   while it waits for a socket: each step returns the wait and what to do next, and the next
//!   step starts on the worker's most recently used stack (fibra-http serves connections so).
//!
//! ## Modules
//!
//! [`fiber`] (spawning and joining, [`fiber::Builder`], fibers made of steps, the shared
//! stack, cancellation), [`net`] (TCP, UDP and Unix-domain sockets), [`time`] (`sleep`, deadlines),
//! [`sync`] (`Mutex`, `mpsc`, `oneshot`, `Notify`, `WaitGroup`), [`task`] (`spawn_blocking`),
//! and [`Runtime`] / [`run`]. The internals (stacks, the readiness driver, the reactor,
//! timers, the task layer, the workers) form layers that never name a higher one; the
//! project's `docs/ARCHITECTURE.md` describes them.

#![deny(missing_docs)]
#![warn(missing_debug_implementations)]

// Layers, bottom up; a module names only modules of its own or lower layers (checked by
// `tests/module_layers.rs`, described in `docs/ARCHITECTURE.md`).
// 1. Stacks and context switching.
mod asan;
mod overflow;
mod stack;
mod switch;
// 2. Readiness backend, per-socket readiness, timers: nothing here knows fibers.
mod driver;
mod reactor;
mod timer;
// 3. Tasks: the task record, parking and waking, cancellation, steps, shared runtime state.
mod sched;
// 4. The scheduler: one worker thread's loop.
mod worker;
// 5. The public API.
pub mod fiber;
mod future;
pub mod net;
mod runtime;
pub mod sync;
pub mod task;
pub mod time;

pub use fiber::{in_fiber, spawn, yield_now, Cancelled, JoinHandle};
pub use future::block_on;
pub use runtime::{
    current_worker, current_worker_count, run, Builder, Runtime, DEFAULT_MAX_IDLE_STACKS,
    DEFAULT_STACK_SIZE,
};
