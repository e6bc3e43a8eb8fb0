//! The `fibra` binary: `fibra serve` (static files), `fibra hello` (the benchmark app) and
//! `fibra bench` (a load generator).
//!
//! ```text
//! fibra serve [DIR] [--port 8080]     serve DIR (default: the current directory)
//! fibra hello [--port 8080]           /plaintext, /json, /echo
//! fibra bench -c 256 -k -d 10s URL    load a server, weighttp-style report
//! ```
//!
//! Modules: `serve` and `hello` (the two servers), `proxy_flags` (`serve --proxy`),
//! `server_flags` (the flags they share: port, workers, limits, graceful shutdown on a
//! signal), `error_log` (`--error-log`: the `log` facade's records to a file or stderr),
//! `signals` (SIGINT/SIGTERM, SIGHUP), `output` (a command's output to stdout), and
//! `bench/` (the load generator: arguments, connections on fibers, statistics, the report;
//! responses are parsed by `fibra_http::client`).

/// Prints a server's line (its address, a reload) to stdout. A server outlives whoever reads
/// its stdout (`fibra hello | head -1`, a test that reads the address and stops): a write
/// to a closed stdout is ignored, where `println!` would panic and end the process.
macro_rules! announce {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// Prints a server's message (a signal taken, a reload's outcome, an error) to stderr, where
/// a write that fails is ignored, as [`announce!`] does for stdout: `eprintln!` panics on a
/// stderr whose reader has gone (a log pipe that broke), and a panic in the signal loop
/// ended the process at the next SIGHUP or SIGTERM, without draining.
macro_rules! stderr_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod bench;
mod endpoints;
mod error_log;
mod hello;
mod http3;
mod http3_handover;
mod listeners;
mod output;
mod proxy_flags;
mod serve;
mod server_flags;
mod signals;
mod site_http3;
mod site_listen;
mod site_reload;
mod site_serve;
mod site_start;
mod upgrade;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// mimalloc instead of glibc's malloc: the `http` types allocate a few small objects per
/// request (header maps), and glibc's free path was ~15% of `fibra hello`'s user-space
/// instructions per request under callgrind; mimalloc's thread-local free lists fit a
/// thread-per-core server.
#[global_allocator]
static GLOBAL: alloc::Mi = alloc::Mi;

mod alloc {
    use std::alloc::{GlobalAlloc, Layout};
    use std::ffi::c_void;

    use libmimalloc_sys as ffi;

    /// Alignment every mimalloc block has: blocks are sized in whole machine words and laid
    /// out from word-aligned page starts (`MI_INTPTR_SIZE`).
    const MIN_ALIGN: usize = std::mem::size_of::<usize>();

    /// Turns transparent huge pages off for this process, unless the operator set
    /// `MIMALLOC_ALLOW_THP` (mimalloc's own switch; `1` keeps them).
    ///
    /// mimalloc advises huge pages on its arenas (`MADV_HUGEPAGE`). Where the kernel grants
    /// them on advice (`transparent_hugepage/enabled` = `madvise`, Debian's default), the
    /// first touch of a 2 MiB range of the heap makes all of it resident. In a 30-minute
    /// soak, 21.8 MiB of the 28.8 MiB of huge pages in `fibra serve`'s heap held nothing but
    /// zeros, and a burst of connections raised RSS for good (by 5 to 25 MiB across runs).
    /// The kernel keeps the setting across `execve`: a SIGUSR2 upgrade inherits it.
    pub fn small_pages_only() {
        if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
            return;
        }
        // SAFETY: PR_SET_THP_DISABLE takes integers only and sets a flag of this process;
        // a kernel without it answers EINVAL, which leaves things as they were.
        let _ = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    }

    /// `mimalloc::MiMalloc` sends every request through `mi_malloc_aligned`, whose
    /// generic path costs ~50 instructions where `mi_malloc` takes ~20 (callgrind, four
    /// header-map allocations per `fibra hello` request); ordinary alignments take the plain
    /// entry points here.
    pub struct Mi;

    fn plain(layout: Layout) -> bool {
        layout.align() <= MIN_ALIGN
    }

    // SAFETY: every block comes from mimalloc and goes back to it; blocks from `mi_malloc`
    // are aligned to `MIN_ALIGN`, so the plain entry points are used only for layouts they
    // satisfy; the rest use the aligned ones.
    unsafe impl GlobalAlloc for Mi {
        #[inline]
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: FFI calls with a size (and an alignment the aligned call accepts).
            unsafe {
                if plain(layout) {
                    ffi::mi_malloc(layout.size()).cast()
                } else {
                    ffi::mi_malloc_aligned(layout.size(), layout.align()).cast()
                }
            }
        }

        #[inline]
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: as in `alloc`.
            unsafe {
                if plain(layout) {
                    ffi::mi_zalloc(layout.size()).cast()
                } else {
                    ffi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
                }
            }
        }

        #[inline]
        unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
            // SAFETY: `ptr` came from this allocator (the `GlobalAlloc` contract).
            unsafe { ffi::mi_free(ptr.cast::<c_void>()) }
        }

        #[inline]
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: `ptr` came from this allocator with `layout`; the new block keeps the
            // alignment (plain only when the alignment is at most `MIN_ALIGN`).
            unsafe {
                if plain(layout) {
                    ffi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
                } else {
                    ffi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
                }
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn blocks_meet_their_layout_through_realloc() {
            let mi = Mi;
            for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
                for size in [1, 3, 8, 13, 24, 40, 100, 1000, 70_000] {
                    let layout = Layout::from_size_align(size, align).unwrap();
                    // SAFETY: non-zero sizes; every block is freed with its layout.
                    unsafe {
                        let p = mi.alloc(layout);
                        assert!(!p.is_null());
                        assert_eq!(p as usize % align, 0, "alloc {size} align {align}");
                        p.write_bytes(0xa5, size);
                        let grown = mi.realloc(p, layout, size * 3);
                        assert_eq!(grown as usize % align, 0, "realloc {size} align {align}");
                        assert!((0..size).all(|i| *grown.add(i) == 0xa5), "contents kept");
                        mi.dealloc(grown, Layout::from_size_align(size * 3, align).unwrap());
                        let z = mi.alloc_zeroed(layout);
                        assert_eq!(z as usize % align, 0, "zalloc {size} align {align}");
                        assert!((0..size).all(|i| *z.add(i) == 0), "zeroed");
                        mi.dealloc(z, layout);
                    }
                }
            }
        }
    }
}

/// fibra: an HTTP/1.1 server stack on stackful fibers.
#[derive(Parser, Debug)]
#[command(name = "fibra", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once at start: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
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
    alloc::small_pages_only();
    let cli = Cli::parse();
    // Before any thread starts: these clear the variables they read.
    upgrade::init();
    if let Err(e) = listeners::take_inherited() {
        stderr_line!("fibra: error: {e}");
        return ExitCode::FAILURE;
    }
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
            stderr_line!("fibra: error: {e}");
            ExitCode::FAILURE
        }
    }
}
