//! The TechEmpower Framework Benchmarks' six test types on fibra-http and fibra-postgres
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

use fibra_postgres::{Config, Pool};
use std::time::Duration;

struct Args {
    addr: String,
    port: u16,
    workers: Option<usize>,
    url: String,
    pool_size: usize,
    query_timeout: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        addr: "127.0.0.1".into(),
        port: 8080,
        workers: None,
        url: "postgres://benchmarkdbuser:benchmarkdbpass@127.0.0.1:5432/hello_world".into(),
        pool_size: fibra_postgres::DEFAULT_POOL_SIZE,
        query_timeout: 5,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let num = |v: String| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {v}"))
        };
        match flag.as_str() {
            "--addr" => a.addr = value()?,
            "--port" => a.port = num(value()?)? as u16,
            "--workers" => a.workers = Some(num(value()?)?.max(1) as usize),
            "--database-url" => a.url = value()?,
            "--pool-size" => a.pool_size = num(value()?)?.max(1) as usize,
            "--query-timeout" => a.query_timeout = num(value()?)?.max(1),
            "-h" | "--help" => {
                println!(
                    "techempower [--addr ADDR] [--port PORT] [--workers N] \
                     [--database-url URL] [--pool-size N] [--query-timeout SECONDS]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown flag {other} (--help lists them)")),
        }
    }
    Ok(a)
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| {
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
    if let Err(e) = server.run(app::handler(pool)) {
        eprintln!("techempower: {e}");
        std::process::exit(1);
    }
}
