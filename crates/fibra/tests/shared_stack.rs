//! `on_shared_stack`: work runs on a stack lent by the worker, may block there, and a stack
//! held by a blocked fiber is never lent to another one at the same time.

use fibra::sync::mpsc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The stack pointer, to tell which stack the code runs on. Not the address of a local: under
/// AddressSanitizer (CI's sanitizer job) locals whose address is taken live on its "fake stack",
/// a heap-like area per stack context, not on the stack the code runs on.
#[inline(never)]
fn stack_addr() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let sp: usize;
        // SAFETY: reads the stack pointer into a register; no memory access, no side effects.
        unsafe { std::arch::asm!("mov {}, rsp", out(reg) sp, options(nomem, nostack)) };
        sp
    }
    #[cfg(target_arch = "aarch64")]
    {
        let sp: usize;
        // SAFETY: reads the stack pointer into a register; no memory access, no side effects.
        unsafe { std::arch::asm!("mov {}, sp", out(reg) sp, options(nomem, nostack)) };
        sp
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let x = 0u8;
        std::hint::black_box(&x) as *const u8 as usize
    }
}

#[test]
fn runs_elsewhere_blocks_and_returns_its_value() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    rt.block_on(|| {
        let own = stack_addr();
        let (v, shared) = fibra::fiber::on_shared_stack(|| {
            fibra::yield_now();
            fibra::time::sleep(std::time::Duration::from_millis(1));
            (7, stack_addr())
        });
        assert_eq!(v, 7);
        // Fiber stacks are 256 KiB apart at least; the shared stack is another mapping.
        assert!(own.abs_diff(shared) > 64 * 1024, "{own:#x} vs {shared:#x}");
    });
}

#[test]
fn fibers_blocked_on_shared_stacks_get_distinct_stacks() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let addrs = rt.block_on(|| {
        let (tx, rx) = mpsc::channel();
        let gate = Arc::new(fibra::sync::Notify::new());
        let parked = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let tx = tx.clone();
                let gate = gate.clone();
                let parked = parked.clone();
                fibra::spawn(move || {
                    fibra::fiber::on_shared_stack(|| {
                        tx.send(stack_addr()).unwrap();
                        parked.fetch_add(1, Ordering::SeqCst);
                        gate.wait();
                    })
                })
            })
            .collect();
        drop(tx);
        let mut addrs = Vec::new();
        for _ in 0..8 {
            addrs.push(rx.recv().unwrap());
        }
        while parked.load(Ordering::SeqCst) < 8 {
            fibra::yield_now();
        }
        gate.notify_all();
        for h in hs {
            h.join().unwrap();
        }
        addrs
    });
    for (i, a) in addrs.iter().enumerate() {
        for b in &addrs[i + 1..] {
            assert!(
                a.abs_diff(*b) > 64 * 1024,
                "two blocked fibers shared a stack"
            );
        }
    }
}

#[test]
fn a_panic_inside_reaches_the_caller_and_the_stack_is_reused() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    rt.block_on(|| {
        let first = fibra::fiber::on_shared_stack(stack_addr);
        let caught = std::panic::catch_unwind(|| {
            fibra::fiber::on_shared_stack(|| -> () { panic!("inside") })
        });
        let msg = caught.unwrap_err();
        assert_eq!(msg.downcast_ref::<&str>(), Some(&"inside"));
        // The stack came back to the worker and is lent again.
        let again = fibra::fiber::on_shared_stack(stack_addr);
        assert!(first.abs_diff(again) < 4096, "{first:#x} vs {again:#x}");
    });
}

#[test]
fn outside_a_fiber_it_runs_in_place() {
    assert_eq!(fibra::fiber::on_shared_stack(|| 5), 5);
}
