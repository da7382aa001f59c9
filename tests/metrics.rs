//! `sched_d --metrics`: scraped over HTTP as Prometheus would, checked line by line against
//! the text format, and its numbers against `qstat`.

use crate::sched::{SchedD, wait_for};
use crate::support::sshd::free_port;
use crate::support::*;
use std::io::{Read, Write};
use std::time::Duration;

fn scrape(addr: &str, path: &str) -> (String, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_string(), body.to_string())
}

/// A metric name, optional `{labels}`, a value: the sample lines of the text format.
fn is_sample(line: &str) -> bool {
    let (series, value) = match line.rsplit_once(' ') {
        Some(p) => p,
        None => return false,
    };
    let name_end = series.find('{').unwrap_or(series.len());
    let name = &series[..name_end];
    let name_ok = !name.is_empty()
        && name.chars().enumerate().all(|(i, c)| {
            c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit())
        });
    let labels_ok = name_end == series.len()
        || (series.ends_with('}')
            && series[name_end + 1..series.len() - 1]
                .split("\",")
                .filter(|l| !l.is_empty())
                .all(|l| l.split_once("=\"").is_some_and(|(k, _)| !k.is_empty())));
    let value_ok = value.parse::<f64>().is_ok() || ["+Inf", "-Inf", "NaN"].contains(&value);
    name_ok && labels_ok && value_ok
}

#[test]
fn the_metrics_endpoint_is_prometheus_text_that_agrees_with_qstat() {
    let Some(user) = user1() else {
        return skip(
            "the_metrics_endpoint_is_prometheus_text_that_agrees_with_qstat",
            "needs the test users",
        );
    };
    let host = gridspool::identity::short_hostname();
    let cell = crate::qrsh::cell(1);
    let addr = format!("127.0.0.1:{}", free_port());
    let _d = SchedD::start(&cell, &["--metrics", &addr]);
    for _ in 0..2 {
        let run = cell.run(&user, "qsub", &["-b", "y", "sleep", "60"]);
        assert_eq!(run.code, 0, "{run:?}");
    }
    wait_for("a job runs", Duration::from_secs(20), || {
        cell.run(&user, "qstat", &[]).stdout.contains(" r ")
    });
    let (head, body) = scrape(&addr, "/metrics");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_lowercase()
            .contains("content-type: application/openmetrics-text"),
        "{head}"
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
    for line in body.lines() {
        assert!(
            line.starts_with("# HELP ")
                || line.starts_with("# TYPE ")
                || line.starts_with("# UNIT ")
                || line == "# EOF"
                || is_sample(line),
            "not Prometheus text: {line:?}\n{body}"
        );
    }
    let has = |sample: &str| body.lines().any(|l| l == sample);
    let who = &user.name;
    assert!(
        has(&format!(
            "gridspool_jobs{{state=\"running\",user=\"{who}\"}} 1"
        )),
        "{body}"
    );
    assert!(
        has(&format!(
            "gridspool_jobs{{state=\"pending\",user=\"{who}\"}} 1"
        )),
        "{body}"
    );
    assert!(
        has(&format!("gridspool_slots_used{{queue=\"all.q@{host}\"}} 1")),
        "{body}"
    );
    assert!(
        has(&format!(
            "gridspool_slots_total{{queue=\"all.q@{host}\"}} 1"
        )),
        "{body}"
    );
    assert!(has("gridspool_submissions_total 2"), "{body}");
    assert!(body.contains("gridspool_pass_seconds_count "), "{body}");
    let (head, _) = scrape(&addr, "/nothing");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
}

/// Debian's Chromium, when installed (`.ci/run` installs it).
fn chromium() -> Option<std::path::PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.exists())
}

/// Headless Chromium on `url` with `args` (`--dump-dom`, `--screenshot=…`); its stdout.
fn browse(browser: &std::path::Path, url: &str, args: &[String]) -> String {
    let profile = tempfile::tempdir().expect("profile");
    let out = std::process::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url)
        .output()
        .expect("chromium");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_status_page_shows_what_qstat_shows_in_a_browser() {
    const TEST: &str = "the_status_page_shows_what_qstat_shows_in_a_browser";
    let Some(browser) = chromium() else {
        return skip(TEST, "Chromium is not installed (Debian package chromium)");
    };
    let Some(user) = user1() else {
        return skip(TEST, "needs the test users");
    };
    let host = gridspool::identity::short_hostname();
    let who = user.name.clone();
    let cell = TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: 1}}\nqueues:\n  - {{name: all.q, hostlist: [\"{host}\"], slots: 1, tmpdir: \"{{{{tmpdir}}}}\"}}\nscheduler: {{policy: sge}}\nshare_tree: {{name: Root, shares: 1, children: [{{name: \"{who}\", shares: 3}}, {{name: default, shares: 1}}]}}\n"
        )
    });
    let addr = format!("127.0.0.1:{}", free_port());
    let _d = SchedD::start(&cell, &["--metrics", &addr]);
    // One ended (for the usage chart), one running, one waiting for the slot.
    let run = cell.run(
        &user,
        "qsub",
        &["-sync", "y", "-b", "y", "-N", "ended", "true"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    for name in ["runs", "waits"] {
        let run = cell.run(&user, "qsub", &["-b", "y", "-N", name, "sleep", "60"]);
        assert_eq!(run.code, 0, "{run:?}");
    }
    wait_for("a job runs", Duration::from_secs(20), || {
        cell.run(&user, "qstat", &[]).stdout.contains(" r ")
    });
    let url = format!("http://{addr}/");
    let dom = browse(&browser, &url, &["--dump-dom".to_string()]);
    assert!(dom.contains("<h1>gridspool cell default</h1>"), "{dom}");
    // Every job qstat lists is on the page, in the state qstat shows.
    let qstat = cell.run(&user, "qstat", &["-u", "*"]);
    let listed: Vec<(String, String)> = qstat
        .stdout
        .lines()
        .skip(2)
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            Some((w.first()?.to_string(), w.get(4)?.to_string()))
        })
        .collect();
    assert_eq!(listed.len(), 2, "{qstat:?}");
    for (id, state) in &listed {
        let row = dom
            .split(&format!("<tr data-job=\"{id}\">"))
            .nth(1)
            .and_then(|r| r.split("</tr>").next())
            .unwrap_or_else(|| panic!("job {id} is not on the page: {dom}"));
        assert!(
            row.contains(&format!("<td>{state}</td>")),
            "job {id}: {row}"
        );
    }
    // Why the waiting job waits (the slot is taken).
    let waiting = &listed
        .iter()
        .find(|(_, s)| s == "qw")
        .expect("a waiting job")
        .0;
    let row = dom
        .split(&format!("<tr data-job=\"{waiting}\">"))
        .nth(1)
        .and_then(|r| r.split("</tr>").next())
        .unwrap_or_default();
    assert!(!row.ends_with("<td></td>"), "no reason given: {row}");
    // The share tree's targets, and the ended job's CPU in the charts.
    assert!(dom.contains(&format!("data-node=\"{who}\"")), "{dom}");
    assert!(dom.contains("75.0%"), "{dom}");
    assert!(dom.contains(&format!("data-series=\"{who}\"")), "{dom}");
    // A screenshot, kept as the test's artefact.
    let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("status-page.png");
    let _ = std::fs::remove_file(&shot);
    browse(
        &browser,
        &url,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1100,1400".to_string(),
        ],
    );
    let png = std::fs::read(&shot).expect("the screenshot");
    assert!(
        png.starts_with(b"\x89PNG"),
        "{} is not a PNG",
        shot.display()
    );
}

/// Sends `raw` on a new connection to `addr` and reads the answer to its end; an error when
/// the endpoint cannot be reached or does not answer within 20 s.
fn exchange(addr: &str, raw: &str) -> std::io::Result<String> {
    let to: std::net::SocketAddr = addr.parse().expect("address");
    let mut s = std::net::TcpStream::connect_timeout(&to, Duration::from_secs(20))?;
    s.set_read_timeout(Some(Duration::from_secs(20)))?;
    s.write_all(raw.as_bytes())?;
    let mut text = Vec::new();
    s.read_to_end(&mut text)?;
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// `Threads:` of /proc/PID/status.
fn threads_of(pid: u32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("status")
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("Threads:")
}

fn open_fds_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("fd")
        .count()
}

/// Sets the soft limit on `pid`'s descriptors (the hard one stays 128).
fn set_nofile(pid: u32, limit: usize) {
    let out = std::process::Command::new("prlimit")
        .arg(format!("--pid={pid}"))
        .arg(format!("--nofile={limit}:128"))
        .output()
        .expect("prlimit");
    assert!(out.status.success(), "{out:?}");
}

/// Opens `n` connections to `addr` that send nothing (or half a request line) and stay open.
fn idle_connections(addr: &str, n: usize) -> Vec<std::net::TcpStream> {
    let to: std::net::SocketAddr = addr.parse().expect("address");
    (0..n)
        .filter_map(|i| {
            let mut s = std::net::TcpStream::connect_timeout(&to, Duration::from_secs(2)).ok()?;
            if i % 2 == 1 {
                let _ = s.write_all(b"GET /metr");
            }
            Some(s)
        })
        .collect()
}

#[test]
fn idle_connections_neither_exhaust_the_descriptors_nor_stop_the_endpoint() {
    let cell = crate::qrsh::cell(1);
    let addr = format!("127.0.0.1:{}", free_port());
    let prefix = ["prlimit", "--nofile=128:128", "--"].map(String::from);
    let d = SchedD::spawn_with(&cell, &["--metrics", &addr], &prefix);
    let pid = d.pid();
    let scrape = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    wait_for("the metrics endpoint", Duration::from_secs(20), || {
        exchange(&addr, scrape).is_ok_and(|t| t.starts_with("HTTP/1.1 200"))
    });
    let threads = threads_of(pid);
    let base_fds = open_fds_of(pid);
    // A connection that never completes its request is closed by the server.
    let mut silent = std::net::TcpStream::connect(&addr).expect("connect");
    silent
        .set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    let mut rest = Vec::new();
    silent
        .read_to_end(&mut rest)
        .expect("the server closes an idle connection");
    // Far more idle connections than the server keeps, and than sched_d has descriptors.
    let idle = idle_connections(&addr, 400);
    let answer = exchange(&addr, scrape).expect("scrape");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("# EOF\n"), "{answer}");
    assert!(
        threads_of(pid) <= threads + 4,
        "{} threads, {threads} before",
        threads_of(pid)
    );
    // At most a quarter of the 128 descriptors held for clients (and two being answered).
    assert!(
        open_fds_of(pid) <= base_fds + 128 / 4 + 2,
        "{} descriptors open, {base_fds} before",
        open_fds_of(pid)
    );
    drop(idle);
    // Its descriptors exhausted with connections held: it closes those it holds.
    set_nofile(pid, base_fds + 4);
    let idle = idle_connections(&addr, 200);
    let answer = exchange(&addr, scrape).expect("scrape at the descriptor limit");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    drop(idle);
    // Exhausted with nothing of its own to close: it waits, and serves again once it can.
    set_nofile(pid, 3);
    let idle = idle_connections(&addr, 50);
    std::thread::sleep(Duration::from_secs(1));
    set_nofile(pid, 128);
    drop(idle);
    let answer = exchange(&addr, scrape).expect("scrape");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        !state.is_empty() && !state.contains(") Z "),
        "sched_d ended: {state}"
    );
}

#[test]
fn methods_other_than_get_and_head_are_refused() {
    let cell = crate::qrsh::cell(1);
    let addr = format!("127.0.0.1:{}", free_port());
    let _d = SchedD::start(&cell, &["--metrics", &addr]);
    let scrape = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    wait_for("the metrics endpoint", Duration::from_secs(20), || {
        exchange(&addr, scrape).is_ok_and(|t| t.starts_with("HTTP/1.1 200"))
    });
    for path in ["/metrics", "/"] {
        for method in ["POST", "PUT", "DELETE", "TRACE", "FOO", "PATCH"] {
            let answer = exchange(
                &addr,
                &format!("{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabc"),
            )
            .expect("an answer");
            let head = answer.split("\r\n\r\n").next().unwrap_or_default();
            assert!(
                head.starts_with("HTTP/1.1 405 "),
                "{method} {path}: {answer}"
            );
            assert!(
                head.lines()
                    .any(|l| l.eq_ignore_ascii_case("allow: GET, HEAD")),
                "{method} {path}: {answer}"
            );
            assert!(!answer.contains("gridspool_"), "{method} {path}: {answer}");
        }
        let answer = exchange(
            &addr,
            &format!("HEAD {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
        )
        .expect("an answer");
        assert!(answer.starts_with("HTTP/1.1 200 "), "HEAD {path}: {answer}");
        assert!(
            answer.ends_with("\r\n\r\n"),
            "HEAD {path} has a body: {answer}"
        );
    }
    let answer = exchange(
        &addr,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .expect("scrape");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("gridspool_submissions_total 0"), "{answer}");
}

/// The cells of the table row `<tr {key}>` of `page`: what each `<td>` holds.
fn row_cells(page: &str, key: &str) -> Vec<String> {
    let row = page
        .split(&format!("<tr {key}>"))
        .nth(1)
        .and_then(|r| r.split("</tr>").next())
        .unwrap_or_else(|| panic!("no row {key}: {page}"));
    row.split("<td")
        .skip(1)
        .map(|c| {
            let c = c.split_once('>').map_or("", |(_, rest)| rest);
            c.strip_suffix("</td>").unwrap_or(c).to_string()
        })
        .collect()
}

/// One slot, taken by a job of `h_rt` 600 s; behind it a job of 60 s and a held one. Once the
/// forecast has them (as `qstat -json -start` shows), the status page gives the waiting
/// job's estimated start in `qstat`'s date format, the held one `unknown` with its reason,
/// and the owner's pending work: two tasks, one starting at that time, one unknown.
#[test]
fn the_status_page_shows_estimated_starts_and_pending_work_by_user() {
    const TEST: &str = "the_status_page_shows_estimated_starts_and_pending_work_by_user";
    let Some(user) = user1() else {
        return skip(TEST, "needs the test users");
    };
    let cell = crate::estimates::one_slot_cell();
    let addr = format!("127.0.0.1:{}", free_port());
    let d = SchedD::start(&cell, &["--metrics", &addr]);
    let qsub = |args: &[&str]| crate::estimates::qsub(&cell, &user, args);
    let running = qsub(&["-b", "y", "-l", "h_rt=600", "sleep", "600"]);
    d.wait_for("the first job runs", Duration::from_secs(30), || {
        cell.run(&user, "qstat", &[]).stdout.contains(" r ")
    });
    let waiting = qsub(&["-b", "y", "-l", "h_rt=60", "true"]);
    let held = qsub(&["-b", "y", "-h", "-l", "h_rt=60", "true"]);
    // The estimates of `id`'s tasks by `qstat -json -start`.
    let estimate_of = |id: u32| -> Option<serde_json::Value> {
        let run = cell.run(&user, "qstat", &["-json", "-start"]);
        let v: serde_json::Value = serde_json::from_str(&run.stdout).ok()?;
        Some(v["jobs"].as_array()?.iter().find(|j| j["job"] == id)?["estimated_start"][0].clone())
    };
    let estimate = || estimate_of(waiting).and_then(|e| e["time"].as_i64());
    d.wait_for("a forecast of both jobs", Duration::from_secs(30), || {
        estimate().is_some()
            && estimate_of(held).is_some_and(|e| {
                e["why"]
                    .as_str()
                    .is_some_and(|why| !why.starts_with("not in the last forecast"))
            })
    });
    let at = estimate().expect("estimate");
    let (head, page) = scrape(&addr, "/");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(page.contains("<th>estimated start</th>"), "{page}");
    // Columns: job, name, owner, state, tasks, slots, queue, estimated start, why pending.
    let cells = row_cells(&page, &format!("data-job=\"{waiting}\""));
    assert_eq!(
        cells[7],
        format!(
            "<span class=\"start\" data-start=\"{at}\">{}</span>",
            gridspool::time::qstat_date(at)
        ),
        "{cells:?}"
    );
    let cells = row_cells(&page, &format!("data-job=\"{held}\""));
    assert!(
        cells[7].starts_with("<span class=\"start\" data-start=\"unknown\" title=\""),
        "{cells:?}"
    );
    assert!(cells[7].contains("held"), "{cells:?}");
    let cells = row_cells(&page, &format!("data-job=\"{running}\""));
    assert_eq!(cells[3], "r", "{cells:?}");
    assert_eq!(cells[7], "", "{cells:?}");
    // Pending work by user: tasks, first and last start, within 1 h / 24 h / later, unknown,
    // never, the timeline (one tick).
    assert!(page.contains("<h2>Pending work by user</h2>"), "{page}");
    assert!(
        page.contains("<p id=\"forecast\">Forecast made at "),
        "{page}"
    );
    let cells = row_cells(&page, &format!("data-user=\"{}\"", user.name));
    let date = gridspool::time::qstat_date(at);
    assert_eq!(
        cells[..4],
        [user.name.clone(), "2".into(), date.clone(), date],
        "{cells:?}"
    );
    let counts: Vec<u64> = cells[4..9]
        .iter()
        .map(|c| c.parse().expect("a count"))
        .collect();
    assert_eq!(counts[0] + counts[1] + counts[2], 1, "{cells:?}");
    assert_eq!(counts[3..], [1, 0], "{cells:?}");
    assert_eq!(cells[9].matches("<title>1 at +").count(), 1, "{cells:?}");
    // The forecasts that made them, and how long they took.
    let (_, metrics) = scrape(&addr, "/metrics");
    let value = |prefix: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no {prefix}: {metrics}"))
    };
    assert!(value("gridspool_forecasts_total{outcome=\"ok\"} ") >= 1);
    assert!(value("gridspool_forecast_seconds_count ") >= 1);
}

/// With start-time estimates off, the status page says no forecast was made and why, and
/// gives a waiting job no time.
#[test]
fn the_status_page_says_when_there_is_no_forecast() {
    const TEST: &str = "the_status_page_says_when_there_is_no_forecast";
    let Some(user) = user1() else {
        return skip(TEST, "needs the test users");
    };
    let host = gridspool::identity::short_hostname();
    let cell = TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: 1}}\nqueues:\n  - {{name: all.q, hostlist: [\"{host}\"], slots: 1}}\nscheduler: {{policy: sge, start_estimates: {{enabled: false}}}}\n"
        )
    });
    let addr = format!("127.0.0.1:{}", free_port());
    let d = SchedD::start(&cell, &["--metrics", &addr]);
    let run = cell.run(&user, "qsub", &["-b", "y", "-h", "true"]);
    assert_eq!(run.code, 0, "{run:?}");
    let id: u32 = run
        .stdout
        .split_whitespace()
        .nth(2)
        .and_then(|w| w.parse().ok())
        .expect("job id");
    d.wait_for("a pass over the held job", Duration::from_secs(30), || {
        cell.job(id).is_some_and(|j| j.priority.is_some())
    });
    let (_, page) = scrape(&addr, "/");
    assert!(
        page.contains("<p id=\"forecast\">No forecast yet: start-time estimates are off"),
        "{page}"
    );
    let cells = row_cells(&page, &format!("data-job=\"{id}\""));
    assert!(
        cells[7].contains("data-start=\"unknown\"")
            && cells[7].contains("no forecast has been made"),
        "{cells:?}"
    );
    let cells = row_cells(&page, &format!("data-user=\"{}\"", user.name));
    assert_eq!(cells[1], "1", "{cells:?}");
    assert_eq!(cells[7], "1", "{cells:?}");
}
