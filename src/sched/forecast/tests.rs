//! The forecast on small cells whose future can be worked out by hand.

use super::*;
use crate::model::{JobRecord, PeRequest, ResourceRequest, SlotRange};
use crate::sched::tests::{NOW, config, job};

fn h_rt(seconds: i64) -> ResourceRequest {
    ResourceRequest {
        name: "h_rt".into(),
        value: seconds.to_string(),
    }
}

fn timed(id: u32, seconds: i64) -> JobRecord {
    job(id, |s, _| s.hard_resources.push(h_rt(seconds)))
}

/// The state at `NOW - 100` after a pass started `running`, with `pending` added then.
fn cell(hosts: usize, slots: u32, running: Vec<JobRecord>, pending: Vec<JobRecord>) -> SchedState {
    cell_of(config(hosts, slots, ""), running, pending)
}

fn cell_of(
    config: crate::config::ClusterConfig,
    running: Vec<JobRecord>,
    pending: Vec<JobRecord>,
) -> SchedState {
    let mut state = SchedState::new(config);
    for j in running {
        assert!(state.add_job(j));
    }
    for s in state.schedule(NOW - 100).starts {
        state.task_started(s.job, s.task).expect("started");
    }
    for j in pending {
        assert!(state.add_job(j));
    }
    state
}

/// Each job's estimates as `task-range: start offset from NOW@hosts`, or the kind and words
/// of what it says instead.
fn shown(forecast: &StartForecast) -> Vec<String> {
    forecast
        .jobs
        .iter()
        .flat_map(|j| {
            j.tasks.iter().map(move |t| {
                let what = match &t.start {
                    StartEstimate::At { time, hosts, .. } => {
                        format!("+{}@{}", time - NOW, hosts.join("+"))
                    }
                    StartEstimate::Unknown { why } => format!("unknown: {why}"),
                    StartEstimate::Never { why } => format!("never: {why}"),
                };
                format!("{}.{}: {what}", j.job, t.tasks)
            })
        })
        .collect()
}

/// The worked example: one host of two slots, FIFO. At NOW - 100 jobs 1 (h_rt 600) and 2
/// (h_rt 150) started: they end at +500 and +50. Pending: 3 and 4 (h_rt 300 each), 5 held,
/// 6 asking for a parallel environment no queue offers, 7 with no limit at all, 8 (h_rt 10).
/// Job 3 takes job 2's slot at +50 and ends at +350, when job 4 takes it (to +650); job 1's
/// slot frees at +500 for job 7, which never ends; job 8 takes job 4's slot at +650.
#[test]
fn the_worked_example_starts_each_job_when_the_slot_ahead_of_it_frees() {
    let mut state = cell(
        1,
        2,
        vec![timed(1, 600), timed(2, 150)],
        vec![
            timed(3, 300),
            timed(4, 300),
            job(5, |s, h| {
                s.hard_resources.push(h_rt(10));
                h.user = true;
            }),
            job(6, |s, _| {
                s.pe = Some(PeRequest {
                    name: "nowhere".into(),
                    range: SlotRange { min: 1, max: 1 },
                })
            }),
            job(7, |_, _| {}),
            timed(8, 10),
        ],
    );
    let (forecast, stats) = forecast(&mut state, NOW, &RunTimeLimits, &ForecastOptions::default());
    assert_eq!(
        shown(&forecast),
        [
            "3.1: +50@n1",
            "4.1: +350@n1",
            "5.1: unknown: the job is held (u) until qrls releases it",
            "6.1: never: cannot run because parallel environment \"nowhere\" does not exist",
            "7.1: +500@n1",
            "8.1: +650@n1",
        ]
    );
    assert_eq!(forecast.run_times, "limits");
    assert_eq!(stats.starts, 4);
}

/// Behind a job that runs without a limit, no time is honest; and a job too large for the
/// cluster (more slots than it has) starts never once every known end has passed.
#[test]
fn what_waits_for_a_run_without_a_limit_is_unknown_and_a_job_too_large_never_starts() {
    let too_large = |id| {
        job(id, |s, _| {
            s.hard_resources.push(h_rt(10));
            s.pe = Some(PeRequest {
                name: "smp".into(),
                range: SlotRange { min: 4, max: 4 },
            })
        })
    };
    let mut endless = cell(1, 1, vec![job(1, |_, _| {})], vec![timed(2, 10)]);
    let (f, _) = forecast(
        &mut endless,
        NOW,
        &RunTimeLimits,
        &ForecastOptions::default(),
    );
    assert_eq!(
        shown(&f),
        [
            "2.1: unknown: it waits for jobs that run without a run time limit (h_rt, s_rt, default_duration) to end"
        ]
    );
    let mut bounded = cell(1, 2, vec![timed(1, 200)], vec![too_large(2), timed(3, 10)]);
    let (f, _) = forecast(
        &mut bounded,
        NOW,
        &RunTimeLimits,
        &ForecastOptions::default(),
    );
    let shown = shown(&f);
    assert_eq!(shown[1], "3.1: +0@n1");
    assert!(
        shown[0].starts_with("2.1: never: "),
        "{shown:?}: the job asks for 4 slots of a cluster of 2"
    );
}

/// An array job's tasks start one after another on one slot; a far future is coarser (a step
/// is 2% of the distance from now) and beyond the horizon nothing is promised.
#[test]
fn array_tasks_get_a_start_each_and_the_horizon_bounds_the_play() {
    let array = job(1, |s, _| {
        s.hard_resources.push(h_rt(3600));
        s.array = Some(crate::model::TaskIdRange::new(1, 4, 1));
    });
    let mut state = cell(1, 1, vec![], vec![array]);
    let opts = ForecastOptions {
        horizon: 9000,
        ..ForecastOptions::default()
    };
    let (f, stats) = forecast(&mut state, NOW, &RunTimeLimits, &opts);
    assert_eq!(
        shown(&f),
        [
            "1.1: +0@n1",
            "1.2: +3600@n1",
            "1.3: +7200@n1",
            "1.4: unknown: later than the forecast's horizon (2:30:00 ahead)"
        ]
    );
    assert_eq!(stats.passes, 3);
}

/// Run times learned from alice's runs of the category `-l h_rt=1000` that took `seconds`.
fn alice_ran(seconds: &[i64]) -> LearnedRunTimes {
    let mut learned = LearnedRunTimes::default();
    for &ran in seconds {
        learned.learn(&crate::acct::AccountingRecord {
            owner: "alice".into(),
            job_name: "earlier".into(),
            category: "-l h_rt=1000".into(),
            start_time: 1_000,
            end_time: 1_000 + ran,
            pe_taskid: "NONE".into(),
            ..crate::acct::AccountingRecord::default()
        });
    }
    learned
}

/// Learned run times: alice's last runs of the category `-l h_rt=1000` took 400 s, so her
/// running job of that category (started at NOW - 100) is expected to end at +300, not at
/// its limit's +900, and the job behind it starts then.
#[test]
fn learned_run_times_end_a_job_when_its_kind_usually_ends() {
    let learned = alice_ran(&[400, 400, 400]);
    let by = |run_times: &dyn ExpectedRunTimes| {
        let mut state = cell(1, 1, vec![timed(1, 1000)], vec![timed(2, 300)]);
        shown(&forecast(&mut state, NOW, run_times, &ForecastOptions::default()).0)
    };
    assert_eq!(by(&RunTimeLimits), ["2.1: +900@n1"]);
    assert_eq!(by(&learned), ["2.1: +300@n1"]);
}

/// `hosts` hosts of one slot whose queue `all.q` follows a calendar with `state` from 600 s
/// before NOW to 1,000 s after it (local time, as `sched_d` reads calendars).
fn calendar_config(hosts: usize, state: &str) -> crate::config::ClusterConfig {
    let daytime = |offset: i64| {
        let at = jiff::Timestamp::from_second(NOW + offset)
            .expect("time")
            .to_zoned(crate::time::local_zone());
        format!("{}:{:02}:{:02}", at.hour(), at.minute(), at.second())
    };
    let extra = format!(
        "calendars:\n  - {{name: cal, week: \"{}-{}={state}\"}}\n",
        daytime(-600),
        daytime(1000)
    );
    let mut config = config(hosts, 1, &extra);
    config.queues[0].calendar = Some("cal".into());
    config
}

/// A calendar that closes the queue until +1000 (`off`: running work goes on, none starts):
/// the job waiting starts when it opens, although the slot is free before.
#[test]
fn a_job_waits_for_its_queue_calendar_to_open() {
    let mut state = cell_of(calendar_config(1, "off"), vec![], vec![timed(1, 60)]);
    let (f, _) = forecast(&mut state, NOW, &RunTimeLimits, &ForecastOptions::default());
    assert_eq!(shown(&f), ["1.1: +1000@n1"]);
}

/// A calendar that suspends the queue until +1000 stops the running job (started at -100,
/// h_rt 600: 500 s left) until then: it ends at +1500, when the job behind it starts.
#[test]
fn a_run_that_its_calendar_suspends_ends_that_much_later() {
    let mut state = cell_of(
        calendar_config(1, "suspended"),
        vec![timed(1, 600)],
        vec![timed(2, 60)],
    );
    let (f, _) = forecast(&mut state, NOW, &RunTimeLimits, &ForecastOptions::default());
    assert_eq!(shown(&f), ["2.1: +1500@n1"]);
}

/// A host that cannot be reached takes no work in the play: the job that fits elsewhere
/// starts there, and one that needs it too has no time, with the host named.
#[test]
fn a_host_that_cannot_be_reached_takes_no_work_and_what_needs_it_is_unknown() {
    let two_hosts = |id| {
        job(id, |s, _| {
            s.hard_resources.push(h_rt(10));
            s.pe = Some(PeRequest {
                name: "rr".into(),
                range: SlotRange { min: 2, max: 2 },
            })
        })
    };
    let mut state = cell(2, 1, vec![timed(1, 600)], vec![]);
    state.set_host_unknown("n2", true);
    assert!(state.add_job(timed(2, 60)));
    assert!(state.add_job(two_hosts(3)));
    let (f, _) = forecast(&mut state, NOW, &RunTimeLimits, &ForecastOptions::default());
    assert_eq!(
        shown(&f),
        [
            "2.1: +500@n1",
            "3.1: unknown: it may wait for hosts that cannot be reached (n2) to come back"
        ]
    );
}

/// A run that `qmod -sj` stopped has no end until someone continues it: what waits for its
/// slot has no time, and says why.
#[test]
fn what_waits_for_a_suspended_run_is_unknown() {
    let mut state = cell(1, 1, vec![timed(1, 600)], vec![timed(2, 60)]);
    let job = state.job_mut(JobId(1)).expect("job 1");
    job.tasks.running[0].state = crate::model::RunState::Suspended;
    let (f, _) = forecast(&mut state, NOW, &RunTimeLimits, &ForecastOptions::default());
    assert_eq!(
        shown(&f),
        ["2.1: unknown: it waits for jobs that are suspended (qmod -sj, -sq) to be continued"]
    );
}

/// Alice's runs of the kind took 50, 60 and 300 s; her running job (started at NOW - 100)
/// is past the median, so it is expected to reach the longest (+200), not to end at once.
#[test]
fn a_run_past_the_median_of_its_kind_is_expected_to_reach_the_longest() {
    let learned = alice_ran(&[50, 60, 300]);
    let mut state = cell(1, 1, vec![timed(1, 1000)], vec![timed(2, 300)]);
    let (f, _) = forecast(&mut state, NOW, &learned, &ForecastOptions::default());
    assert_eq!(shown(&f), ["2.1: +200@n1"]);
}
