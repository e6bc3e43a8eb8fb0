//! A todo app on fibra-web: a JSON API, a form and an HTML page over an in-memory store (see
//! `app.rs`).
//!
//! ```sh
//! cargo run -p fibra-web --example todo             # http://127.0.0.1:3000
//! curl -s localhost:3000/api/todos -H 'content-type: application/json' -d '{"title":"milk"}'
//! ```
//!
//! `--port N` (3000), `--workers N` (one per core).

mod app;

fn main() {
    let mut port = 3000u16;
    let mut workers = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        match flag.as_str() {
            "--port" => port = value.parse().expect("--port takes a number"),
            "--workers" => workers = Some(value.parse().expect("--workers takes a number")),
            other => {
                eprintln!("todo: unknown flag {other} (flags: --port N, --workers N)");
                std::process::exit(2);
            }
        }
    }
    let mut server = fibra_web::Server::bind(("127.0.0.1", port));
    if let Some(w) = workers {
        server = server.workers(w);
    }
    println!("todo listening on http://127.0.0.1:{port}");
    if let Err(e) = server.run(app::router(app::Store::default())) {
        eprintln!("todo: {e}");
        std::process::exit(1);
    }
}
