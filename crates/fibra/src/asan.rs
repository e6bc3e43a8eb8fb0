//! AddressSanitizer support: tells ASan about every stack switch, so it knows which stack code
//! runs on (for `__asan_handle_no_return` when a panic unwinds, for its stack-use-after-return
//! "fake stacks", for reports and for LeakSanitizer's scan).
//!
//! Compiled in only with `--cfg fibra_asan`, which CI's sanitizer job passes together with
//! `-Zsanitizer=address` (`.ci/sanitizers`); otherwise every function here is an empty
//! `#[inline(always)]` stub (or a plain pass-through) and costs nothing.
//!
//! The protocol (compiler-rt's `common_interface_defs.h`): right before switching to another
//! stack, call `__sanitizer_start_switch_fiber` with the bounds of the stack being entered and
//! a slot for the current context's fake stack (null if the context is ending: ASan frees it);
//! right after arriving, call `__sanitizer_finish_switch_fiber` with the arriving context's saved
//! fake stack (null when it starts), which reports the bounds of the stack just left.
//!
//! fibra switches in four places (the raw switches are in `switch.rs`, the worker's side in
//! `sched/switch.rs`):
//! - a worker resumes a fiber ([`to_fiber`] / [`back_from_fiber`] around `co.resume`), and the
//!   fiber arrives either at its start ([`fiber_entered`]) or after its `suspend` returns
//!   ([`back_in_fiber`]);
//! - a fiber suspends ([`leaving_fiber`] before `yielder.suspend`) or ends ([`fiber_exiting`],
//!   the last thing its coroutine body does);
//! - [`on_stack`] wraps `corosensei::on_stack` for [`crate::fiber::on_shared_stack`];
//! - the worker loop itself runs in a coroutine, resumed from the thread's stack like a fiber
//!   ([`loop_entered`], [`loop_exiting`]). It runs a woken fiber's next step on its own stack
//!   ([`step_on_loop_stack`] .. [`step_on_loop_stack_done`]); if that step blocks, the loop's
//!   coroutine suspends to the thread's stack and is that fiber's from then on, so its fake
//!   stack is saved under the fiber's key and the switch goes to the thread's stack, not to the
//!   stack that last resumed a fiber.
//!
//! Fibers are named by a key (their task's address), which this module only compares.
//!
//! A fiber may be suspended on a lent shared stack, so the worker resumes it on the stack that
//! `Task::stack_limit` names (kept current for the overflow handler anyway); every stack comes
//! from the worker's one-size pool, so its length is known (and checked).
//!
//! When a context ends, its fake stack is freed at once, while the functions that ran the switch
//! still have to return: those frames must not live on the fake stack. They do not, because every
//! frame entered between `start` and `finish` is put on the real stack (ASan hands out no fake
//! frames while a switch is in progress), and the functions still live when a context ends
//! (the coroutine body, corosensei's entry code, [`on_stack`]'s closure) are all entered before
//! the context's `finish`. The calls themselves pass plain values and are inlined.
//!
//! Before a stack starts a new life (a coroutine, or a lending) [`fresh_stack`] clears the
//! shadow that frames of its previous life left poisoned.
//!
//! LeakSanitizer: fibra leaks one thing on purpose, and says so here: a fiber that never ends
//! while its runtime shuts down is leaked with its task and what its frames reference
//! ([`leak_fiber`], from `worker.rs`). Anything else left at exit is reported.

#[cfg(fibra_asan)]
pub(crate) use imp::*;
#[cfg(not(fibra_asan))]
pub(crate) use noop::*;

#[cfg(fibra_asan)]
mod imp {
    use corosensei::stack::{DefaultStack, Stack};
    use std::cell::{Cell, RefCell};
    use std::collections::HashMap;
    use std::ffi::c_void;
    use std::ptr;
    use std::sync::atomic::AtomicUsize;
    use std::sync::atomic::Ordering::Relaxed;
    use std::sync::Mutex;

    extern "C" {
        fn __sanitizer_start_switch_fiber(
            fake_stack_save: *mut *mut c_void,
            bottom: *const c_void,
            size: usize,
        );
        fn __sanitizer_finish_switch_fiber(
            fake_stack_save: *mut c_void,
            bottom_old: *mut *const c_void,
            size_old: *mut usize,
        );
        fn __asan_unpoison_memory_region(addr: *const c_void, size: usize);
        fn __asan_addr_is_in_fake_stack(
            fake_stack: *mut c_void,
            addr: *mut c_void,
            beg: *mut *mut c_void,
            end: *mut *mut c_void,
        ) -> *mut c_void;
        fn __lsan_register_root_region(p: *const c_void, size: usize);
    }

    /// A context's saved fake stack (ASan's opaque pointer; null when it has none).
    pub(crate) type FakeStack = *mut c_void;

    thread_local! {
        /// Bounds of this thread's own stack, the one fibers are resumed from and suspend back
        /// to, as ASan reported them when a fiber last arrived from it.
        static THREAD_STACK: Cell<(*const c_void, usize)> =
            const { Cell::new((ptr::null(), 0)) };
        /// Length (guard page included) of this worker's stacks; 0 until one is seen.
        static STACK_LEN: Cell<usize> = const { Cell::new(0) };
        /// The fake stacks of this worker's suspended fibers, by task address (see
        /// [`leak_fiber`]).
        static SUSPENDED: RefCell<HashMap<usize, FakeStack>> = RefCell::new(HashMap::new());
        /// The key (task address) of the fiber this worker last switched to: the running one
        /// while a fiber runs.
        static RUNNING: Cell<usize> = const { Cell::new(0) };
        /// Bounds of the worker thread's own stack, where its loop coroutines are resumed
        /// from, as ASan reported them when a loop coroutine last started.
        static LOOP_RESUMER: Cell<(*const c_void, usize)> = const { Cell::new((ptr::null(), 0)) };
        /// True while the loop runs a fiber's step on its own stack: a suspend then goes to
        /// the worker thread's stack (the loop's resumer), not to the loop's.
        static ON_LOOP_STACK: Cell<bool> = const { Cell::new(false) };
    }

    /// The bounds `[bottom, bottom + size)` of `stack`'s mapping.
    #[inline(always)]
    fn bounds(stack: &DefaultStack) -> (*const c_void, usize) {
        let limit = stack.limit().get();
        (limit as *const c_void, stack.base().get() - limit)
    }

    /// A stack starts a new life as a stack (a new coroutine, or lent to run `on_stack`).
    ///
    /// Clears what earlier uses left in its shadow: frames that never returned (a finished
    /// coroutine's entry frame, frames a panic unwound) leave their redzones poisoned, and
    /// corosensei writes the coroutine's start-up data over that memory with instrumented code.
    pub(crate) fn fresh_stack(stack: &DefaultStack) {
        let (bottom, size) = bounds(stack);
        let known = STACK_LEN.with(|l| l.replace(size));
        assert!(
            known == 0 || known == size,
            "fibra_asan: a worker's stacks differ in length ({known} vs {size}); the ASan \
             annotations derive a fiber's stack bounds from Task::stack_limit and one length"
        );
        // SAFETY: the range is the stack's own mapping, which nothing runs on right now.
        unsafe { __asan_unpoison_memory_region(bottom, size) };
    }

    /// The worker's half of a switch into fiber `task`: call right before resuming it.
    #[inline(always)]
    pub(crate) fn to_fiber(key: usize, stack_limit: &AtomicUsize) -> FakeStack {
        RUNNING.with(|r| r.set(key));
        let size = STACK_LEN.with(Cell::get);
        let bottom = stack_limit.load(Relaxed) as *const c_void;
        let mut fake = ptr::null_mut();
        // SAFETY: announces the stack the fiber runs on (its own, or the shared stack it is
        // suspended on: `stack_limit` follows it); the worker's fake stack is saved in `fake`.
        unsafe { __sanitizer_start_switch_fiber(&mut fake, bottom, size) };
        fake
    }

    /// The worker's half of a switch back from a fiber: call right after the resume returned,
    /// with what [`to_fiber`] returned.
    #[inline(always)]
    pub(crate) fn back_from_fiber(fake: FakeStack) {
        // SAFETY: completes the switch the fiber started (in `leaving_fiber`/`fiber_exiting`),
        // restoring the worker's own fake stack.
        unsafe { __sanitizer_finish_switch_fiber(fake, ptr::null_mut(), ptr::null_mut()) };
    }

    /// First thing a fiber's coroutine body does: completes the switch from the worker.
    #[inline(always)]
    pub(crate) fn fiber_entered() {
        back_in_fiber(ptr::null_mut());
    }

    /// First thing a worker loop's coroutine does: completes the switch from the worker
    /// thread's stack and records that stack's bounds.
    #[inline(always)]
    pub(crate) fn loop_entered() {
        back_in_fiber(ptr::null_mut());
        LOOP_RESUMER.with(|l| l.set(THREAD_STACK.with(Cell::get)));
    }

    /// The loop is about to run the step of fiber `key` on its own stack.
    #[inline(always)]
    pub(crate) fn step_on_loop_stack(key: usize) {
        RUNNING.with(|r| r.set(key));
        ON_LOOP_STACK.with(|o| o.set(true));
    }

    /// The step run on the loop's stack returned without suspending.
    #[inline(always)]
    pub(crate) fn step_on_loop_stack_done() {
        ON_LOOP_STACK.with(|o| o.set(false));
    }

    /// Last thing a loop coroutine does: starts the switch back to the worker thread's stack
    /// (`to_thread_stack`: the loop ended) or to the loop that resumed it as a fiber.
    #[inline(always)]
    pub(crate) fn loop_exiting(to_thread_stack: bool) {
        let (bottom, size) = if to_thread_stack {
            LOOP_RESUMER.with(Cell::get)
        } else {
            THREAD_STACK.with(Cell::get)
        };
        // SAFETY: the context ends, as in `fiber_exiting`.
        unsafe { __sanitizer_start_switch_fiber(ptr::null_mut(), bottom, size) };
    }

    /// The fiber's half of a suspend: call right before `yielder.suspend`; returns the fiber's
    /// fake stack, for [`back_in_fiber`].
    #[inline(always)]
    pub(crate) fn leaving_fiber() -> FakeStack {
        // A step that blocks on the loop's stack suspends the loop's coroutine: to the worker
        // thread's stack, which resumed the loop.
        let (bottom, size) = if ON_LOOP_STACK.with(|o| o.replace(false)) {
            LOOP_RESUMER.with(Cell::get)
        } else {
            THREAD_STACK.with(Cell::get)
        };
        let mut fake = ptr::null_mut();
        // SAFETY: announces the worker's stack, recorded when this fiber last arrived from it
        // (fibers never migrate, and only the worker's loop resumes them).
        unsafe { __sanitizer_start_switch_fiber(&mut fake, bottom, size) };
        if !fake.is_null() {
            SUSPENDED.with(|m| m.borrow_mut().insert(RUNNING.with(Cell::get), fake));
        }
        fake
    }

    /// The fiber runs again (its `suspend` returned): completes the switch from the worker.
    #[inline(always)]
    pub(crate) fn back_in_fiber(fake: FakeStack) {
        let mut bottom = ptr::null();
        let mut size = 0;
        // SAFETY: completes the switch `to_fiber` started, restoring this fiber's fake stack
        // (null at its start: ASan makes a new one); reports the worker's stack bounds.
        unsafe { __sanitizer_finish_switch_fiber(fake, &mut bottom, &mut size) };
        THREAD_STACK.with(|s| s.set((bottom, size)));
        if !fake.is_null() {
            SUSPENDED.with(|m| m.borrow_mut().remove(&RUNNING.with(Cell::get)));
        }
    }

    /// Last thing a fiber's coroutine body does: starts the final switch back to the worker and
    /// lets ASan free the fiber's fake stack.
    #[inline(always)]
    pub(crate) fn fiber_exiting() {
        let (bottom, size) = THREAD_STACK.with(Cell::get);
        // SAFETY: the context ends (see the module docs for why no frame still to return lives
        // on its fake stack); the worker's `back_from_fiber` completes the switch.
        unsafe { __sanitizer_start_switch_fiber(ptr::null_mut(), bottom, size) };
    }

    /// `corosensei::on_stack(stack, f)`, with both switches announced. `f` gets a fake stack of
    /// its own, freed when it returns or unwinds.
    pub(crate) fn on_stack<R>(stack: &mut DefaultStack, f: impl FnOnce() -> R) -> R {
        /// Completes the switch back to the caller's stack, also when `f` panics.
        struct Back(*mut c_void);
        impl Drop for Back {
            #[inline(always)]
            fn drop(&mut self) {
                // SAFETY: completes the switch `Leave` started on the lent stack.
                unsafe {
                    __sanitizer_finish_switch_fiber(self.0, ptr::null_mut(), ptr::null_mut())
                };
            }
        }
        /// Starts the switch back to the caller's stack, also when `f` panics.
        struct Leave(*const c_void, usize);
        impl Drop for Leave {
            #[inline(always)]
            fn drop(&mut self) {
                // SAFETY: the lent stack's context ends; its fake stack is freed. The closure
                // holding this was entered before the switch finished, so its frame is real.
                unsafe { __sanitizer_start_switch_fiber(ptr::null_mut(), self.0, self.1) };
            }
        }
        fresh_stack(stack);
        let (bottom, size) = bounds(stack);
        let mut back = Back(ptr::null_mut());
        // SAFETY: announces the lent stack; the caller's fake stack is saved in `back`.
        unsafe { __sanitizer_start_switch_fiber(&mut back.0, bottom, size) };
        corosensei::on_stack(stack, move || {
            let mut leave = Leave(ptr::null(), 0);
            // SAFETY: completes the switch to the lent stack (a new context, so no fake stack
            // to restore) and learns the caller's stack bounds for the way back.
            unsafe { __sanitizer_finish_switch_fiber(ptr::null_mut(), &mut leave.0, &mut leave.1) };
            f()
        })
    }

    /// A fiber that never ended at shutdown is leaked with its task and stack: the task is an
    /// intended leak, and LeakSanitizer scans the stack and the frames the fiber keeps on its
    /// fake stack, so what the fiber still references counts as reachable, not leaked. (If it
    /// is suspended inside `on_shared_stack`, only the lent stack and that call's fake stack
    /// are covered.)
    pub(crate) fn leak_fiber(key: usize, stack_limit: usize) {
        intended_leak(key);
        let size = STACK_LEN.with(Cell::get);
        let bottom = stack_limit;
        if bottom != 0 && size != 0 {
            // SAFETY: the range is the leaked fiber's stack mapping, which is never unmapped.
            unsafe { __lsan_register_root_region(bottom as *const c_void, size) };
        }
        let Some(fake) = SUSPENDED.with(|m| m.borrow_mut().remove(&key)) else {
            return;
        };
        // The fake stack's layout is ASan's own business, but its frames are at least 64 bytes,
        // aligned to their size, and lie within 16 MiB of its handle (11 size classes of at
        // most 1 MiB each, after a header): probe for the frames in use and register each.
        let start = fake as usize;
        let mut addr = start;
        while addr < start + (16 << 20) {
            let (mut beg, mut end) = (ptr::null_mut(), ptr::null_mut());
            // SAFETY: `fake` is a live fake stack of this (live) thread: the leaked fiber's,
            // which is never freed; the call only reads frames inside it.
            let real = unsafe {
                __asan_addr_is_in_fake_stack(fake, addr as *mut c_void, &mut beg, &mut end)
            };
            if real.is_null() || end as usize <= addr {
                addr += 64;
                continue;
            }
            // SAFETY: a frame of the leaked fiber's fake stack, which is never freed.
            unsafe { __lsan_register_root_region(beg, end as usize - beg as usize) };
            addr = end as usize;
        }
    }

    /// Memory fibra leaks on purpose (see the caller), kept reachable for LeakSanitizer.
    static INTENDED_LEAKS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

    /// Records that the allocation `addr` points into is leaked on purpose.
    fn intended_leak(addr: usize) {
        INTENDED_LEAKS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(addr);
    }
}

#[cfg(not(fibra_asan))]
mod noop {
    use corosensei::stack::DefaultStack;
    use std::sync::atomic::AtomicUsize;

    /// Stands for the saved fake stack of a context (nothing without ASan).
    #[derive(Clone, Copy)]
    pub(crate) struct FakeStack;

    #[inline(always)]
    pub(crate) fn fresh_stack(_: &DefaultStack) {}

    #[inline(always)]
    pub(crate) fn to_fiber(_: usize, _: &AtomicUsize) -> FakeStack {
        FakeStack
    }

    #[inline(always)]
    pub(crate) fn back_from_fiber(_: FakeStack) {}

    #[inline(always)]
    pub(crate) fn fiber_entered() {}

    #[inline(always)]
    pub(crate) fn leaving_fiber() -> FakeStack {
        FakeStack
    }

    #[inline(always)]
    pub(crate) fn back_in_fiber(_: FakeStack) {}

    #[inline(always)]
    pub(crate) fn fiber_exiting() {}

    #[inline(always)]
    pub(crate) fn loop_entered() {}

    #[inline(always)]
    pub(crate) fn step_on_loop_stack(_: usize) {}

    #[inline(always)]
    pub(crate) fn step_on_loop_stack_done() {}

    #[inline(always)]
    pub(crate) fn loop_exiting(_: bool) {}

    #[inline(always)]
    pub(crate) fn on_stack<R>(stack: &mut DefaultStack, f: impl FnOnce() -> R) -> R {
        corosensei::on_stack(stack, f)
    }

    #[inline(always)]
    pub(crate) fn leak_fiber(_: usize, _: usize) {}
}
