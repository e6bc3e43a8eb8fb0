//! The TechEmpower Framework Benchmarks' six test types on fibra-web and fibra-postgres
//! (see `app.rs` for what each answers).
//!
//! ```sh
//! cargo run --release -p fibra-postgres --example techempower -- --port 8080 --workers 1 \
//!     --database-url postgres://benchmarkdbuser:benchmarkdbpass@127.0.0.1:5432/hello_world
//! ```
//!
//! Flags: `--port` (8080), `--addr` (127.0.0.1, as everything else here; `0.0.0.0` for all
//! interfaces, as the TechEmpower environment needs), `--workers` (one per core), `--database-url`
//! (TFB's, above, on port 5432), `--pool-size` (connections per worker, 4), `--query-timeout`
//! (seconds, 5). Runs until killed.

mod app;
mod args;

use fibra_postgres::{Config, Pool};
use std::time::Duration;

fn main() {
    let args = args::parse(std::env::args().skip(1)).unwrap_or_else(|e| {
        eprintln!("techempower: {e}");
        std::process::exit(2);
    });
    let config = Config::from_url(&args.url)
        .unwrap_or_else(|e| {
            eprintln!("techempower: {e}");
            std::process::exit(2);
        })
        .pool_size(args.pool_size)
        .query_timeout(Duration::from_secs(args.query_timeout));
    let pool = Pool::new(config);
    let mut server = fibra_http::Server::bind((args.addr.as_str(), args.port))
        .server_header(Some(app::SERVER_NAME.into()));
    if let Some(w) = args.workers {
        server = server.workers(w);
    }
    println!("techempower listening on {}:{}", args.addr, args.port);
    if let Err(e) = server.run(app::router(pool)) {
        eprintln!("techempower: {e}");
        std::process::exit(1);
    }
}
