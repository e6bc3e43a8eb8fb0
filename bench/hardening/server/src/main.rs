//! The hardening scripts' server: `GET /plaintext` → `Hello, World!` and `/echo` (the
//! request body back), with every limit
//! settable from the command line, and on SIGINT/SIGTERM a graceful shutdown after which it
//! prints `handled N` (the number of handler calls), so a script can check that no request
//! the server accepted was lost.
//!
//! Usage: `fibra-hardening-server [--port P] [--workers N] [--max-connections N]
//! [--idle-timeout S] [--header-timeout S] [--body-timeout S] [--write-timeout S] [--grace S]`

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fibra_http::{Request, Response, Server, Settings};

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().unwrap_or_else(|_| panic!("bad value for {name}")))
        .unwrap_or(default)
}

/// Blocks SIGINT and SIGTERM in this thread (and the threads it starts later), so they can
/// be taken with `sigwait` instead of killing the process.
fn block_signals() -> libc::sigset_t {
    // SAFETY: `set` is a plain C struct that sigemptyset initialises before any other use;
    // the pointers passed are to live locals.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let secs = |name, default| Duration::from_secs_f64(arg(&args, name, default));
    let settings = Settings {
        max_connections: arg(&args, "--max-connections", 10_000),
        idle_timeout: secs("--idle-timeout", 60.0),
        header_timeout: secs("--header-timeout", 10.0),
        write_timeout: secs("--write-timeout", 30.0),
        body_read_timeout: secs("--body-timeout", 30.0),
        ..Settings::default()
    };
    let grace = secs("--grace", 5.0);
    let set = block_signals();
    let handled = Arc::new(AtomicU64::new(0));
    let h = handled.clone();
    let server = Server::bind(("127.0.0.1", arg(&args, "--port", 8080u16)))
        .workers(arg(&args, "--workers", 1))
        .settings(settings)
        .serve(move |mut req: Request| {
            h.fetch_add(1, Ordering::Relaxed);
            match req.uri().path() {
                "/plaintext" => Response::new("Hello, World!".into()),
                "/echo" => match req.body_mut().read_to_vec(1 << 20) {
                    Ok(body) => Response::new(body.into()),
                    Err(e) => Response::new(format!("body error: {e}\n").into()),
                },
                _ => {
                    let mut r = Response::new("not found".into());
                    *r.status_mut() = http::StatusCode::NOT_FOUND;
                    r
                }
            }
        })?;
    println!("listening on {}", server.local_addr());
    let mut sig = 0;
    // SAFETY: `set` was initialised by `block_signals`; `sig` is a live local.
    unsafe { libc::sigwait(&set, &mut sig) };
    server.shutdown(grace);
    println!("handled {}", handled.load(Ordering::Relaxed));
    Ok(())
}
