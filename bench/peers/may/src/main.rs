//! may_minihttp peer for the fibra benchmark harness: GET /plaintext -> "Hello, World!",
//! one may worker thread (one io worker). Arg: port.

use std::io;

use may_minihttp::{HttpServer, HttpService, Request, Response};

#[derive(Clone)]
struct Hello;

impl HttpService for Hello {
    fn call(&mut self, req: Request, rsp: &mut Response) -> io::Result<()> {
        if req.path() == "/plaintext" {
            rsp.header("Content-Type: text/plain").body("Hello, World!");
        } else {
            rsp.status_code(404, "Not Found");
        }
        Ok(())
    }
}

fn main() {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(8080);
    may::config()
        .set_workers(1)
        .set_pool_capacity(1000)
        .set_stack_size(0x4000);
    let server = HttpServer(Hello)
        .start(("127.0.0.1", port))
        .expect("start may_minihttp");
    server.join().expect("may_minihttp server");
}
