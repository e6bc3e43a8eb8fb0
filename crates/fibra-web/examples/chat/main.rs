//! A chat on fibra-web: messages posted as forms, broadcast to every open page as server-sent
//! events (see `app.rs`).
//!
//! ```sh
//! cargo run -p fibra-web --example chat             # open http://127.0.0.1:3001 in two tabs
//! curl -N localhost:3001/events &                   # or watch the stream
//! curl -d user=ann -d text=hello localhost:3001/messages
//! ```
//!
//! `--port N` (3001).

mod app;

fn main() {
    let mut port = 3001u16;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match (flag.as_str(), args.next()) {
            ("--port", Some(v)) => port = v.parse().expect("--port takes a number"),
            _ => {
                eprintln!("chat: unknown flag {flag} (flags: --port N)");
                std::process::exit(2);
            }
        }
    }
    println!("chat listening on http://127.0.0.1:{port}");
    let app = app::router(app::Hub::default());
    if let Err(e) = fibra_web::Server::bind(("127.0.0.1", port)).run(app) {
        eprintln!("chat: {e}");
        std::process::exit(1);
    }
}
