//! `sched_d --metrics [ADDR]` (off by default; `127.0.0.1:9464` when given without an
//! address): the status page at `http://ADDR/` (`status_page`) and Prometheus metrics at
//! `http://ADDR/metrics`, in the OpenMetrics text format of
//! the `prometheus-client` crate, served by [`super::http_server`] (bounded connections, a
//! fixed pool of workers) so that no client can take from the daemon what it needs.
//!
//! Counters and histograms are kept as things happen (a submission, an end, a pass: an
//! atomic add each). What describes the whole cell — jobs by state and user, slots per queue
//! instance, share-tree usage — is computed when a scrape asks for it, by the daemon's loop
//! (which owns the state), so that it costs nothing between scrapes: the HTTP thread sends
//! [`Input::Scrape`](super::daemon::Input) and waits for the loop to have refreshed the gauges.
//!
//! | metric | labels | what |
//! |---|---|---|
//! | `gridspool_jobs` | `state` (pending, held, running, suspended, error), `user` | tasks |
//! | `gridspool_slots_used`, `gridspool_slots_total` | `queue` (`all.q@host`) | slots |
//! | `gridspool_pass_seconds` | | scheduling pass duration (histogram) |
//! | `gridspool_dispatch_latency_seconds` | | submission to dispatch (histogram) |
//! | `gridspool_submissions_total`, `gridspool_task_ends_total` | | jobs in, tasks out |
//! | `gridspool_quarantined_files_total`, `gridspool_spool_errors_total` | | spool trouble |
//! | `gridspool_share_usage` | `kind` (user, project), `name`, `resource` (cpu, mem, io) | decayed usage |
//! | `gridspool_forecast_seconds` | | a start-time forecast's duration, process start to exit (histogram) |
//! | `gridspool_forecasts_total` | `outcome` (ok, failed) | start-time forecasts made |

use super::http_server::{Request, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc::Sender;
use std::time::Duration;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct JobLabels {
    pub state: String,
    pub user: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    pub queue: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct UsageLabels {
    pub kind: String,
    pub name: String,
    pub resource: String,
}

/// The daemon's metrics.
pub struct Metrics {
    registry: Registry,
    pub jobs: Family<JobLabels, Gauge>,
    pub slots_used: Family<QueueLabels, Gauge>,
    pub slots_total: Family<QueueLabels, Gauge>,
    pub share_usage: Family<UsageLabels, Gauge<f64, AtomicU64>>,
    pub pass_seconds: Histogram,
    pub dispatch_latency_seconds: Histogram,
    pub forecast_seconds: Histogram,
    pub forecasts: Family<OutcomeLabels, Counter>,
    pub submissions: Counter,
    pub task_ends: Counter,
    pub quarantined: Counter,
    pub spool_errors: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("gridspool");
        let m = Metrics {
            registry: Registry::default(),
            jobs: Family::default(),
            slots_used: Family::default(),
            slots_total: Family::default(),
            share_usage: Family::default(),
            // 0.1 ms to 3 s.
            pass_seconds: Histogram::new(exponential_buckets(0.0001, 2.0, 16)),
            // 1 ms to about 9 hours.
            dispatch_latency_seconds: Histogram::new(exponential_buckets(0.001, 4.0, 16)),
            // 10 ms to about 5 minutes.
            forecast_seconds: Histogram::new(exponential_buckets(0.01, 2.0, 15)),
            forecasts: Family::default(),
            submissions: Counter::default(),
            task_ends: Counter::default(),
            quarantined: Counter::default(),
            spool_errors: Counter::default(),
        };
        registry.register("jobs", "Tasks by state and owner", m.jobs.clone());
        registry.register(
            "slots_used",
            "Slots in use per queue instance",
            m.slots_used.clone(),
        );
        registry.register(
            "slots_total",
            "Slots offered per queue instance",
            m.slots_total.clone(),
        );
        registry.register(
            "share_usage",
            "Decayed share-tree usage (cpu seconds, GB seconds of memory, GB of I/O)",
            m.share_usage.clone(),
        );
        registry.register(
            "pass_seconds",
            "Duration of a scheduling pass",
            m.pass_seconds.clone(),
        );
        registry.register(
            "dispatch_latency_seconds",
            "From a task's submission to its dispatch",
            m.dispatch_latency_seconds.clone(),
        );
        registry.register(
            "forecast_seconds",
            "Duration of a start-time forecast (sched_d --forecast)",
            m.forecast_seconds.clone(),
        );
        registry.register(
            "forecasts",
            "Start-time forecasts made, by outcome",
            m.forecasts.clone(),
        );
        registry.register("submissions", "Jobs submitted", m.submissions.clone());
        registry.register("task_ends", "Tasks ended", m.task_ends.clone());
        registry.register(
            "quarantined_files",
            "Spool files set aside as malformed or forged",
            m.quarantined.clone(),
        );
        registry.register(
            "spool_errors",
            "Writes to the spool that failed (the daemon retries)",
            m.spool_errors.clone(),
        );
        Metrics { registry, ..m }
    }

    /// The OpenMetrics text of every metric.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }
}

/// How long a scrape waits for the daemon's loop to refresh the gauges.
const SCRAPE_WAIT: Duration = Duration::from_secs(5);

/// What the status page (`/`) names and reads besides the daemon's state.
#[derive(Debug, Clone)]
pub struct PageSource {
    pub cell: String,
    pub accounting: std::path::PathBuf,
    /// Where the start-time forecast is (`daemon/estimates`).
    pub spool: crate::spool::Spool,
}

/// What `/` and `/metrics` accept: they only read.
const ALLOWED_METHODS: &str = "GET, HEAD";

/// Serves `/metrics` and the status page `/` on `addr` until the process ends: each request
/// asks the daemon (over `daemon`) for what comes from its state, then answers.
pub fn serve(
    addr: &str,
    metrics: std::sync::Arc<Metrics>,
    daemon: Sender<super::daemon::Input>,
    page: PageSource,
) -> Result<(), super::http_server::ServeError> {
    // The workers share the sender: `Sender` is `Sync`, and the daemon's loop answers one
    // request at a time anyway.
    let handler = move |request: &Request| -> Response {
        if request.path != "/" && request.path != "/metrics" {
            return Response::new(404, "text/plain", "not found: try / or /metrics\n");
        }
        if request.method != "GET" && request.method != "HEAD" {
            return Response::new(
                405,
                "text/plain",
                format!(
                    "{} is not allowed here: {ALLOWED_METHODS}\n",
                    request.method
                ),
            )
            .with_header("Allow", ALLOWED_METHODS);
        }
        if request.path == "/" {
            return status_page(&daemon, &page);
        }
        let (tx, rx) = std::sync::mpsc::channel();
        if daemon.send(super::daemon::Input::Scrape(tx)).is_ok() {
            let _ = rx.recv_timeout(SCRAPE_WAIT);
        }
        Response::new(
            200,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics.encode(),
        )
    };
    let local = super::http_server::serve(
        addr,
        super::http_server::Limits::for_daemon(),
        std::sync::Arc::new(handler),
    )?;
    tracing::info!(addr = %local, "serving metrics at /metrics");
    Ok(())
}

/// The status page: its head, the daemon's part (given the forecast, read here so that the
/// daemon's loop never reads it), the charts.
fn status_page(daemon: &Sender<super::daemon::Input>, page: &PageSource) -> Response {
    let now = crate::time::now();
    let forecast = std::sync::Arc::new(super::status_estimates::PageForecast::read(&page.spool));
    let (tx, rx) = std::sync::mpsc::channel();
    let state = if daemon
        .send(super::daemon::Input::StatusPage(tx, forecast.clone()))
        .is_ok()
    {
        rx.recv_timeout(SCRAPE_WAIT)
            .unwrap_or_else(|_| "<p>sched_d did not answer in time.</p>".to_string())
    } else {
        "<p>sched_d has stopped.</p>".to_string()
    };
    // Freed here once the loop has answered: a forecast of 100,000 jobs is as many
    // allocations, which the loop has better things to do than free.
    drop(forecast);
    let mut html = super::status_page::head(&page.cell, now);
    html.push_str(&state);
    html.push_str(&super::status_page::usage_charts(&page.accounting, now));
    html.push_str("</body></html>\n");
    Response::new(200, "text/html; charset=utf-8", html)
}
