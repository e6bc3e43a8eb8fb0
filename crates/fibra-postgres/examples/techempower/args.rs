//! The example's flags, with their defaults (see `main.rs`).

/// What the flags say.
pub struct Args {
    /// The address to listen on.
    pub addr: String,
    /// The port.
    pub port: u16,
    /// Worker threads (one per core when not given).
    pub workers: Option<usize>,
    /// The database URL.
    pub url: String,
    /// Connections per worker.
    pub pool_size: usize,
    /// Seconds a query may take.
    pub query_timeout: u64,
}

/// Reads the flags (without the program name).
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut a = Args {
        addr: "127.0.0.1".into(),
        port: 8080,
        workers: None,
        url: "postgres://benchmarkdbuser:benchmarkdbpass@127.0.0.1:5432/hello_world".into(),
        pool_size: fibra_postgres::DEFAULT_POOL_SIZE,
        query_timeout: 5,
    };
    let mut it = args.into_iter();
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
