//! The example site file `deploy/site/fibra.toml` stays valid: it loads, and everything it
//! names on disk (file roots, certificates and keys, the htpasswd file, error pages) is read
//! as `fibra serve --check-config` reads it, relative to the file. Its commented-out ACME
//! part is read and checked too, uncommented (as the site file's schema checks it; serving
//! it would order from the CA). Listening addresses are not bound here.

use std::path::{Path, PathBuf};

use fibra_site::config::{self, Action, Tls};

/// The line after which the example's ACME part is commented out.
const ACME_MARKER: &str = "# ACME example: uncomment from here to the end of the file";

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/site/fibra.toml")
}

#[test]
fn the_example_site_file_loads_and_its_files_are_there() {
    let path = example();
    let config = config::load(&path).unwrap_or_else(|e| panic!("{e}"));
    fibra_site::check_files(&config).unwrap_or_else(|e| panic!("{e}"));

    // What the example is there to show.
    assert_eq!(config.sites.len(), 3);
    assert!(config.acme.is_none(), "the ACME part is commented out");
    let proxy = config
        .sites
        .iter()
        .flat_map(|s| &s.routes)
        .find_map(|r| match &r.action {
            Some(Action::Proxy(p)) => Some(p),
            _ => None,
        })
        .expect("a proxy route");
    assert_eq!(proxy.upstreams.len(), 2);
    assert!(proxy.health.is_some());
    let tls = config.sites.iter().find(|s| s.tls.is_some()).unwrap();
    assert!(!tls.redirect_http.is_empty());
    assert!(config
        .sites
        .iter()
        .flat_map(|s| &s.routes)
        .any(|r| r.basic_auth.is_some() && !r.allow.is_empty() && r.rate_limit.is_some()));
}

#[test]
fn the_commented_acme_part_is_valid_once_uncommented() {
    let path = example();
    let text = std::fs::read_to_string(&path).unwrap();
    let (head, tail) = text
        .split_once(ACME_MARKER)
        .expect("the ACME part's marker line");
    let tail = tail.split_once('\n').map_or("", |(_, rest)| rest);
    let mut uncommented = String::from(head);
    for line in tail.lines() {
        let line = line.strip_prefix('#').unwrap_or(line);
        uncommented.push_str(line.strip_prefix(' ').unwrap_or(line));
        uncommented.push('\n');
    }
    let config = config::parse(&path, &uncommented).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.sites.len(), 4);
    assert!(config.acme.is_some());
    assert_eq!(config.sites[3].tls, Some(Tls::Acme));
}
