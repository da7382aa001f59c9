//! The scans, single reads and listing forms of `jobs/` checked against each other.

use super::format::{parse_state, parse_submission};
use super::*;
use crate::model::JobSubmission;
use crate::model::{
    EnvVar, Holds, JobSpec, PriorityInfo, RequestAction, Requester, SpecChange, Submitter,
    TaskSelector,
};
use crate::spool::{Spool, index};

fn submission(id: u32) -> JobSubmission {
    JobSubmission {
        v: 1,
        id: JobId(id),
        submitter: Submitter {
            owner: "alice".into(),
            uid: 1000,
            group: "staff".into(),
            gid: 50,
            submission_time: 1_795_000_000 + i64::from(id),
            sge_o_home: "/home/alice".into(),
            sge_o_log_name: "alice".into(),
            sge_o_path: "/bin".into(),
            sge_o_shell: "/bin/sh".into(),
            sge_o_workdir: "/home/alice".into(),
            sge_o_host: "vm".into(),
            sge_o_mail: None,
            sge_o_tz: None,
        },
        spec: JobSpec {
            name: format!("job{id}"),
            env: vec![EnvVar {
                name: "TERM".into(),
                value: Some("xterm".into()),
            }],
            priority: -3,
            project: Some("p1".into()),
            deadline: Some(1_795_100_000),
            predecessors: vec![JobId(1)],
            ..JobSpec::default()
        },
        holds: Holds::NONE,
    }
}

/// The fields a listing keeps, to compare a listing record with a whole one.
fn listed(j: &JobRecord) -> String {
    format!(
        "{} {} {} {} {} {} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
        j.id,
        j.submitter.owner,
        j.submitter.gid,
        j.submitter.submission_time,
        j.spec.name,
        j.spec.priority,
        j.spec.project,
        j.spec.deadline,
        j.spec.start_time,
        j.spec.predecessors,
        j.spec.array,
        j.spec.pe,
        j.tasks,
        j.error,
        j.priority,
    )
}

#[test]
fn state_files_with_and_without_a_summary_list_alike() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = Spool::create(dir.path()).expect("spool");
    let mut records = Vec::new();
    for id in 1..=3 {
        // An array with a task started: still in the system (`JobScan::jobs`).
        let mut sub = submission(id);
        sub.spec.array = Some(crate::model::TaskIdRange::new(1, 9, 2));
        spool.publish_job(&sub, b"#!/bin/sh\n").expect("publish");
        let mut rec = JobRecord::from_submission(sub);
        rec.tasks.pending[0].tasks.pop_first();
        rec.priority = Some(PriorityInfo {
            prio: 0.123_456_789_012_345_67,
            urg: 1000.5,
            policy_terms: vec![("gap".into(), "3".into())],
            ..PriorityInfo::default()
        });
        spool.write_state(&rec).expect("state");
        records.push(rec);
    }
    // Job 2 as written before summaries existed; job 3 with a summary of a later layout.
    let old = serde_json::to_vec(&records[1]).expect("encode");
    std::fs::write(spool.state_file(JobId(2)), old).expect("old state");
    let mut later = b"[\"L9\",\"whatever\"]\n".to_vec();
    later.extend(serde_json::to_vec(&records[2]).expect("encode"));
    std::fs::write(spool.state_file(JobId(3)), later).expect("later state");
    let full = spool.scan_jobs().expect("full");
    let listing = spool.scan_job_listing().expect("listing");
    assert!(full.problems.is_empty() && listing.problems.is_empty());
    assert_eq!(full.jobs, records);
    let a: Vec<String> = full.jobs.iter().map(listed).collect();
    let b: Vec<String> = listing.jobs.iter().map(listed).collect();
    assert_eq!(a, b);
    assert_eq!(
        spool.read_job(JobId(1)).expect("read"),
        Some(records[0].clone())
    );
}

#[test]
fn index_entries_decode_to_the_listing_records_of_their_files() {
    use crate::model::{RunState, RunningTask, TaskUsage};
    let mut rec = JobRecord::from_submission(submission(7));
    rec.spec.array = Some(crate::model::TaskIdRange::new(1, 9, 2));
    rec.spec.start_time = Some(1_795_000_500);
    rec.spec.array_predecessors = vec![JobId(3), JobId(4)];
    rec.spec.pe = Some(crate::model::PeRequest {
        name: "smp".into(),
        range: crate::model::SlotRange { min: 2, max: 4 },
    });
    rec.tasks.pending[0].tasks.pop_first();
    rec.tasks.pending[0].holds.operator = true;
    rec.tasks.running.push(RunningTask {
        granted: vec![
            ("a".into(), "all.q".into(), 2),
            ("b".into(), "all.q".into(), 2),
        ],
        deleting: true,
        restarted: true,
        holds: Holds {
            system: true,
            ..Holds::NONE
        },
        usage: Some(TaskUsage {
            cpu: 1.25,
            mem: 0.1 + 0.2,
            io: 1e-300,
            vmem: 3e9,
            maxvmem: f64::MAX,
        }),
        state: RunState::Suspended,
        ..RunningTask::running(1, "all.q", "a", 4, 1_795_000_600)
    });
    rec.tasks.finished = 2;
    rec.tasks.finished_tasks = crate::model::TaskSet::from_stored_ranges(vec![
        crate::model::TaskIdRange::new(3, 3, 1),
        crate::model::TaskIdRange::new(7, 9, 2),
    ]);
    rec.error = Some(crate::model::ErrorInfo {
        time: 5,
        message: "can't start: é".into(),
    });
    rec.priority = Some(PriorityInfo {
        prio: 0.123_456_789_012_345_67,
        nurg: 1.0 / 3.0,
        tickets: 1e-7,
        policy_terms: vec![("gap".into(), "3".into()), ("slice".into(), "".into())],
        ..PriorityInfo::default()
    });
    rec.version = 3;
    rec.applied_request = 42;
    let state = encode_state(&rec).expect("encode");
    let old_state = serde_json::to_vec(&rec).expect("encode");
    let mut header = serde_json::to_vec(&submission(8)).expect("encode");
    header.push(b'\n');
    let bare = JobRecord::from_submission(submission(9));
    for (bytes, is_state) in [
        (&state[..], true),
        (&old_state[..], true),
        (&header[..], false),
        (&encode_state(&bare).expect("encode")[..], true),
    ] {
        let listed = if is_state {
            parse_state(bytes, true)
        } else {
            parse_submission(bytes, true)
        }
        .expect("parse");
        let entry = listing_entry(bytes, is_state).expect("entry");
        assert_eq!(entry.kind == index::FROM_STATE_FILE, is_state);
        assert_eq!(
            listing::binary::decode(&entry.bytes).expect("decode"),
            listed
        );
        // Every shorter entry is refused, never a panic.
        for cut in 0..entry.bytes.len() {
            assert!(listing::binary::decode(&entry.bytes[..cut]).is_err());
        }
    }
}

#[test]
fn listing_scan_shows_what_a_full_scan_shows_with_requests_applied() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = Spool::create(dir.path()).expect("spool");
    // Job 1 has a state file, job 2 only its submission, job 3 a state and a request.
    for id in 1..=3 {
        spool
            .publish_job(&submission(id), b"#!/bin/sh\n")
            .expect("publish");
    }
    for id in [1, 3] {
        let mut rec = JobRecord::from_submission(submission(id));
        rec.priority = Some(PriorityInfo {
            prio: 0.25,
            ..PriorityInfo::default()
        });
        spool.write_state(&rec).expect("state");
    }
    let who = Requester {
        uid: 1000,
        user: "alice".into(),
        host: "vm".into(),
        manager: false,
        operator: false,
    };
    spool
        .publish_request(
            who.clone(),
            vec![RequestAction::Hold {
                job: JobId(3),
                tasks: TaskSelector::All,
                hold: Holds {
                    user: true,
                    ..Holds::NONE
                },
            }],
        )
        .expect("hold");
    spool
        .publish_request(
            who,
            vec![RequestAction::Alter {
                job: JobId(2),
                changes: vec![SpecChange::Name("renamed".into())],
            }],
        )
        .expect("alter");
    std::fs::write(spool.jobs_dir().join("stray"), b"x").expect("stray");
    let full = spool.scan_jobs().expect("full");
    let listing = spool.scan_job_listing().expect("listing");
    assert_eq!(full.jobs.len(), 3);
    let a: Vec<String> = full.jobs.iter().map(listed).collect();
    let b: Vec<String> = listing.jobs.iter().map(listed).collect();
    assert_eq!(a, b);
    assert!(full.jobs[2].tasks.pending[0].holds.user);
    assert_eq!(listing.jobs[1].spec.name, "renamed");
    // Jobs with requests are read whole; the others without what listings leave out.
    assert_eq!(listing.jobs[2].spec.env, full.jobs[2].spec.env);
    assert!(listing.jobs[0].spec.env.is_empty());
    assert_eq!(full.problems.len(), 1);
    assert_eq!(listing.problems.len(), 1);
}

/// A job read alone is what a listing shows of it: requests not yet folded in applied
/// (a deletion takes it out of the system at once), an unknown job nothing.
#[test]
fn a_job_read_alone_is_what_a_listing_shows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = Spool::create(dir.path()).expect("spool");
    for id in 1..=2 {
        spool
            .publish_job(&submission(id), b"#!/bin/sh\n")
            .expect("publish");
    }
    let who = Requester {
        uid: 1000,
        user: "alice".into(),
        host: "vm".into(),
        manager: false,
        operator: false,
    };
    spool
        .publish_request(
            who.clone(),
            vec![RequestAction::Hold {
                job: JobId(1),
                tasks: TaskSelector::All,
                hold: Holds {
                    user: true,
                    ..Holds::NONE
                },
            }],
        )
        .expect("hold");
    spool
        .publish_request(
            who,
            vec![RequestAction::Delete {
                job: JobId(2),
                tasks: TaskSelector::All,
                force: false,
            }],
        )
        .expect("delete");
    let one = spool.read_job_in_system(JobId(1)).expect("read");
    assert!(one.is_some_and(|j| j.tasks.pending[0].holds.user));
    assert!(spool.read_job_in_system(JobId(2)).expect("read").is_none());
    assert!(spool.read_job_in_system(JobId(3)).expect("read").is_none());
    let listing = spool.scan_job_listing().expect("listing");
    assert_eq!(listing.jobs.len(), 1);
}
