// SPDX-License-Identifier: MPL-2.0
//! `prometheus-address`: the run's counters, latest scores, window means and alert states as
//! Prometheus series at `http://host:port/metrics`.
//!
//! An endpoint (a listening socket, a thread answering its requests, one registry of metric
//! families) exists once per address in the process: every element started with the same
//! `prometheus-address` (as written) joins it and adds its own series, labelled
//! `element="<name>"`. The endpoint is made when the first of them starts, and goes away
//! (thread stopped, port released) when the last of them stops; an element that stops
//! takes its series with it. Bind errors fail the element's start.
//!
//! The families are `prometheus-client`'s; the HTTP server is the few lines below (a scrape
//! is one GET), one thread per endpoint that answers one connection at a time and is
//! joined when the endpoint goes. GET `/metrics` gets the OpenMetrics text format when the
//! client accepts it (Prometheus does), else the Prometheus text format 0.0.4.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::{prometheus_text, text};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use super::{Env, Input, Pair, Sink};
use crate::gpumetrics::CAT;
use crate::message::{AlertChange, AlertState, AlignRecord, EventRecord, Window};
use crate::quote::quoted;

/// Upper bounds (seconds) of `gpumetrics_scoring_seconds`: 0.1 ms to 1 s, three per decade.
const SCORING_BUCKETS: [f64; 13] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
];

/// Content type of the OpenMetrics text format that `text::encode` writes.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

const EXAMPLES: &str = "e.g. 127.0.0.1:9464, [::1]:9464, or 0.0.0.0:9464 for every interface";

/// Whose series: the element's name, and its `channel` (the element's property) when it
/// has one: a label that is absent, not empty, for an element without one; and the
/// `device` the element measures on (the CUDA device's index, or `cpu`): a service's own
/// series (`Channels`) carry it too once their channel's build has chosen its device.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Owner {
    element: String,
    #[prometheus(flatten)]
    channel: Vec<(&'static str, String)>,
    #[prometheus(flatten)]
    device: Vec<(&'static str, String)>,
}

impl Owner {
    fn new(element: &str, channel: Option<&str>, device: Option<&str>) -> Owner {
        let label = |name: &'static str, v: Option<&str>| -> Vec<(&'static str, String)> {
            v.map(|v| (name, v.to_string())).into_iter().collect()
        };
        Owner {
            element: element.to_string(),
            channel: label("channel", channel),
            device: label("device", device),
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ElementLabels {
    #[prometheus(flatten)]
    of: Owner,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PadLabels {
    #[prometheus(flatten)]
    of: Owner,
    pad: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FieldLabels {
    #[prometheus(flatten)]
    of: Owner,
    field: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabels {
    #[prometheus(flatten)]
    of: Owner,
    rule: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventLabels {
    #[prometheus(flatten)]
    of: Owner,
    /// `black`, `freeze` or `stall`.
    event: String,
    /// `dist` or `ref`.
    input: String,
}

/// A channel of a service (`gpumetrics monitor`), and the device its latest build measures
/// on (absent until a build chose one, e.g. while its source cannot be opened).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ChannelLabels {
    channel: String,
    #[prometheus(flatten)]
    device: Vec<(&'static str, String)>,
}

/// A channel whose series exist ([`Channels`]), and the device they are labelled with.
struct Known {
    name: String,
    device: Option<String>,
}

/// A gauge holding a double (a score may be +inf).
type Value = Gauge<f64, AtomicU64>;

fn scoring_histogram() -> Histogram {
    Histogram::new(SCORING_BUCKETS)
}

/// The metric families of one endpoint, shared by its elements (each a handle on the same
/// family).
#[derive(Clone)]
struct Families {
    pairs: Family<ElementLabels, Counter>,
    unmatched: Family<PadLabels, Counter>,
    skipped: Family<ElementLabels, Counter>,
    score: Family<FieldLabels, Value>,
    window_mean: Family<FieldLabels, Value>,
    alert_active: Family<RuleLabels, Gauge>,
    alerts: Family<RuleLabels, Counter>,
    event_active: Family<EventLabels, Gauge>,
    events: Family<EventLabels, Counter>,
    scoring: Family<ElementLabels, Histogram, fn() -> Histogram>,
    channel_up: Family<ChannelLabels, Gauge>,
    channel_restarts: Family<ChannelLabels, Counter>,
    align_offset: Family<ElementLabels, Value>,
    align_locked: Family<ElementLabels, Gauge>,
    align_confidence: Family<ElementLabels, Value>,
    align_relocks: Family<ElementLabels, Counter>,
    unaligned: Family<ElementLabels, Counter>,
}

impl Families {
    /// New families, registered in `registry` under their series names (a counter's
    /// `_total` and the histogram's `_seconds` are added by the encoder).
    fn register(registry: &mut Registry) -> Families {
        let f = Families {
            pairs: Family::default(),
            unmatched: Family::default(),
            skipped: Family::default(),
            score: Family::default(),
            window_mean: Family::default(),
            alert_active: Family::default(),
            alerts: Family::default(),
            event_active: Family::default(),
            events: Family::default(),
            scoring: Family::new_with_constructor(scoring_histogram),
            channel_up: Family::default(),
            channel_restarts: Family::default(),
            align_offset: Family::default(),
            align_locked: Family::default(),
            align_confidence: Family::default(),
            align_relocks: Family::default(),
            unaligned: Family::default(),
        };
        registry.register("gpumetrics_pairs", "Frame pairs scored", f.pairs.clone());
        registry.register(
            "gpumetrics_unmatched",
            "Frames without a partner (never compared), per input pad",
            f.unmatched.clone(),
        );
        registry.register(
            "gpumetrics_skipped",
            "Matched pairs that subsample left unscored",
            f.skipped.clone(),
        );
        registry.register(
            "gpumetrics_score",
            "The latest scored pair's value of each field (+Inf: identical planes)",
            f.score.clone(),
        );
        registry.register(
            "gpumetrics_window_mean",
            "Mean of each field over the last complete window (property window)",
            f.window_mean.clone(),
        );
        registry.register(
            "gpumetrics_alert_active",
            "1 while the alert rule is raised, else 0",
            f.alert_active.clone(),
        );
        registry.register(
            "gpumetrics_alerts",
            "Times the alert rule was raised",
            f.alerts.clone(),
        );
        registry.register(
            "gpumetrics_event_active",
            "1 while a black or freeze interval is open on the input, else 0",
            f.event_active.clone(),
        );
        registry.register(
            "gpumetrics_events",
            "Black or freeze intervals started on the input",
            f.events.clone(),
        );
        registry.register_with_unit(
            "gpumetrics_scoring",
            "Time from a pair's arrival (taken from both inputs) to its scores",
            Unit::Seconds,
            f.scoring.clone(),
        );
        registry.register(
            "gpumetrics_channel_up",
            "1 while the channel's frames flow, else 0 (gpumetrics monitor)",
            f.channel_up.clone(),
        );
        registry.register(
            "gpumetrics_channel_restarts",
            "Times the channel's pipeline was rebuilt (gpumetrics monitor)",
            f.channel_restarts.clone(),
        );
        registry.register_with_unit(
            "gpumetrics_align_offset",
            "align=auto: distorted minus reference running time of the pairs (the lock's, \
             else the last one)",
            Unit::Seconds,
            f.align_offset.clone(),
        );
        registry.register(
            "gpumetrics_align_locked",
            "align=auto: 1 while an offset is locked, else 0",
            f.align_locked.clone(),
        );
        registry.register(
            "gpumetrics_align_confidence",
            "align=auto: how much better the offset fits than the others (0..1)",
            f.align_confidence.clone(),
        );
        registry.register(
            "gpumetrics_align_relocks",
            "align=auto: locks after the first one (the offset was lost and found again)",
            f.align_relocks.clone(),
        );
        registry.register(
            "gpumetrics_unaligned",
            "align=auto: distorted frames passed unmeasured while no offset was locked",
            f.unaligned.clone(),
        );
        f
    }
}

/// What the endpoint answers a request with.
#[derive(Debug)]
struct Reply {
    status: u16,
    content_type: &'static str,
    body: String,
}

fn reply(registry: &Registry, method: &str, url: &str, accept: Option<&str>) -> Reply {
    let plain = |status, body: &str| Reply {
        status,
        content_type: "text/plain; charset=utf-8",
        body: format!("{body}\n"),
    };
    let path = url.split_once('?').map_or(url, |(p, _)| p);
    if path != "/metrics" {
        return plain(404, "not found: the metrics are at /metrics");
    }
    if method != "GET" {
        return plain(405, "method not allowed: GET /metrics");
    }
    let mut body = String::new();
    // Prometheus asks for OpenMetrics first; curl and older scrapers get the 0.0.4 format.
    let (encoded, content_type) =
        if accept.is_some_and(|a| a.contains("application/openmetrics-text")) {
            (text::encode(&mut body, registry), OPENMETRICS)
        } else {
            (
                prometheus_text::encode(&mut body, registry),
                prometheus_text::CONTENT_TYPE,
            )
        };
    match encoded {
        Ok(()) => Reply {
            status: 200,
            content_type,
            body,
        },
        Err(_) => plain(500, "the metrics could not be encoded"),
    }
}

/// The longest request head read (a scrape's is a few hundred bytes).
const MAX_HEAD: usize = 16 * 1024;

/// How long a client may take to send its request or read the reply: the endpoint answers
/// one connection at a time, so a client that stalls holds the others back this long (and
/// the element's stop, which waits for the thread).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// How often the serving thread looks for a connection. The listener does not block, so
/// that the thread can be stopped and joined at once (it is unparked then) without
/// connecting to it; a scrape waits this long at most before it is answered.
const ACCEPT_POLL: Duration = Duration::from_millis(50);

/// The request line's method and target, and the `Accept` header, of a request head;
/// `None` when it is no HTTP request.
fn parse_head(head: &str) -> Option<(&str, &str, Option<&str>)> {
    let mut lines = head.split("\r\n");
    let mut request = lines.next()?.split(' ');
    let (method, url, version) = (request.next()?, request.next()?, request.next()?);
    if !version.starts_with("HTTP/1.") || request.next().is_some() {
        return None;
    }
    let accept = lines.find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("accept")
            .then_some(value.trim())
    });
    Some((method, url, accept))
}

/// Reads one request from `stream`, answers it and closes the connection (HTTP/1.1
/// `Connection: close`: a scraper connects again for the next scrape).
fn answer(mut stream: TcpStream, registry: &Registry) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let mut head = Vec::new();
    let mut chunk = [0; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk)?;
        if n == 0 || head.len() + n > MAX_HEAD {
            break;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&head);
    let r = match parse_head(&text) {
        Some((method, url, accept)) => reply(registry, method, url, accept),
        None => Reply {
            status: 400,
            content_type: "text/plain; charset=utf-8",
            body: "bad request: GET /metrics\n".into(),
        },
    };
    let reason = match r.status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Internal Server Error",
    };
    let allow = if r.status == 405 {
        "Allow: GET\r\n"
    } else {
        ""
    };
    write!(
        stream,
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{allow}\
         Connection: close\r\n\r\n",
        r.status,
        r.content_type,
        r.body.len()
    )?;
    stream.write_all(r.body.as_bytes())?;
    stream.flush()
}

/// Answers the connections of `listener` one at a time until `stop` is set.
fn serve(listener: TcpListener, registry: &Registry, stop: &AtomicBool) {
    while !stop.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((stream, peer)) => {
                if let Err(e) = answer(stream, registry) {
                    gst::debug!(CAT, "prometheus endpoint: a reply to {peer} failed: {e}");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::park_timeout(ACCEPT_POLL);
            }
            Err(e) => {
                // E.g. out of fds (EMFILE): the pending connection stays queued; try later.
                gst::debug!(CAT, "prometheus endpoint: accept failed: {e}");
                std::thread::park_timeout(ACCEPT_POLL);
            }
        }
    }
}

/// The first address of `address` that can be listened on.
fn bind(address: &str) -> Result<TcpListener, gst::ErrorMessage> {
    let shown = quoted(address);
    let addrs: Vec<SocketAddr> = address
        .to_socket_addrs()
        .map_err(|e| {
            gst::error_msg!(
                gst::ResourceError::Settings,
                ("prometheus-address '{shown}' is not a usable host:port ({e}); {EXAMPLES}")
            )
        })?
        .collect();
    let mut failures = Vec::new();
    for a in &addrs {
        match TcpListener::bind(a) {
            Ok(listener) => return Ok(listener),
            Err(e) => failures.push((a, e)),
        }
    }
    if failures.is_empty() {
        return Err(gst::error_msg!(
            gst::ResourceError::Settings,
            ("prometheus-address '{shown}' resolves to no address; {EXAMPLES}")
        ));
    }
    let in_use = failures
        .iter()
        .any(|(_, e)| e.kind() == std::io::ErrorKind::AddrInUse);
    let why = failures
        .iter()
        .map(|(a, e)| format!("{a}: {e}"))
        .collect::<Vec<_>>()
        .join("; ");
    Err(if in_use {
        gst::error_msg!(
            gst::ResourceError::Busy,
            ("prometheus-address '{shown}': cannot listen there ({why}): the port is \
                 taken, by another program or process (or by an endpoint of this process \
                 under another spelling of the address); choose another port, or give the \
                 elements that are to share one endpoint the same address")
        )
    } else {
        gst::error_msg!(
            gst::ResourceError::OpenReadWrite,
            ("prometheus-address '{shown}': cannot listen there ({why}); {EXAMPLES}")
        )
    })
}

/// A listening socket and the one thread answering it, which owns the socket: joining the
/// thread closes the port. Nothing else runs for an endpoint, so that nothing of it
/// outlives the stop of its last element (tiny_http, used before, left its 4 pooled
/// connection threads behind for 5 s, or for good when its pool was dropped as they
/// started: a service restarting channels grew by 4 threads a restart).
struct Server {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// Where it listens (the port chosen by the system when the address gave 0).
    local: SocketAddr,
}

impl Server {
    fn start(address: &str, registry: Registry) -> Result<Server, gst::ErrorMessage> {
        let listener = bind(address)?;
        let shown = quoted(address);
        let failed = |e: &dyn std::fmt::Display| {
            gst::error_msg!(
                gst::ResourceError::OpenReadWrite,
                ("prometheus-address '{shown}': cannot serve there: {e}")
            )
        };
        let local = listener.local_addr().map_err(|e| failed(&e))?;
        listener.set_nonblocking(true).map_err(|e| failed(&e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("gpumetrics-prom".into())
            .spawn({
                let stop = stop.clone();
                move || serve(listener, &registry, &stop)
            })
            .map_err(|e| failed(&e))?;
        gst::info!(
            CAT,
            "prometheus-address {address}: serving http://{local}/metrics"
        );
        Ok(Server {
            stop,
            thread: Some(thread),
            local,
        })
    }
}

impl Drop for Server {
    /// Stops the thread (a request being answered is finished first) and waits for it: the
    /// port is free once the element has stopped, and a restart on the same address binds
    /// again.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            if thread.join().is_err() {
                gst::warning!(
                    CAT,
                    "prometheus endpoint {}: its thread panicked",
                    self.local
                );
            }
        }
    }
}

/// One address's endpoint, while elements or services use it.
struct Endpoint {
    families: Families,
    /// Names of the elements whose series it serves; it goes away when none is left and no
    /// service holds it.
    elements: Vec<String>,
    /// [`Channels`] holding it open.
    services: usize,
    server: Server,
}

/// The endpoint of `address`, made (listening) when the process has none there yet.
fn endpoint<'a>(
    endpoints: &'a mut HashMap<String, Endpoint>,
    address: &str,
) -> Result<&'a mut Endpoint, gst::ErrorMessage> {
    Ok(match endpoints.entry(address.to_string()) {
        Entry::Occupied(e) => e.into_mut(),
        Entry::Vacant(v) => {
            let mut registry = Registry::default();
            let families = Families::register(&mut registry);
            let server = Server::start(address, registry)?;
            v.insert(Endpoint {
                families,
                elements: Vec::new(),
                services: 0,
                server,
            })
        }
    })
}

/// Leaves the endpoint of `address` (an element or a service, as `leave` says), and
/// closes it when nothing uses it any more. Under the endpoints' lock: something starting
/// on this address meanwhile binds after the port is free.
fn release(
    endpoints: &mut HashMap<String, Endpoint>,
    address: &str,
    leave: impl FnOnce(&mut Endpoint),
) {
    if let Some(endpoint) = endpoints.get_mut(address) {
        leave(endpoint);
        if endpoint.elements.is_empty() && endpoint.services == 0 {
            endpoints.remove(address);
        }
    }
}

/// The rules a service raises itself ([`Channels::alert`]).
pub const SERVICE_RULES: [&str; 1] = ["no-signal"];

/// A service's hold on an endpoint (`gpumetrics monitor`): the endpoint stays open while
/// the service runs, whatever its channels' elements do, and serves per channel
/// `gpumetrics_channel_up` and `gpumetrics_channel_restarts_total` beside the elements'
/// series (which carry the same `channel` label, [`Prometheus`]).
pub struct Channels {
    address: String,
    bound: SocketAddr,
    families: Families,
    /// The channels whose series exist (to remove at the end), with their device label.
    channels: Mutex<Vec<Known>>,
}

impl Channels {
    /// Joins (or makes) the endpoint of `address`; fails as an element's start does when
    /// the address cannot be listened on.
    pub fn open(address: &str) -> Result<Channels, gst::ErrorMessage> {
        let address = address.trim();
        let mut endpoints = ENDPOINTS.lock().unwrap_or_else(PoisonError::into_inner);
        let endpoint = endpoint(&mut endpoints, address)?;
        endpoint.services += 1;
        Ok(Channels {
            address: address.to_string(),
            bound: endpoint.server.local,
            families: endpoint.families.clone(),
            channels: Mutex::new(Vec::new()),
        })
    }

    /// Where the endpoint listens (for port 0: the port the system chose).
    pub fn bound(&self) -> SocketAddr {
        self.bound
    }

    /// The labels of `channel`'s series (its device's as [`Channels::set_device`] last
    /// said); the first call for a channel adds it to those removed at the end.
    fn labels(&self, channel: &str) -> (ChannelLabels, Option<String>) {
        let mut channels = self.channels.lock().unwrap_or_else(PoisonError::into_inner);
        let device = match channels.iter().find(|c| c.name == channel) {
            Some(c) => c.device.clone(),
            None => {
                channels.push(Known {
                    name: channel.to_string(),
                    device: None,
                });
                None
            }
        };
        (Self::channel_labels(channel, device.as_deref()), device)
    }

    fn channel_labels(channel: &str, device: Option<&str>) -> ChannelLabels {
        ChannelLabels {
            channel: channel.to_string(),
            device: device
                .map(|d| ("device", d.to_string()))
                .into_iter()
                .collect(),
        }
    }

    /// `gpumetrics_channel_up{channel}`: 1 while its frames flow, else 0. The first call
    /// for a channel makes its series (its restart counter at 0).
    pub fn set_up(&self, channel: &str, up: bool) {
        let (labels, _) = self.labels(channel);
        self.families
            .channel_up
            .get_or_create(&labels)
            .set(up as i64);
        let _ = self.families.channel_restarts.get_or_create(&labels);
    }

    /// Counts a rebuild of the channel's pipeline (`gpumetrics_channel_restarts_total`).
    pub fn restarted(&self, channel: &str) {
        let (labels, _) = self.labels(channel);
        self.families.channel_restarts.get_or_create(&labels).inc();
    }

    /// The device a build of `channel` measures on (a CUDA device's index, or `cpu`, as the
    /// element's series say it): the channel's series are labelled with it from now on.
    /// When it differs from the last build's (`device = "auto"` chose another GPU), the
    /// series move to the new label with their values (the restart count goes on), so
    /// that a channel has one series of each, on the device it is on.
    pub fn set_device(&self, channel: &str, device: &str) {
        let (old, was) = self.labels(channel);
        if was.as_deref() == Some(device) {
            return;
        }
        let mut channels = self.channels.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = channels.iter_mut().find(|c| c.name == channel) {
            c.device = Some(device.to_string());
        }
        let new = Self::channel_labels(channel, Some(device));
        let f = &self.families;
        let up = f.channel_up.get_or_create(&old).get();
        let restarts = f.channel_restarts.get_or_create(&old).get();
        f.channel_up.remove(&old);
        f.channel_restarts.remove(&old);
        f.channel_up.get_or_create(&new).set(up);
        f.channel_restarts.get_or_create(&new).inc_by(restarts);
        for rule in SERVICE_RULES {
            let old = Self::rule_labels(channel, was.as_deref(), rule);
            let (active, raised) = (
                f.alert_active.get(&old).map(|g| g.get()),
                f.alerts.get(&old).map(|c| c.get()),
            );
            f.alert_active.remove(&old);
            f.alerts.remove(&old);
            let new = Self::rule_labels(channel, Some(device), rule);
            if let Some(v) = active {
                f.alert_active.get_or_create(&new).set(v);
            }
            if let Some(n) = raised {
                f.alerts.get_or_create(&new).inc_by(n);
            }
        }
    }

    /// A rule of the service's own (`no-signal`) raised or cleared on `channel`: the
    /// alert series an element's rules have (`gpumetrics_alert_active`,
    /// `gpumetrics_alerts_total`), labelled as the channel's element (named after it, on
    /// its device).
    pub fn alert(&self, channel: &str, rule: &str, raised: bool) {
        let (_, device) = self.labels(channel);
        let labels = Self::rule_labels(channel, device.as_deref(), rule);
        self.families
            .alert_active
            .get_or_create(&labels)
            .set(raised as i64);
        let count = self.families.alerts.get_or_create(&labels);
        if raised {
            count.inc();
        }
    }

    fn rule_labels(channel: &str, device: Option<&str>, rule: &str) -> RuleLabels {
        RuleLabels {
            of: Owner::new(channel, Some(channel), device),
            rule: rule.to_string(),
        }
    }

    /// The channel was removed: its series go (label sets stay bounded).
    pub fn remove(&self, channel: &str) {
        let known = {
            let mut channels = self.channels.lock().unwrap_or_else(PoisonError::into_inner);
            let at = channels.iter().position(|c| c.name == channel);
            at.map(|i| channels.remove(i))
        };
        let device = known.and_then(|k| k.device);
        let labels = Self::channel_labels(channel, device.as_deref());
        self.families.channel_up.remove(&labels);
        self.families.channel_restarts.remove(&labels);
        for rule in SERVICE_RULES {
            let labels = Self::rule_labels(channel, device.as_deref(), rule);
            self.families.alert_active.remove(&labels);
            self.families.alerts.remove(&labels);
        }
    }
}

impl Drop for Channels {
    /// The service stops: its channels' series go, and the endpoint when nothing else uses
    /// it.
    fn drop(&mut self) {
        let names: Vec<String> = self
            .channels
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|c| c.name.clone())
            .collect();
        for c in names {
            self.remove(&c);
        }
        let mut endpoints = ENDPOINTS.lock().unwrap_or_else(PoisonError::into_inner);
        release(&mut endpoints, &self.address, |e| e.services -= 1);
    }
}

/// The endpoints of the process, by address as written.
static ENDPOINTS: LazyLock<Mutex<HashMap<String, Endpoint>>> = LazyLock::new(Default::default);

/// One rule's series, by the rule's text.
struct RuleSeries {
    rule: String,
    active: Gauge,
    raised: Counter,
}

/// The sink of one element: handles on its series of its address's endpoint.
pub(crate) struct Prometheus {
    address: String,
    /// Where the endpoint listens: the address's port, or the one the system chose for
    /// port 0 (the element's `prometheus-bound-address`).
    bound: SocketAddr,
    element: String,
    /// The element and its channel, as labels.
    owner: Owner,
    families: Families,
    pairs: Counter,
    skipped: Counter,
    unmatched_ref: Counter,
    unmatched_dist: Counter,
    scoring: Histogram,
    /// `gpumetrics_score` per field of the latest pair, in its order.
    scores: Vec<(String, Value)>,
    /// `gpumetrics_window_mean` per field of the latest window.
    means: Vec<(String, Value)>,
    rules: Vec<RuleSeries>,
    /// The (event, input) series this element has set, to remove at its stop.
    event_series: Vec<EventLabels>,
    /// `align=auto`: its series exist from the first alignment record.
    aligned: bool,
    /// Re-locks already counted.
    relocks: u64,
}

impl Prometheus {
    /// Joins (or makes) the endpoint of `address` with the series of `element`, the rules'
    /// at 0. Fails when the address cannot be listened on, or when another element of the
    /// same name already exports there.
    pub(crate) fn open(
        address: &str,
        element: &str,
        channel: Option<&str>,
        device: &str,
        rules: &[&str],
    ) -> Result<Prometheus, gst::ErrorMessage> {
        let address = address.trim();
        let shown = quoted(address);
        let mut endpoints = ENDPOINTS.lock().unwrap_or_else(PoisonError::into_inner);
        if endpoints
            .get(address)
            .is_some_and(|e| e.elements.iter().any(|e| e == element))
        {
            return Err(gst::error_msg!(
                gst::ResourceError::Busy,
                ("prometheus-address '{shown}': an element named '{element}' of this process \
                  already exports its series there (labelled element=\"{element}\"); give \
                  the elements different names")
            ));
        }
        let endpoint = endpoint(&mut endpoints, address)?;
        endpoint.elements.push(element.to_string());
        let bound = endpoint.server.local;
        let f = endpoint.families.clone();
        let owner = Owner::new(element, channel, Some(device));
        let of_element = ElementLabels { of: owner.clone() };
        let pad = |pad: &str| {
            f.unmatched.get_or_create_owned(&PadLabels {
                of: owner.clone(),
                pad: pad.to_string(),
            })
        };
        let rules = rules
            .iter()
            .map(|&rule| {
                let labels = RuleLabels {
                    of: owner.clone(),
                    rule: rule.to_string(),
                };
                RuleSeries {
                    rule: rule.to_string(),
                    active: f.alert_active.get_or_create_owned(&labels),
                    raised: f.alerts.get_or_create_owned(&labels),
                }
            })
            .collect();
        let (unmatched_ref, unmatched_dist) = (pad("ref_sink"), pad("dist_sink"));
        Ok(Prometheus {
            address: address.to_string(),
            bound,
            element: element.to_string(),
            owner,
            pairs: f.pairs.get_or_create_owned(&of_element),
            skipped: f.skipped.get_or_create_owned(&of_element),
            unmatched_ref,
            unmatched_dist,
            scoring: f.scoring.get_or_create_owned(&of_element),
            scores: Vec::new(),
            means: Vec::new(),
            rules,
            event_series: Vec::new(),
            aligned: false,
            relocks: 0,
            families: f,
        })
    }

    /// Where the endpoint listens (for port 0: the port the system chose).
    pub(crate) fn bound(&self) -> SocketAddr {
        self.bound
    }

    fn field_labels(&self, field: &str) -> FieldLabels {
        FieldLabels {
            of: self.owner.clone(),
            field: field.to_string(),
        }
    }

    /// Makes `series` one gauge of `family` per name of `names`, in order; the series of
    /// names no longer there are removed.
    fn follow<'a>(
        &self,
        family: &Family<FieldLabels, Value>,
        series: &mut Vec<(String, Value)>,
        names: impl Iterator<Item = &'a str> + Clone,
    ) {
        for (name, _) in series.iter() {
            if !names.clone().any(|n| n == name) {
                family.remove(&self.field_labels(name));
            }
        }
        *series = names
            .map(|n| {
                let gauge = family.get_or_create_owned(&self.field_labels(n));
                (n.to_string(), gauge)
            })
            .collect();
    }

    fn rule(&mut self, rule: &str) -> &RuleSeries {
        let i = match self.rules.iter().position(|r| r.rule == rule) {
            Some(i) => i,
            None => {
                // Every rule was given at the start; this keeps a change of another one.
                let labels = RuleLabels {
                    of: self.owner.clone(),
                    rule: rule.to_string(),
                };
                self.rules.push(RuleSeries {
                    rule: rule.to_string(),
                    active: self.families.alert_active.get_or_create_owned(&labels),
                    raised: self.families.alerts.get_or_create_owned(&labels),
                });
                self.rules.len() - 1
            }
        };
        &self.rules[i]
    }
}

fn names<T>(list: &[(String, T)]) -> impl Iterator<Item = &str> + Clone {
    list.iter().map(|(n, _)| n.as_str())
}

impl Sink for Prometheus {
    fn record(&mut self, _env: &Env<'_>, pair: &mut Pair<'_>) -> Result<(), gst::ErrorMessage> {
        self.scoring.observe(pair.arrived.elapsed().as_secs_f64());
        let fields = &pair.record.scores;
        let field_names = fields.iter().map(|(f, _)| f.name);
        if !names(&self.scores).eq(field_names.clone()) {
            let mut scores = std::mem::take(&mut self.scores);
            self.follow(&self.families.score, &mut scores, field_names);
            self.scores = scores;
        }
        for ((_, gauge), (_, value)) in self.scores.iter().zip(fields) {
            gauge.set(*value);
        }
        self.pairs.inc();
        Ok(())
    }

    fn unmatched(&mut self, side: Input) {
        match side {
            Input::Reference => self.unmatched_ref.inc(),
            Input::Distorted => self.unmatched_dist.inc(),
        };
    }

    fn skipped(&mut self) {
        self.skipped.inc();
    }

    fn window(&mut self, _env: &Env<'_>, window: &Window) -> Result<(), gst::ErrorMessage> {
        // A window without pairs has no means: its fields' series go until the next one.
        let fields = &window.stats.fields;
        let mut means = std::mem::take(&mut self.means);
        self.follow(&self.families.window_mean, &mut means, names(fields));
        for ((_, gauge), (_, stats)) in means.iter().zip(fields) {
            gauge.set(stats.mean);
        }
        self.means = means;
        Ok(())
    }

    fn event(&mut self, _env: &Env<'_>, event: &EventRecord) -> Result<(), gst::ErrorMessage> {
        let labels = EventLabels {
            of: self.owner.clone(),
            event: event.event.clone(),
            input: event.input.clone(),
        };
        if !self.event_series.contains(&labels) {
            self.event_series.push(labels.clone());
        }
        let active = self.families.event_active.get_or_create(&labels);
        if event.state == "start" {
            active.set(1);
            self.families.events.get_or_create(&labels).inc();
        } else {
            active.set(0);
        }
        Ok(())
    }

    fn align(&mut self, _env: &Env<'_>, a: &AlignRecord) -> Result<(), gst::ErrorMessage> {
        let of = ElementLabels {
            of: self.owner.clone(),
        };
        let f = &self.families;
        self.aligned = true;
        if let Some(o) = a.offset.filter(|_| a.state != "searching") {
            f.align_offset.get_or_create(&of).set(o as f64 / 1e9);
        }
        f.align_locked
            .get_or_create(&of)
            .set(i64::from(a.state == "locked"));
        f.align_confidence.get_or_create(&of).set(a.confidence);
        let relocks = f.align_relocks.get_or_create(&of);
        if a.relocks > self.relocks {
            relocks.inc_by(a.relocks - self.relocks);
            self.relocks = a.relocks;
        }
        drop(f.unaligned.get_or_create(&of));
        Ok(())
    }

    fn unaligned(&mut self) {
        let of = ElementLabels {
            of: self.owner.clone(),
        };
        self.aligned = true;
        self.families.unaligned.get_or_create(&of).inc();
    }

    fn alert(&mut self, _env: &Env<'_>, change: &AlertChange) -> Result<(), gst::ErrorMessage> {
        let series = self.rule(&change.rule);
        match change.state {
            AlertState::Raised => {
                series.active.set(1);
                series.raised.inc();
            }
            AlertState::Cleared => {
                series.active.set(0);
            }
        }
        Ok(())
    }
}

impl Drop for Prometheus {
    /// The element stops: its series leave the endpoint, and the endpoint goes when it was
    /// the last element there.
    fn drop(&mut self) {
        let mut endpoints = ENDPOINTS.lock().unwrap_or_else(PoisonError::into_inner);
        let f = &self.families;
        let of_element = ElementLabels {
            of: self.owner.clone(),
        };
        f.pairs.remove(&of_element);
        f.skipped.remove(&of_element);
        f.scoring.remove(&of_element);
        if self.aligned {
            f.align_offset.remove(&of_element);
            f.align_locked.remove(&of_element);
            f.align_confidence.remove(&of_element);
            f.align_relocks.remove(&of_element);
            f.unaligned.remove(&of_element);
        }
        for pad in ["ref_sink", "dist_sink"] {
            f.unmatched.remove(&PadLabels {
                of: self.owner.clone(),
                pad: pad.to_string(),
            });
        }
        for (name, _) in &self.scores {
            f.score.remove(&self.field_labels(name));
        }
        for (name, _) in &self.means {
            f.window_mean.remove(&self.field_labels(name));
        }
        for r in &self.rules {
            let labels = RuleLabels {
                of: self.owner.clone(),
                rule: r.rule.clone(),
            };
            f.alert_active.remove(&labels);
            f.alerts.remove(&labels);
        }
        for labels in &self.event_series {
            f.event_active.remove(labels);
            f.events.remove(labels);
        }
        release(&mut endpoints, &self.address, |e| {
            e.elements.retain(|e| *e != self.element)
        });
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::time::Instant;

    use gst::prelude::*;

    use super::super::tests::pair_of;
    use super::*;
    use crate::gpumetrics::settings::Settings;
    use crate::message::{FieldStats, Summary};

    /// A loopback address whose port was free a moment ago.
    fn free_address() -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("127.0.0.1:{}", l.local_addr().unwrap().port())
    }

    /// GET `path` from `address` (HTTP/1.0, as a scraper may): status line and body, or the
    /// connection error.
    fn get(address: &str, path: &str) -> std::io::Result<(String, String)> {
        let mut s = TcpStream::connect(address)?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(s, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n")?;
        let mut text = String::new();
        s.read_to_string(&mut text)?;
        let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
        Ok((head.lines().next().unwrap().to_string(), body.to_string()))
    }

    fn metrics(address: &str) -> String {
        let (status, body) = get(address, "/metrics").expect("the endpoint answers");
        assert!(status.contains(" 200 "), "{status}\n{body}");
        body
    }

    fn open_err(address: &str, element: &str) -> String {
        match Prometheus::open(address, element, None, "cpu", &[]) {
            Ok(_) => panic!("{address} for {element}: expected an error"),
            Err(e) => e.to_string(),
        }
    }

    fn with_env<R>(f: impl FnOnce(&Env<'_>) -> R) -> R {
        gst::init().unwrap();
        let element = gst::Bin::new().upcast::<gst::Element>();
        let settings = Settings::default();
        f(&Env {
            element: &element,
            settings: &settings,
        })
    }

    fn record(sink: &mut Prometheus, env: &Env<'_>, frame: u64, psnr: f64) {
        let (record, scores, mut buffer) = pair_of(frame, psnr);
        let mut pair = Pair {
            record: &record,
            scores: &scores,
            buffer: &mut buffer,
            arrived: Instant::now(),
        };
        sink.record(env, &mut pair).unwrap();
    }

    #[test]
    fn replies_in_the_format_the_client_accepts_and_only_at_get_metrics() {
        let mut registry = Registry::default();
        let f = Families::register(&mut registry);
        let labels = ElementLabels {
            of: Owner::new("m", None, Some("cpu")),
        };
        f.pairs.get_or_create(&labels).inc();
        f.scoring.get_or_create(&labels).observe(0.003);
        let psnr = FieldLabels {
            of: Owner::new("m", None, Some("cpu")),
            field: "psnr-y".into(),
        };
        f.score.get_or_create(&psnr).set(f64::INFINITY);
        let get = "GET";
        let om = reply(
            &registry,
            get,
            "/metrics",
            Some("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
        );
        assert_eq!((om.status, om.content_type), (200, OPENMETRICS));
        assert!(om.body.ends_with("# EOF\n"), "{}", om.body);
        for line in [
            "# TYPE gpumetrics_pairs counter",
            "gpumetrics_pairs_total{element=\"m\",device=\"cpu\"} 1",
            "# UNIT gpumetrics_scoring_seconds seconds",
            "gpumetrics_scoring_seconds_bucket{le=\"0.0025\",element=\"m\",device=\"cpu\"} 0",
            "gpumetrics_scoring_seconds_bucket{le=\"0.005\",element=\"m\",device=\"cpu\"} 1",
            "gpumetrics_scoring_seconds_count{element=\"m\",device=\"cpu\"} 1",
            "gpumetrics_score{element=\"m\",device=\"cpu\",field=\"psnr-y\"} inf",
        ] {
            assert!(om.body.lines().any(|l| l == line), "{line}:\n{}", om.body);
        }
        let plain = reply(&registry, get, "/metrics?x=1", None);
        assert_eq!(
            (plain.status, plain.content_type),
            (200, prometheus_text::CONTENT_TYPE)
        );
        assert!(!plain.body.contains("# EOF"), "{}", plain.body);
        assert!(
            plain
                .body
                .lines()
                .any(|l| l == "gpumetrics_pairs_total{element=\"m\",device=\"cpu\"} 1"),
            "{}",
            plain.body
        );
        assert_eq!(reply(&registry, get, "/", None).status, 404);
        assert_eq!(reply(&registry, get, "/metricsx", None).status, 404);
        assert_eq!(reply(&registry, "POST", "/metrics", None).status, 405);
    }

    #[test]
    fn an_element_exports_its_events_and_takes_the_endpoint_along_when_it_stops() {
        let address = free_address();
        with_env(|env| {
            let mut sink =
                Prometheus::open(&address, "m", None, "cpu", &["psnr-y<35", "psnr-y>100"]).unwrap();
            let body = metrics(&address);
            for line in [
                "gpumetrics_pairs_total{element=\"m\",device=\"cpu\"} 0",
                "gpumetrics_skipped_total{element=\"m\",device=\"cpu\"} 0",
                "gpumetrics_unmatched_total{element=\"m\",device=\"cpu\",pad=\"ref_sink\"} 0",
                "gpumetrics_alert_active{element=\"m\",device=\"cpu\",rule=\"psnr-y<35\"} 0",
                "gpumetrics_alerts_total{element=\"m\",device=\"cpu\",rule=\"psnr-y>100\"} 0",
            ] {
                assert!(body.lines().any(|l| l == line), "{line}:\n{body}");
            }
            assert!(!body.contains("gpumetrics_score{"), "{body}");
            record(&mut sink, env, 0, 30.0);
            record(&mut sink, env, 1, f64::INFINITY);
            sink.unmatched(Input::Reference);
            sink.unmatched(Input::Distorted);
            sink.unmatched(Input::Distorted);
            sink.skipped();
            let stats = |mean| FieldStats {
                mean,
                min: mean,
                max: mean,
                stddev: 0.0,
                harmonic_mean: None,
                pooled: None,
                p1: mean,
                p5: mean,
                p50: mean,
                p95: mean,
                p99: mean,
            };
            let window = Window {
                start: 0,
                end: 500_000_000,
                stats: Summary {
                    frames: 2,
                    fields: vec![("psnr-y".into(), stats(30.5)), ("mse-y".into(), stats(2.0))],
                    ..Summary::default()
                },
            };
            sink.window(env, &window).unwrap();
            let raised = AlertChange {
                rule: "psnr-y<35".into(),
                field: "psnr-y".into(),
                state: AlertState::Raised,
                value: 30.0,
                running_time: 0,
                since: None,
                worst: None,
            };
            sink.alert(env, &raised).unwrap();
            let body = metrics(&address);
            for line in [
                "gpumetrics_pairs_total{element=\"m\",device=\"cpu\"} 2",
                "gpumetrics_skipped_total{element=\"m\",device=\"cpu\"} 1",
                "gpumetrics_unmatched_total{element=\"m\",device=\"cpu\",pad=\"ref_sink\"} 1",
                "gpumetrics_unmatched_total{element=\"m\",device=\"cpu\",pad=\"dist_sink\"} 2",
                "gpumetrics_score{element=\"m\",device=\"cpu\",field=\"psnr-y\"} +Inf",
                "gpumetrics_window_mean{element=\"m\",device=\"cpu\",field=\"psnr-y\"} 30.5",
                "gpumetrics_window_mean{element=\"m\",device=\"cpu\",field=\"mse-y\"} 2.0",
                "gpumetrics_alert_active{element=\"m\",device=\"cpu\",rule=\"psnr-y<35\"} 1",
                "gpumetrics_alerts_total{element=\"m\",device=\"cpu\",rule=\"psnr-y<35\"} 1",
                "gpumetrics_alert_active{element=\"m\",device=\"cpu\",rule=\"psnr-y>100\"} 0",
                "gpumetrics_scoring_seconds_count{element=\"m\",device=\"cpu\"} 2",
            ] {
                assert!(body.lines().any(|l| l == line), "{line}:\n{body}");
            }
            // A window without pairs has no means; a cleared rule reads 0, its count stays.
            sink.window(env, &Window::default()).unwrap();
            let cleared = AlertChange {
                state: AlertState::Cleared,
                since: Some(0),
                worst: Some(30.0),
                ..raised
            };
            sink.alert(env, &cleared).unwrap();
            // A black interval on the reference: open, then closed; the count stays.
            let black = |state: &str| EventRecord {
                event: "black".into(),
                state: state.into(),
                input: "ref".into(),
                running_time: 0,
                duration: (state == "end").then_some(2_400_000_000),
            };
            sink.event(env, &black("start")).unwrap();
            let body = metrics(&address);
            let open = "gpumetrics_event_active{element=\"m\",device=\"cpu\",event=\"black\",input=\"ref\"} 1";
            assert!(body.lines().any(|l| l == open), "{body}");
            sink.event(env, &black("end")).unwrap();
            let body = metrics(&address);
            assert!(!body.contains("gpumetrics_window_mean{"), "{body}");
            for line in [
                "gpumetrics_alert_active{element=\"m\",device=\"cpu\",rule=\"psnr-y<35\"} 0",
                "gpumetrics_alerts_total{element=\"m\",device=\"cpu\",rule=\"psnr-y<35\"} 1",
                "gpumetrics_event_active{element=\"m\",device=\"cpu\",event=\"black\",input=\"ref\"} 0",
                "gpumetrics_events_total{element=\"m\",device=\"cpu\",event=\"black\",input=\"ref\"} 1",
            ] {
                assert!(body.lines().any(|l| l == line), "{line}:\n{body}");
            }
            drop(sink);
            let e = get(&address, "/metrics").expect_err("the endpoint is gone");
            assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
        });
    }

    #[test]
    fn live_alignment_exports_its_offset_state_and_relocks() {
        let address = free_address();
        with_env(|env| {
            let mut sink = Prometheus::open(&address, "m", None, "cpu", &[]).unwrap();
            assert!(!metrics(&address).contains("gpumetrics_align"));
            let record = |state: &str, offset, relocks| AlignRecord {
                state: state.into(),
                offset: Some(offset),
                offset_frames: Some(offset / 40_000_000),
                confidence: 0.9,
                running_time: 0,
                relocks,
            };
            sink.unaligned();
            sink.align(env, &record("searching", 99_000_000, 0))
                .unwrap();
            sink.align(env, &record("locked", 1_300_000_000, 0))
                .unwrap();
            sink.align(env, &record("lost", 1_300_000_000, 0)).unwrap();
            sink.align(env, &record("locked", 1_500_000_000, 1))
                .unwrap();
            // Progress records repeat the count: it is not counted again.
            sink.align(env, &record("locked", 1_500_000_000, 1))
                .unwrap();
            let body = metrics(&address);
            for line in [
                "gpumetrics_align_offset_seconds{element=\"m\",device=\"cpu\"} 1.5",
                "gpumetrics_align_locked{element=\"m\",device=\"cpu\"} 1",
                "gpumetrics_align_confidence{element=\"m\",device=\"cpu\"} 0.9",
                "gpumetrics_align_relocks_total{element=\"m\",device=\"cpu\"} 1",
                "gpumetrics_unaligned_total{element=\"m\",device=\"cpu\"} 1",
            ] {
                assert!(body.lines().any(|l| l == line), "{line}:\n{body}");
            }
            drop(sink);
        });
    }

    #[test]
    fn elements_share_an_endpoint_until_the_last_one_stops() {
        let address = free_address();
        with_env(|env| {
            let mut a = Prometheus::open(&address, "a", None, "cpu", &[]).unwrap();
            let mut b = Prometheus::open(&address, "b", None, "cpu", &[]).unwrap();
            record(&mut a, env, 0, 31.0);
            record(&mut b, env, 0, 32.0);
            record(&mut b, env, 1, 33.0);
            let body = metrics(&address);
            for line in [
                "gpumetrics_pairs_total{element=\"a\",device=\"cpu\"} 1",
                "gpumetrics_pairs_total{element=\"b\",device=\"cpu\"} 2",
                "gpumetrics_score{element=\"a\",device=\"cpu\",field=\"psnr-y\"} 31.0",
                "gpumetrics_score{element=\"b\",device=\"cpu\",field=\"psnr-y\"} 33.0",
            ] {
                assert!(body.lines().any(|l| l == line), "{line}:\n{body}");
            }
            assert_eq!(
                body.matches("# TYPE gpumetrics_pairs_total counter")
                    .count(),
                1
            );
            let e = open_err(&address, "a");
            assert!(e.contains(&address) && e.contains("'a'"), "{e}");
            drop(a);
            let body = metrics(&address);
            assert!(!body.contains("element=\"a\""), "{body}");
            assert!(
                body.contains("gpumetrics_pairs_total{element=\"b\",device=\"cpu\"} 2"),
                "{body}"
            );
            drop(b);
            let e = get(&address, "/metrics").expect_err("the endpoint is gone");
            assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
            // The port is free again at once: a new element binds it.
            let c = Prometheus::open(&address, "a", None, "cpu", &[]).unwrap();
            assert!(
                metrics(&address)
                    .contains("gpumetrics_pairs_total{element=\"a\",device=\"cpu\"} 0")
            );
            drop(c);
        });
    }

    #[test]
    fn a_channel_labels_its_elements_series_and_a_service_holds_the_endpoint() {
        let address = free_address();
        let service = Channels::open(&address).unwrap();
        service.set_up("news", false);
        // Served with no element started.
        let text = metrics(&address);
        assert!(
            text.contains("gpumetrics_channel_up{channel=\"news\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("gpumetrics_channel_restarts_total{channel=\"news\"} 0"),
            "{text}"
        );
        let sink = Prometheus::open(&address, "news", Some("news"), "cpu", &[]).unwrap();
        service.set_up("news", true);
        service.restarted("news");
        let text = metrics(&address);
        assert!(
            text.contains(
                "gpumetrics_pairs_total{element=\"news\",channel=\"news\",device=\"cpu\"} 0"
            ),
            "{text}"
        );
        assert!(
            text.contains("gpumetrics_channel_up{channel=\"news\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("gpumetrics_channel_restarts_total{channel=\"news\"} 1"),
            "{text}"
        );
        drop(sink);
        // The element's series went with it; the service's stay, and so does the endpoint.
        let text = metrics(&address);
        assert!(!text.contains("gpumetrics_pairs_total{"), "{text}");
        assert!(
            text.contains("gpumetrics_channel_up{channel=\"news\"} 1"),
            "{text}"
        );
        // A build chose its device: the series carry it, with their values.
        service.alert("news", "no-signal", true);
        service.set_device("news", "cpu");
        let text = metrics(&address);
        for line in [
            "gpumetrics_channel_up{channel=\"news\",device=\"cpu\"} 1",
            "gpumetrics_channel_restarts_total{channel=\"news\",device=\"cpu\"} 1",
            "gpumetrics_alert_active{element=\"news\",channel=\"news\",device=\"cpu\",rule=\"no-signal\"} 1",
            "gpumetrics_alerts_total{element=\"news\",channel=\"news\",device=\"cpu\",rule=\"no-signal\"} 1",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(
            !text.contains("gpumetrics_channel_up{channel=\"news\"}"),
            "{text}"
        );
        // Another build on another device (`device = "auto"`): one series each, moved.
        service.restarted("news");
        service.set_device("news", "1");
        service.alert("news", "no-signal", false);
        let text = metrics(&address);
        for line in [
            "gpumetrics_channel_restarts_total{channel=\"news\",device=\"1\"} 2",
            "gpumetrics_alert_active{element=\"news\",channel=\"news\",device=\"1\",rule=\"no-signal\"} 0",
            "gpumetrics_alerts_total{element=\"news\",channel=\"news\",device=\"1\",rule=\"no-signal\"} 1",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(!text.contains("device=\"cpu\""), "{text}");
        service.remove("news");
        assert!(!metrics(&address).contains("channel=\"news\""));
        drop(service);
        assert!(!ENDPOINTS.lock().unwrap().contains_key(&address));
    }

    #[test]
    fn a_request_that_is_no_http_gets_400_and_the_endpoint_goes_on() {
        let address = free_address();
        let sink = Prometheus::open(&address, "m", None, "cpu", &[]).unwrap();
        let mut s = TcpStream::connect(&address).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(b"hello\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{text}");
        assert!(
            metrics(&address).contains("gpumetrics_pairs_total{element=\"m\",device=\"cpu\"} 0")
        );
        drop(sink);
    }

    #[test]
    fn parses_the_request_line_and_the_accept_header() {
        assert_eq!(
            parse_head("GET /metrics HTTP/1.1\r\nHost: x\r\naccept : text/plain\r\n\r\n"),
            Some(("GET", "/metrics", Some("text/plain")))
        );
        assert_eq!(
            parse_head("HEAD / HTTP/1.0\r\n\r\n"),
            Some(("HEAD", "/", None))
        );
        for bad in [
            "",
            "GET /metrics",
            "GET /metrics SPDY/3\r\n",
            "GET a b c HTTP/1.1\r\n",
        ] {
            assert_eq!(parse_head(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn an_address_that_cannot_be_listened_on_is_an_error_naming_it() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = taken.local_addr().unwrap().to_string();
        let e = open_err(&address, "m");
        assert!(e.contains(&address) && e.contains("in use"), "{e}");
        for bad in ["9464", "127.0.0.1:99999", "127.0.0.1"] {
            let e = open_err(bad, "m");
            assert!(
                e.contains(&format!("'{bad}'")) && e.contains("host:port"),
                "{e}"
            );
        }
        // Nothing was left behind: the address is not an endpoint.
        assert!(!ENDPOINTS.lock().unwrap().contains_key(&address));
    }
}
