//! Reloading a site file swaps the whole configuration for new requests; a request in flight
//! finishes on the configuration it started with (here: a proxied request whose route the
//! reload removes), and a file that does not build leaves the old one serving.

mod site_util;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fibra_http::{Request, Response, Server};
use site_util::{body, get, serve, status, Dir};

#[test]
fn requests_in_flight_finish_on_the_old_configuration() {
    // An upstream that answers once the test says so.
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (arrived_tx, arrived_rx) = mpsc::channel::<()>();
    let go_rx = Arc::new(Mutex::new(go_rx));
    let arrived_tx = Mutex::new(arrived_tx);
    let upstream = Server::bind("127.0.0.1:0")
        .workers(1)
        .serve(move |_req: Request| {
            let _ = arrived_tx.lock().unwrap().send(());
            // Blocks this upstream's worker: the test's only request to it.
            let _ = go_rx.lock().unwrap().recv_timeout(Duration::from_secs(30));
            Response::new("slow answer\n".into())
        })
        .unwrap();
    let dir = Dir::new("reload-inflight");
    let with_proxy = format!(
        "[[site]]\nlisten = [\"LISTEN\"]\ndefault = true\n[[site.route]]\npath = \"/\"\nrespond = {{ body = \"one\\n\" }}\n\
         [[site.route]]\npath = \"/slow/\"\nproxy = {{ upstreams = [\"http://{}\"] }}\n",
        upstream.local_addr()
    );
    let (live, server, addr) = serve(&dir, &with_proxy);
    let in_flight = std::thread::spawn(move || get(addr, "x", "/slow/x", ""));
    arrived_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the request reached the upstream");

    // The route goes; the answer changes for new requests at once.
    let listen = live.current().config.sites[0].listen[0].to_string();
    let file = dir.write(
        "site.toml",
        format!("[[site]]\nlisten = [\"{listen}\"]\ndefault = true\n[[site.route]]\npath = \"/\"\nrespond = {{ body = \"two\\n\" }}\n"),
    );
    live.reload(fibra_site::config::load(&file).unwrap())
        .unwrap();
    assert_eq!(body(&get(addr, "x", "/", "")), "two\n");
    assert_eq!(
        body(&get(addr, "x", "/slow/x", "")),
        "two\n",
        "no /slow/ route now"
    );

    // The request that started before still gets its upstream's answer.
    go_tx.send(()).unwrap();
    let r = in_flight.join().unwrap();
    assert_eq!((status(&r), body(&r)), (200, "slow answer\n"), "{r}");

    // A file that does not build (a missing root) changes nothing.
    let bad = dir.write(
        "bad.toml",
        format!("[[site]]\nlisten = [\"{listen}\"]\ndefault = true\n[[site.route]]\npath = \"/\"\nfiles = {{ root = \"missing\" }}\n"),
    );
    let err = live
        .reload(fibra_site::config::load(&bad).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("site[0].route[0].files.root") && err.contains("missing"),
        "{err}"
    );
    assert_eq!(body(&get(addr, "x", "/", "")), "two\n");
    server.shutdown(Duration::from_secs(5));
    upstream.shutdown(Duration::from_secs(5));
}
