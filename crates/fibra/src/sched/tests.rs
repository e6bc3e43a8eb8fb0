use super::io::IoState;
use super::task::Task;
use std::mem::{offset_of, size_of};

#[test]
fn a_park_wake_cycle_touches_one_line_of_the_task() {
    // `Arc<Task>`'s block is the two counts plus the task: keep it in the 128-byte bin...
    assert!(
        16 + size_of::<Task>() <= 128,
        "task is {} bytes",
        size_of::<Task>()
    );
    // ...with every field a park, wake or timer touches in its first 64 bytes.
    for end in [
        offset_of!(Task, state) + 1,
        offset_of!(Task, timed_out) + 1,
        offset_of!(Task, home) + 4,
        offset_of!(Task, key) + 4,
        offset_of!(Task, rt) + 8,
        offset_of!(Task, deadline) + 8,
        offset_of!(Task, timer_queued) + 8,
        offset_of!(Task, stack_limit) + 8,
    ] {
        assert!(16 + end <= 64, "hot field ends at {end}");
    }
}

#[test]
fn io_state_fits_one_line() {
    let size = std::mem::size_of::<IoState>();
    // `Arc<IoState>`: two counts plus the state, in one 64-byte (so 64-aligned) block.
    assert!(16 + size <= 64, "IoState is {size} bytes");
}
