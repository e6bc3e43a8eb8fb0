//! A TCP echo server: one fiber per connection, written as plainly as with std threads.
//!
//! ```text
//! cargo run --release -p fibra --example echo -- 127.0.0.1:7000
//! ```

use fibra::net::TcpListener;
use std::io::{Read, Write};

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7000".into());
    let rt = fibra::Runtime::new()?;
    rt.block_on(move || -> std::io::Result<()> {
        let listener = TcpListener::bind(addr.as_str())?;
        println!("echo server listening on {}", listener.local_addr()?);
        loop {
            let (mut conn, peer) = match listener.accept() {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("accept: {e}");
                    fibra::time::sleep(std::time::Duration::from_millis(100));
                    continue;
                }
            };
            fibra::spawn(move || {
                let mut buf = [0u8; 4096];
                loop {
                    match conn.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            if conn.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                        Err(e) => {
                            eprintln!("{peer}: {e}");
                            break;
                        }
                    }
                }
            });
        }
    })
}
