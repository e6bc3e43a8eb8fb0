//! The fibra binary's top-level modules form layers (see `docs/ARCHITECTURE.md`): a module may
//! name (`crate::x`) only modules of its own layer or of lower ones, and the graph of those
//! references has no cycle. The docs' module map of the crate is checked against the code's.
//! The guard itself is shared by every crate: `crates/fibra/tests/module_graph/mod.rs`.

#[path = "../../fibra/tests/module_graph/mod.rs"]
mod module_graph;

/// The layers, bottom up.
const LAYERS: module_graph::Layers = &[
    (
        "operations",
        &[
            "endpoints",
            "error_log",
            "http3",
            "http3_handover",
            "listeners",
            "output",
            "signals",
            "site_http3",
            "site_listen",
            "upgrade",
        ],
    ),
    ("flags", &["proxy_flags", "server_flags"]),
    ("sites", &["site_reload", "site_start"]),
    ("commands", &["bench", "hello", "serve", "site_serve"]),
];

#[test]
fn no_module_names_a_module_of_a_higher_layer_and_there_is_no_cycle() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let graph = module_graph::check(dir, LAYERS);
    module_graph::check_docs(dir, "fibra-cli", &module_graph::render(dir, LAYERS, &graph));
}
