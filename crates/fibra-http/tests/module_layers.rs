//! fibra-http's top-level modules form layers (see `docs/ARCHITECTURE.md`): a module may name
//! (`crate::x`) only modules of its own layer or of lower ones, and the graph of those
//! references has no cycle. The docs' module map of the crate is checked against the code's.
//! The guard itself is shared by every crate: `crates/fibra/tests/module_graph/mod.rs`.

#[path = "../../fibra/tests/module_graph/mod.rs"]
mod module_graph;

/// The layers, bottom up.
const LAYERS: module_graph::Layers = &[
    (
        "values",
        &[
            "backoff",
            "body",
            "client",
            "date",
            "digits",
            "error",
            "field",
            "going_away",
            "huffman",
            "inline_bytes",
            "ip_net",
            "word_hash",
            "lazy",
            "listen",
            "prefixed_int",
            "prepared",
            "target_bytes",
            "test_codec",
        ],
    ),
    (
        "messages and transports",
        &[
            "access_log",
            "chunked",
            "last_head",
            "lifecycle",
            "outbox",
            "parse",
            "request",
            "request_fields",
            "response",
            "service",
            "settings",
            "transport",
            "upgraded",
        ],
    ),
    (
        "acceptors and protocols over a connection",
        &["acceptor", "tls", "ws"],
    ),
    ("the connection engine", &["conn", "http2", "http3"]),
    ("the server", &["listen_fds", "proxy_protocol", "server"]),
    ("handlers that come with the engine", &["redirect"]),
];

#[test]
fn no_module_names_a_module_of_a_higher_layer_and_there_is_no_cycle() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let graph = module_graph::check(dir, LAYERS);
    module_graph::check_docs(
        dir,
        "fibra-http",
        &module_graph::render(dir, LAYERS, &graph),
    );
}
