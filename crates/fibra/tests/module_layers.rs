//! The crate's top-level modules form layers (see `docs/ARCHITECTURE.md`): a module may name
//! (`crate::x`) only modules of its own layer or of lower ones, and the graph of those
//! references has no cycle. The docs' module map of the crate is checked against the code's.
//! The guard itself: `module_graph/mod.rs`, shared by every crate's `module_layers.rs`.

mod module_graph;

/// The layers, bottom up.
const LAYERS: module_graph::Layers = &[
    (
        "stacks and context switching",
        &["stack", "asan", "overflow", "switch"],
    ),
    (
        "readiness backend and timers",
        &["driver", "reactor", "timer"],
    ),
    ("tasks", &["sched"]),
    ("scheduler", &["worker"]),
    (
        "public API",
        &["fiber", "future", "net", "runtime", "sync", "task", "time"],
    ),
];

#[test]
fn no_module_names_a_module_of_a_higher_layer_and_there_is_no_cycle() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let graph = module_graph::check(dir, LAYERS);
    module_graph::check_docs(dir, "fibra", &module_graph::render(dir, LAYERS, &graph));
}

#[test]
fn the_guard_reports_planted_violations() {
    module_graph::self_check();
}
