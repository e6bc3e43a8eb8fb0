//! A throw-away PostgreSQL cluster for the integration tests: `initdb` in a temporary
//! directory (as the `postgres` user when the tests run as root), started on a free loopback
//! port with its Unix socket in the same directory, stopped and removed on drop. TechEmpower's
//! user, database, schema and data are loaded (`examples/techempower/schema.sql`).
//!
//! When the PostgreSQL server binaries are not installed, [`Cluster::start`] prints why and
//! returns `None`, and the test returns early (CI installs them: `.ci/run`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

/// The database user TechEmpower's tests use, and its password.
pub const USER: &str = "benchmarkdbuser";
pub const PASSWORD: &str = "benchmarkdbpass";

/// A running cluster; stopped and deleted on drop.
pub struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    pub port: u16,
    as_postgres: bool,
}

/// The directory holding `initdb`, `pg_ctl` and `psql`, if PostgreSQL is installed.
pub fn bin_dir() -> Option<PathBuf> {
    if let Ok(d) = std::env::var("PG_BINDIR") {
        return Some(PathBuf::from(d));
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").exists() && b.join("pg_ctl").exists())
        .collect();
    // The newest version (directories are named by major version).
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found.pop()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

impl Cluster {
    /// Starts a cluster, or returns None (after saying why) when PostgreSQL is not installed.
    pub fn start() -> Option<Cluster> {
        let Some(bin) = bin_dir() else {
            eprintln!(
                "SKIPPED: the PostgreSQL server binaries (initdb, pg_ctl) are not installed \
                 (Debian: apt-get install postgresql); this test needs a real server"
            );
            return None;
        };
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "fibra-pg-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the cluster directory");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let mut c = Cluster {
            bin,
            dir,
            port: 0,
            as_postgres: is_root(),
        };
        c.run_ok(
            "initdb",
            &[
                "-D",
                &c.data(),
                "-U",
                "postgres",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        );
        c.port = fibra_testkit::spare_port();
        c.start_server();
        c.psql(
            "postgres",
            "postgres",
            &format!("CREATE USER {USER} WITH PASSWORD '{PASSWORD}'"),
        );
        c.psql(
            "postgres",
            "postgres",
            &format!("CREATE DATABASE hello_world OWNER {USER}"),
        );
        // Copied into the cluster's directory, which the postgres user can read.
        let schema = c.dir.join("schema.sql");
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/techempower/schema.sql"),
            &schema,
        )
        .unwrap();
        std::fs::set_permissions(&schema, std::fs::Permissions::from_mode(0o644)).unwrap();
        c.psql_args(USER, "hello_world", &["-f", &schema.display().to_string()]);
        Some(c)
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    fn socket_dir(&self) -> String {
        self.dir.display().to_string()
    }

    fn command(&self, tool: &str) -> Command {
        let path = self.bin.join(tool);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        }
    }

    fn run_ok(&self, tool: &str, args: &[&str]) -> Output {
        let out = self
            .command(tool)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("run {tool}: {e}"));
        assert!(
            out.status.success(),
            "{tool} {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Starts the server (again, after [`Cluster::stop`]) and waits until it accepts.
    pub fn start_server(&self) {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off -c shared_buffers=32MB -c max_connections=60",
            self.port,
            self.socket_dir()
        );
        let log = self.dir.join("server.log").display().to_string();
        self.run_ok(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-o",
                &opts,
                "-l",
                &log,
                "-w",
                "-t",
                "120",
                "start",
            ],
        );
    }

    /// Stops the server (fast shutdown: sessions are ended, the port closes).
    pub fn stop(&self) {
        self.run_ok(
            "pg_ctl",
            &["-D", &self.data(), "-m", "fast", "-w", "-t", "120", "stop"],
        );
    }

    /// Runs `sql` with psql over the Unix socket (trusted) as `user` on `db`; returns stdout.
    pub fn psql(&self, user: &str, db: &str, sql: &str) -> String {
        self.psql_args(user, db, &["-c", sql])
    }

    fn psql_args(&self, user: &str, db: &str, extra: &[&str]) -> String {
        let port = self.port.to_string();
        let socket_dir = self.socket_dir();
        let mut args = vec![
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            &socket_dir,
            "-p",
            &port,
            "-U",
            user,
            "-d",
            db,
        ];
        args.extend_from_slice(extra);
        let out = self.run_ok("psql", &args);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// TechEmpower's URL: the benchmark user over TCP (SCRAM-SHA-256).
    pub fn url(&self) -> String {
        format!(
            "postgres://{USER}:{PASSWORD}@127.0.0.1:{}/hello_world",
            self.port
        )
    }

    /// The superuser over the Unix socket (trusted, no password).
    pub fn socket_url(&self) -> String {
        format!(
            "postgres://postgres@/hello_world?host={}&port={}",
            self.socket_dir(),
            self.port
        )
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .args(["-D", &self.data(), "-m", "immediate", "-w", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
