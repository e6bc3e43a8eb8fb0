//! End to end against Pebble, Let's Encrypt's test ACME server: certificates issued over
//! http-01 and tls-alpn-01 and served by fibra's HTTPS server, reused after a restart,
//! renewed, and the fallbacks when a challenge fails or the server cannot be reached.
//!
//! Pebble and pebble-challtestsrv come from `$PEBBLE_BIN_DIR`, else `$(go env GOPATH)/bin`
//! (`.ci/install-pebble` puts them there); without them these tests print `SKIPPED` and pass.
//! Each test runs its own Pebble, with challtestsrv as its DNS resolving every name to
//! 127.0.0.1, where the test's servers answer the challenges.

mod pebble_util;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fibra_acme::{Acme, AcmeConfig, ChallengeKind, Served, Status};
use pebble_util::{spare_port, wait_for, Pebble, Site, TempDir, Wiring};

/// Pebble's default profile: 90 days.
const DEFAULT_PROFILE: (&str, u64) = ("default", 90 * 86_400);

/// A prepared Pebble, or `None` after printing why the test is skipped.
fn pebble(name: &str) -> Option<Pebble> {
    match Pebble::new(name) {
        Ok(p) => Some(p),
        Err(why) => {
            println!("SKIPPED: {why}");
            None
        }
    }
}

fn config(pebble: &Pebble, storage: &Path, challenges: Vec<ChallengeKind>) -> AcmeConfig {
    let mut config = AcmeConfig::new(pebble.directory(), storage);
    config.ca = Some(pebble.ca.clone());
    config.contact = vec!["mailto:admin@example.com".into()];
    config.challenges = challenges;
    config
}

fn names(first: &str) -> Vec<String> {
    vec![first.to_owned(), format!("www.{first}")]
}

/// Waits until `check` accepts the status, and returns it.
fn wait_status(
    managed: &fibra_acme::Managed,
    what: &str,
    check: impl Fn(&Status) -> bool,
) -> Status {
    wait_for(what, || Some(managed.status()).filter(|s| check(s)))
}

/// A first certificate over `kind`, served with `wiring`: at once the self-signed fallback,
/// then the CA's, which chains to Pebble's root and covers every name.
fn first_issue(test: &str, kind: ChallengeKind, wiring: Wiring, name: &str) {
    let Some(mut pebble) = pebble(test) else {
        return;
    };
    let storage = pebble.dir.0.join("acme");
    let acme = Acme::new(config(&pebble, &storage, vec![kind])).unwrap();
    let site = Site::start(&acme, wiring);
    pebble.start(site.http_port(), site.tls_port(), &[DEFAULT_PROFILE]);

    let managed = acme.manage(names(name), site.on_cert()).unwrap();
    assert_eq!(
        site.installs(),
        1,
        "the fallback is installed before manage returns"
    );
    let issued = wait_status(&managed, "the issued certificate", |s| {
        s.served == Served::Issued
    });
    assert_eq!(issued.last_error, None);
    assert!(issued.not_after.unwrap() > SystemTime::now() + Duration::from_secs(80 * 86_400));
    assert_eq!(site.installs(), 2);

    let root = pebble.root();
    for n in names(name) {
        site.verified_handshake(&n, &root)
            .unwrap_or_else(|e| panic!("{n}: {e}"));
    }
    assert_eq!(site.served_leaf(name), managed.certified_key().cert[0]);
    assert_eq!(
        site.installed.lock().unwrap()[1],
        managed.certified_key().cert[0]
    );

    // Stored: the key private, the folders too.
    let dir = std::fs::read_dir(&storage)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let cert_dir = std::fs::read_dir(dir.join("certificates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(&format!("{name}+"))
        })
        .expect("the certificate's folder");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&cert_dir.join("key.pem")), 0o600);
    assert_eq!(mode(&cert_dir), 0o700);
    assert_eq!(mode(&dir.join("account.key")), 0o600);
    // The account URL beside the key, for the next start.
    let account: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("account.json")).unwrap()).unwrap();
    let url = account["url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("https://127.0.0.1:{}/", pebble.acme_port)),
        "{url}"
    );
}

#[test]
fn issues_over_http01() {
    first_issue(
        "http01",
        ChallengeKind::Http01,
        Wiring::Resolver,
        "http01.example.com",
    );
}

#[test]
fn issues_over_tls_alpn01() {
    first_issue(
        "alpn",
        ChallengeKind::TlsAlpn01,
        Wiring::Resolver,
        "alpn.example.com",
    );
}

#[test]
fn issues_over_tls_alpn01_with_a_configuration_chosen_per_client_hello() {
    first_issue(
        "alpn-choosing",
        ChallengeKind::TlsAlpn01,
        Wiring::Choosing,
        "choosing.example.com",
    );
}

#[test]
fn a_restart_serves_the_stored_certificate_without_the_ca() {
    let Some(mut pebble) = pebble("restart") else {
        return;
    };
    let storage = pebble.dir.0.join("acme");
    let config = config(&pebble, &storage, vec![ChallengeKind::Http01]);
    let acme = Acme::new(config.clone()).unwrap();
    let site = Site::start(&acme, Wiring::Resolver);
    pebble.start(site.http_port(), site.tls_port(), &[DEFAULT_PROFILE]);
    let managed = acme
        .manage(names("restart.example.com"), site.on_cert())
        .unwrap();
    let issued = wait_status(&managed, "the issued certificate", |s| {
        s.served == Served::Issued
    });
    let leaf = managed.certified_key().cert[0].clone();
    drop((managed, site, acme));

    // The CA is gone: a new order would fail, and show in the status.
    pebble.kill();
    let acme = Acme::new(config).unwrap();
    let site = Site::start(&acme, Wiring::Resolver);
    let managed = acme
        .manage(names("restart.example.com"), site.on_cert())
        .unwrap();
    let status = managed.status();
    assert_eq!(status.served, Served::Stored);
    assert_eq!(status.not_after, issued.not_after);
    assert_eq!(status.last_error, None);
    // Not due before 2/3 of 90 days.
    let due = status.next_attempt.unwrap();
    assert!(due > SystemTime::now() + Duration::from_secs(50 * 86_400));
    assert_eq!(site.installs(), 1);
    assert_eq!(site.served_leaf("restart.example.com"), leaf);
}

#[test]
fn a_short_lived_certificate_is_renewed_and_kept_when_the_ca_goes_away() {
    let Some(mut pebble) = pebble("renew") else {
        return;
    };
    let storage = pebble.dir.0.join("acme");
    let mut config = config(&pebble, &storage, vec![ChallengeKind::Http01]);
    config.profile = Some("short".into());
    let acme = Acme::new(config).unwrap();
    let site = Site::start(&acme, Wiring::Resolver);
    // Two profiles: the order must ask for "short" to get it (Pebble picks one at random
    // for an order without a profile).
    pebble.start(
        site.http_port(),
        site.tls_port(),
        &[DEFAULT_PROFILE, ("short", 8)],
    );
    let managed = acme
        .manage(names("renew.example.com"), site.on_cert())
        .unwrap();
    let renewed = wait_status(&managed, "a renewal", |s| s.served == Served::Renewed);
    assert!(renewed.not_after.unwrap() < SystemTime::now() + Duration::from_secs(60));
    {
        let installed = site.installed.lock().unwrap();
        assert!(installed.len() >= 3, "fallback, issued, renewed");
        assert_ne!(installed[1], installed[2], "a new certificate");
    }

    // Without the CA, the next renewal fails: reported, and the last certificate stays.
    pebble.kill();
    let failed = wait_status(&managed, "the failed renewal", |s| s.last_error.is_some());
    assert_eq!(failed.served, Served::Renewed);
    let error = failed.last_error.unwrap();
    assert!(error.contains(&pebble.directory()), "{error}");
    let last = site.installed.lock().unwrap().last().unwrap().clone();
    assert_eq!(managed.certified_key().cert[0], last);
    assert_eq!(site.served_leaf("renew.example.com"), last);
}

#[test]
fn a_failed_challenge_is_reported_while_the_fallback_is_served() {
    let Some(mut pebble) = pebble("fail") else {
        return;
    };
    let storage = pebble.dir.0.join("acme");
    let acme = Acme::new(config(&pebble, &storage, vec![ChallengeKind::Http01])).unwrap();
    let site = Site::start(&acme, Wiring::Resolver);
    pebble.start(site.http_port(), site.tls_port(), &[DEFAULT_PROFILE]);
    // The name points where nothing listens on the http-01 port.
    pebble.add_a("unreachable.example.com", "127.0.0.2");

    let managed = acme
        .manage(vec!["unreachable.example.com".into()], site.on_cert())
        .unwrap();
    let failed = wait_status(&managed, "the failure", |s| s.last_error.is_some());
    assert_eq!(failed.served, Served::SelfSigned);
    assert_eq!(failed.failures, 1);
    let problem = failed.problem.expect("Pebble's problem document");
    assert_eq!(problem.kind, "urn:ietf:params:acme:error:connection");
    assert!(!problem.detail.is_empty());
    let error = failed.last_error.unwrap();
    assert!(
        error.contains("validating unreachable.example.com (http-01)")
            && error.contains("urn:ietf:params:acme:error:connection: "),
        "{error}"
    );
    assert!(failed.next_attempt.unwrap() > SystemTime::now());
    assert_eq!(site.installs(), 1);
    assert_eq!(
        site.served_leaf("unreachable.example.com"),
        site.installed.lock().unwrap()[0]
    );
}

#[test]
fn an_unreachable_directory_leaves_the_fallback_and_says_why() {
    // No Pebble: the directory's port has nothing behind it. Runs everywhere.
    let tmp = TempDir::new("unreachable");
    let ca = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    std::fs::write(tmp.0.join("ca.pem"), ca.cert.pem()).unwrap();
    let directory = format!("https://127.0.0.1:{}/dir", spare_port());
    let mut config = AcmeConfig::new(directory.clone(), tmp.0.join("acme"));
    config.ca = Some(tmp.0.join("ca.pem"));
    let acme = Acme::new(config).unwrap();
    let site = Site::start(&acme, Wiring::Resolver);
    let managed = acme
        .manage(vec!["offline.example.com".into()], site.on_cert())
        .unwrap();
    assert_eq!(managed.status().served, Served::SelfSigned);
    let failed = wait_status(&managed, "the failure", |s| s.last_error.is_some());
    assert_eq!(failed.served, Served::SelfSigned);
    assert_eq!(failed.problem, None);
    let error = failed.last_error.unwrap();
    assert!(
        error.starts_with(&format!("GET {directory}: connecting to 127.0.0.1:")),
        "{error}"
    );
    assert_eq!(
        site.served_leaf("offline.example.com"),
        site.installed.lock().unwrap()[0]
    );

    // Dropping the handle ends the thread (waiting out its backoff): it lets go of on_cert.
    drop(managed);
    let installed = site.installed.clone();
    wait_for("the background thread to end", || {
        (Arc::strong_count(&installed) == 2).then_some(())
    });
}

#[test]
fn the_acme_tls_protocol_names_agree() {
    assert_eq!(fibra_acme::ACME_TLS_ALPN, fibra_http::tls::ALPN_ACME_TLS);
}
