//! [`Group`]: a route's upstreams, how it balances over them, and their state, shared by the
//! workers; [`Lease`], a request's hold on the upstream it was given.
//!
//! Each upstream's state ([`MemberState`]) is behind an `Arc`: a response body that streams
//! after the handler returned (and a tunnel) keeps its upstream counted as busy until it
//! ends, and the checker threads hold the state weakly. The [`Upstream`] itself (addresses,
//! connect backoff, pool id) stays the group's, so the proxy's builder can still change it.

use std::fmt;
use std::io;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rustls::ClientConfig;

use super::active::{self, Checkers};
use super::passive::PassiveState;
use super::{policy, ActiveHealth, Balance, Health, PassiveHealth, Policy, UpstreamState};
use crate::route::{self, Upstream};

/// One upstream's state, shared by the workers (and weakly by its checker thread).
#[derive(Debug)]
pub(crate) struct MemberState {
    /// Requests given this upstream that have not ended (groups of two or more only).
    in_flight: AtomicUsize,
    /// Failed requests counted against it.
    passive: PassiveState,
    /// What its last active check said (true until one said otherwise).
    active_up: AtomicBool,
    /// Why its last active check failed.
    active_why: Mutex<String>,
}

impl MemberState {
    fn new() -> MemberState {
        MemberState {
            in_flight: AtomicUsize::new(0),
            passive: PassiveState::default(),
            active_up: AtomicBool::new(true),
            active_why: Mutex::new(String::new()),
        }
    }

    /// Whether it may be chosen: neither a check nor failed requests took it out.
    fn is_up(&self) -> bool {
        self.active_up.load(Ordering::Relaxed) && self.passive.is_up()
    }

    /// Whether the last active check found it up (true before any).
    pub(crate) fn active_up(&self) -> bool {
        self.active_up.load(Ordering::Relaxed)
    }

    /// Records an active check: `Ok` marks the upstream up, and in again at once even if
    /// failed requests had taken it out (it answers); `Err` marks it down, saying why.
    pub(crate) fn set_active(&self, result: Result<(), String>) {
        match result {
            Ok(()) => {
                if self.passive.down_for().is_some() {
                    self.passive.clear();
                }
                self.active_up.store(true, Ordering::Relaxed);
            }
            Err(why) => {
                *self.active_why.lock().unwrap_or_else(|e| e.into_inner()) = why;
                self.active_up.store(false, Ordering::Relaxed);
            }
        }
    }

    fn release(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One upstream of a group.
#[derive(Debug)]
struct Member {
    upstream: Upstream,
    /// The URL as given.
    url: String,
    state: Arc<MemberState>,
}

/// Why no upstream could be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoneUp {
    /// Every upstream is out (by failed requests, or some by checks): `502`.
    Failing,
    /// Active checks found every upstream down: `503` with `Retry-After` this many seconds
    /// (the check interval, rounded up).
    Unhealthy {
        /// Seconds, at least 1.
        retry_after: u64,
    },
}

/// A route's upstreams and how requests are spread over them.
pub(crate) struct Group {
    /// The group's own id, for its lines in the error log.
    pub(crate) id: u64,
    members: Box<[Member]>,
    policy: Policy,
    passive: PassiveHealth,
    active: Option<ActiveHealth>,
    /// The round-robin counter (least-conn's ties and ip-hash without an address too).
    turn: AtomicUsize,
    /// One upstream and no checks: [`pick`](Self::pick) has nothing to decide.
    lone: bool,
    /// The checker threads, while there are some: stopped when the group is dropped.
    checkers: Option<Checkers>,
}

impl fmt::Debug for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let urls: Vec<&str> = self.members.iter().map(|m| m.url.as_str()).collect();
        f.debug_struct("Group")
            .field("upstreams", &urls)
            .field("policy", &self.policy)
            .field("passive", &self.passive)
            .field("active", &self.active)
            .finish_non_exhaustive()
    }
}

/// A request's hold on the upstream it was given: counted in flight (in a group of two or
/// more) until dropped.
#[derive(Debug)]
pub(crate) struct Lease<'a> {
    index: usize,
    upstream: &'a Upstream,
    counted: Option<&'a Arc<MemberState>>,
}

impl<'a> Lease<'a> {
    /// Which upstream of the group.
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// The upstream.
    pub(crate) fn upstream(&self) -> &'a Upstream {
        self.upstream
    }

    /// The same hold, for a response body or a tunnel that outlives the handler.
    pub(crate) fn into_owned(mut self) -> OwnedLease {
        OwnedLease(self.counted.take().cloned())
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(state) = self.counted {
            state.release();
        }
    }
}

/// A [`Lease`] that owns its count.
#[derive(Debug)]
pub(crate) struct OwnedLease(Option<Arc<MemberState>>);

impl Drop for OwnedLease {
    fn drop(&mut self) {
        if let Some(state) = &self.0 {
            state.release();
        }
    }
}

/// `d` in whole seconds, rounded up, at least 1.
fn whole_secs(d: std::time::Duration) -> u64 {
    (d.as_secs() + u64::from(d.subsec_nanos() > 0)).max(1)
}

impl Group {
    /// A group of `upstreams` (each with its URL as given), balanced by `balance`. Its checks,
    /// if any, start with [`start_checks`](Self::start_checks).
    pub(crate) fn new(upstreams: Vec<(Upstream, String)>, balance: Balance) -> Group {
        let upstreams_len = upstreams.len();
        Group {
            id: route::next_id(),
            members: upstreams
                .into_iter()
                .map(|(upstream, url)| Member {
                    upstream,
                    url,
                    state: Arc::new(MemberState::new()),
                })
                .collect(),
            lone: upstreams_len == 1 && balance.active.is_none(),
            policy: balance.policy,
            passive: balance.passive,
            active: balance.active,
            turn: AtomicUsize::new(0),
            checkers: None,
        }
    }

    /// Starts the active checks, if the group has them (`tls` for `https://` upstreams).
    pub(crate) fn start_checks(&mut self, tls: Option<&Arc<ClientConfig>>) -> io::Result<()> {
        let Some(health) = &self.active else {
            return Ok(());
        };
        let members: Vec<_> = self
            .members
            .iter()
            .map(|m| (&m.upstream, m.url.as_str(), &m.state))
            .collect();
        self.checkers = Some(active::start(&members, health, tls)?);
        Ok(())
    }

    /// Its upstreams (for the builder to change their connect backoff).
    pub(crate) fn upstreams_mut(&mut self) -> impl Iterator<Item = &mut Upstream> {
        self.members.iter_mut().map(|m| &mut m.upstream)
    }

    /// How many upstreams it has.
    pub(crate) fn len(&self) -> usize {
        self.members.len()
    }

    /// Its upstreams' `HOST:PORT`s, for messages.
    pub(crate) fn authorities(&self) -> String {
        let all: Vec<&str> = self
            .members
            .iter()
            .map(|m| m.upstream.authority.as_str())
            .collect();
        all.join(", ")
    }

    /// An upstream for a request from `client` (asked for ip-hash only) by the group's
    /// policy, other than `except` (the one a retried request failed on). A group of one
    /// gives its upstream unless a check found it down, with no policy and no count.
    pub(crate) fn pick(
        &self,
        client: impl FnOnce() -> Option<IpAddr>,
        except: Option<usize>,
    ) -> Result<Lease<'_>, NoneUp> {
        // `route`'s path: as cheap as it was before groups.
        if self.lone && except.is_none() {
            return Ok(Lease {
                index: 0,
                upstream: &self.members[0].upstream,
                counted: None,
            });
        }
        if self.members.len() == 1 {
            if except.is_some() || !self.members[0].state.active_up() {
                return Err(self.none_up());
            }
            return Ok(Lease {
                index: 0,
                upstream: &self.members[0].upstream,
                counted: None,
            });
        }
        let members = &self.members;
        let found = policy::pick(
            self.policy,
            members.len(),
            &self.turn,
            client,
            |i| except != Some(i) && members[i].state.is_up(),
            |i| members[i].state.in_flight.load(Ordering::Relaxed),
        );
        match found {
            Some(i) => {
                let state = &members[i].state;
                state.in_flight.fetch_add(1, Ordering::Relaxed);
                Ok(Lease {
                    index: i,
                    upstream: &members[i].upstream,
                    counted: Some(state),
                })
            }
            None => Err(self.none_up()),
        }
    }

    /// Why no upstream is up.
    #[cold]
    fn none_up(&self) -> NoneUp {
        match &self.active {
            Some(health) if self.members.iter().all(|m| !m.state.active_up()) => {
                NoneUp::Unhealthy {
                    retry_after: whole_secs(health.interval),
                }
            }
            _ => NoneUp::Failing,
        }
    }

    /// The upstream of `lease` answered (with a response head).
    pub(crate) fn succeeded(&self, lease: &Lease<'_>) {
        if let Some(state) = lease.counted {
            state.passive.succeeded();
        }
    }

    /// A request on the upstream of `lease` failed before its response head (`why` says how,
    /// asked only if this takes the upstream out, which is logged). Not counted in a group
    /// of one.
    #[cold]
    pub(crate) fn failed(&self, lease: &Lease<'_>, why: impl FnOnce() -> String) {
        if lease.counted.is_none() {
            return;
        }
        let m = &self.members[lease.index];
        if let Some(n) = m.state.passive.failed(&self.passive, why) {
            log::warn!(
                "upstream {}: out for {} s after {n} failed request{} within it: {}",
                m.url,
                self.passive.fail_timeout.as_secs_f64(),
                if n == 1 { "" } else { "s" },
                m.state.passive.why()
            );
        }
    }

    /// The state of each upstream, for [`crate::Proxy::upstream_states`].
    pub(crate) fn states(&self, prefix: &str) -> Vec<UpstreamState> {
        let counted = self.members.len() > 1;
        self.members
            .iter()
            .map(|m| {
                let s = &m.state;
                let backoff = m.upstream.down.failures();
                let health = if self.active.is_some() && !s.active_up() {
                    let why = s.active_why.lock().unwrap_or_else(|e| e.into_inner());
                    Health::Down(format!("health check: {why}"))
                } else if let Some(left) = s.passive.down_for().filter(|_| counted) {
                    Health::Down(format!(
                        "{}; out for another {:.1} s",
                        s.passive.why(),
                        left.as_secs_f64()
                    ))
                } else if backoff > 0 {
                    Health::Down(format!(
                        "{backoff} connects failed in a row; dialled again with backoff"
                    ))
                } else {
                    Health::Up
                };
                UpstreamState {
                    prefix: prefix.to_owned(),
                    url: m.url.clone(),
                    health,
                    in_flight: counted.then(|| s.in_flight.load(Ordering::Relaxed)),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn group(n: usize, balance: Balance) -> Group {
        let upstreams = (0..n)
            .map(|i| {
                let url = format!("http://127.0.0.1:{}/", 1000 + i);
                (Upstream::parse(&url).unwrap(), url)
            })
            .collect();
        Group::new(upstreams, balance)
    }

    #[test]
    fn leases_count_requests_in_flight_until_dropped() {
        let g = group(2, Balance::default());
        let a = g.pick(|| None, None).unwrap();
        let b = g.pick(|| None, None).unwrap();
        assert_eq!((a.index(), b.index()), (0, 1));
        let owned = b.into_owned();
        let in_flight =
            |g: &Group| -> Vec<_> { g.states("/").iter().map(|s| s.in_flight).collect() };
        assert_eq!(in_flight(&g), [Some(1), Some(1)]);
        drop(a);
        assert_eq!(in_flight(&g), [Some(0), Some(1)]);
        drop(owned);
        assert_eq!(in_flight(&g), [Some(0), Some(0)]);
    }

    #[test]
    fn a_group_of_one_is_never_out_by_failures_nor_counted() {
        let g = group(1, Balance::default());
        for _ in 0..3 {
            let lease = g.pick(|| None, None).unwrap();
            g.failed(&lease, || "refused".into());
        }
        assert!(g.pick(|| None, None).is_ok());
        assert_eq!(g.pick(|| None, Some(0)).unwrap_err(), NoneUp::Failing);
        let states = g.states("/");
        assert_eq!(states[0].health, Health::Up);
        assert_eq!(states[0].in_flight, None);
    }

    #[test]
    fn failures_take_an_upstream_out_and_a_check_brings_it_back() {
        let g = group(2, Balance::default());
        let lease = g.pick(|| None, Some(1)).unwrap();
        assert_eq!(lease.index(), 0);
        g.failed(&lease, || "connecting: refused".into());
        drop(lease);
        for _ in 0..4 {
            assert_eq!(g.pick(|| None, None).unwrap().index(), 1);
        }
        assert_eq!(g.pick(|| None, Some(1)).unwrap_err(), NoneUp::Failing);
        match &g.states("/")[0].health {
            Health::Down(why) => assert!(why.starts_with("connecting: refused; out for"), "{why}"),
            h => panic!("{h:?}"),
        }
        g.members[0].state.set_active(Ok(()));
        assert_eq!(g.pick(|| None, Some(1)).unwrap().index(), 0);
    }

    #[test]
    fn all_down_by_checks_is_unhealthy_with_the_interval_rounded_up() {
        let active = ActiveHealth {
            interval: Duration::from_millis(1500),
            ..ActiveHealth::default()
        };
        let g = group(
            2,
            Balance {
                active: Some(active),
                ..Balance::default()
            },
        );
        g.members[0]
            .state
            .set_active(Err("GET / answered 503".into()));
        assert_eq!(g.pick(|| None, None).unwrap().index(), 1);
        let lease = g.pick(|| None, None).unwrap();
        g.failed(&lease, || "reset".into());
        drop(lease);
        assert_eq!(g.pick(|| None, None).unwrap_err(), NoneUp::Failing);
        g.members[1].state.set_active(Err("refused".into()));
        assert_eq!(
            g.pick(|| None, None).unwrap_err(),
            NoneUp::Unhealthy { retry_after: 2 }
        );
        assert_eq!(
            g.states("/")[0].health,
            Health::Down("health check: GET / answered 503".into())
        );
        assert_eq!(whole_secs(Duration::from_millis(10)), 1);
        assert_eq!(whole_secs(Duration::from_secs(3)), 3);
    }
}
