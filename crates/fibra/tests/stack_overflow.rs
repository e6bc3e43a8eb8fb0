//! A fiber that overflows its stack is reported by name, not as a bare SIGSEGV.

mod util;

#[inline(never)]
#[allow(unconditional_recursion)]
fn recurse(depth: u64, pad: &mut [u8; 512]) -> u64 {
    pad[0] = depth as u8;
    let mut next = [0u8; 512];
    next[1] = pad[0];
    std::hint::black_box(&mut next);
    recurse(depth + 1, &mut next) + u64::from(next[3])
}

/// Child side: a runtime with 64 KiB stacks runs fiber `name`, whose `body` overflows.
fn overflow_in_child(name: &'static str, body: fn() -> u64) -> ! {
    let rt = fibra::Runtime::builder()
        .workers(1)
        .stack_size(64 * 1024)
        .build()
        .unwrap();
    rt.block_on(move || {
        fibra::fiber::Builder::new()
            .name(name)
            .spawn(body)
            .unwrap()
            .join()
            .ok();
    });
    unreachable!("the overflow must abort the process");
}

/// Parent side: the child (test `test`, role `role`) aborted, naming fiber `name`.
fn expect_overflow_reported(test: &str, role: &str, name: &str) {
    let out = util::run_child(test, role, "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "stderr: {stderr}");
    assert!(
        stderr.contains(&format!("fiber '{name}'")) && stderr.contains("overflowed its stack"),
        "stderr: {stderr}"
    );
}

#[test]
fn stack_overflow_names_the_fiber() {
    if util::child_role().as_deref() == Some("overflow") {
        overflow_in_child("deep-recursion", || recurse(0, &mut [0u8; 512]));
    }
    expect_overflow_reported(
        "stack_overflow_names_the_fiber",
        "overflow",
        "deep-recursion",
    );
}

#[test]
fn stack_overflow_on_a_shared_stack_names_the_fiber() {
    if util::child_role().as_deref() == Some("overflow-shared") {
        overflow_in_child("deep-on-shared", || {
            fibra::fiber::on_shared_stack(|| recurse(0, &mut [0u8; 512]))
        });
    }
    expect_overflow_reported(
        "stack_overflow_on_a_shared_stack_names_the_fiber",
        "overflow-shared",
        "deep-on-shared",
    );
}

#[test]
fn a_segfault_elsewhere_is_not_misreported() {
    if util::child_role().as_deref() == Some("segv") {
        let rt = fibra::Runtime::builder().workers(1).build().unwrap();
        rt.block_on(|| {
            fibra::spawn(|| {
                // SAFETY: deliberately faulting on a null pointer to test the handler chain.
                unsafe { std::ptr::null_mut::<u64>().write_volatile(1) };
            })
            .join()
            .ok();
        });
        return;
    }
    let out = util::run_child("a_segfault_elsewhere_is_not_misreported", "segv", "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "stderr: {stderr}");
    assert!(!stderr.contains("overflowed"), "stderr: {stderr}");
}
