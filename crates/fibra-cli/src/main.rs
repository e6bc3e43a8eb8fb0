//! The `fibra` binary: `fibra serve` (static files), `fibra hello` (the benchmark app) and
//! `fibra bench` (a load generator).
//!
//! ```text
//! fibra serve [DIR] [--port 8080]     serve DIR (default: the current directory)
//! fibra hello [--port 8080]           /plaintext, /json, /echo
//! fibra bench -c 256 -k -d 10s URL    load a server, weighttp-style report
//! ```

mod bench;
mod hello;
mod serve;
mod server_flags;
mod signals;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// mimalloc instead of glibc's malloc: the `http` types allocate a few small objects per
/// request (header maps), and glibc's free path was ~15% of `fibra hello`'s user-space
/// instructions per request under callgrind; mimalloc's thread-local free lists fit a
/// thread-per-core server.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// fibra: an HTTP/1.1 server stack on stackful fibers.
#[derive(Parser, Debug)]
#[command(name = "fibra", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve a directory over HTTP (static file server).
    Serve(serve::ServeArgs),
    /// Run the benchmark app: GET /plaintext, GET /json, /echo.
    Hello(hello::HelloArgs),
    /// Load an HTTP server and report throughput and latency (weighttp/wrk's job).
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => report(serve::run(args)),
        Command::Hello(args) => report(hello::run(args)),
        Command::Bench(args) => bench::run(args),
    }
}

fn report(result: std::io::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fibra: error: {e}");
            ExitCode::FAILURE
        }
    }
}
