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

#[test]
fn stack_overflow_names_the_fiber() {
    if util::child_role().as_deref() == Some("overflow") {
        let rt = fibra::Runtime::builder()
            .workers(1)
            .stack_size(64 * 1024)
            .build()
            .unwrap();
        rt.block_on(|| {
            fibra::fiber::Builder::new()
                .name("deep-recursion")
                .spawn(|| recurse(0, &mut [0u8; 512]))
                .unwrap()
                .join()
                .ok();
        });
        unreachable!("the overflow must abort the process");
    }
    let out = util::run_child("stack_overflow_names_the_fiber", "overflow", "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "stderr: {stderr}");
    assert!(
        stderr.contains("fiber 'deep-recursion'") && stderr.contains("overflowed its stack"),
        "stderr: {stderr}"
    );
}

#[test]
fn stack_overflow_on_a_shared_stack_names_the_fiber() {
    if util::child_role().as_deref() == Some("overflow-shared") {
        let rt = fibra::Runtime::builder()
            .workers(1)
            .stack_size(64 * 1024)
            .build()
            .unwrap();
        rt.block_on(|| {
            fibra::fiber::Builder::new()
                .name("deep-on-shared")
                .spawn(|| fibra::fiber::on_shared_stack(|| recurse(0, &mut [0u8; 512])))
                .unwrap()
                .join()
                .ok();
        });
        unreachable!("the overflow must abort the process");
    }
    let out = util::run_child(
        "stack_overflow_on_a_shared_stack_names_the_fiber",
        "overflow-shared",
        "",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "stderr: {stderr}");
    assert!(
        stderr.contains("fiber 'deep-on-shared'") && stderr.contains("overflowed its stack"),
        "stderr: {stderr}"
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
