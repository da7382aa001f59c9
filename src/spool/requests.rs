//! Change requests, published Maildir style by the clients and consumed by `sched_d`.

use super::{CLIENT_FILE_MODE, ScanProblem, Spool, SpoolError, sequence};
use crate::file::durable;
use crate::model::{Request, RequestAction, Requester};
use std::fs;

fn request_name(seq: u64) -> String {
    format!("{seq:012}.req")
}

impl Spool {
    /// Publishes one request with the next sequence number and returns it.
    pub fn publish_request(
        &self,
        requester: Requester,
        actions: Vec<RequestAction>,
    ) -> Result<Request, SpoolError> {
        let requests = self.requests_dir();
        let seq = sequence::next_free(
            &self.seq_dir(),
            "request",
            1,
            sequence::Sync::Now,
            |n| requests.join(request_name(n)).exists(),
            || self.highest_request_seen(),
        )?;
        let req = Request {
            v: 1,
            seq,
            requester,
            time: crate::time::now(),
            actions,
        };
        let name = request_name(seq);
        let bytes = serde_json::to_vec(&req).map_err(|e| SpoolError::Malformed {
            path: self.requests_dir().join(&name),
            reason: format!("cannot encode request: {e}"),
        })?;
        durable::write_new(&self.requests_dir(), &name, &bytes, CLIENT_FILE_MODE)?;
        Ok(req)
    }

    /// The highest request number anything in the cell still carries: a request not yet
    /// consumed, a reply of `sched_d`'s, or a job's last applied request. What an emptied or
    /// garbled request counter is rebuilt from: a number issued again would be taken for
    /// one already applied to a job (and ignored), or read an earlier request's reply.
    fn highest_request_seen(&self) -> Result<u64, SpoolError> {
        let mut highest = 0u64;
        let replies = self.daemon_dir().join(super::qinstances::REPLIES);
        for dir in [self.requests_dir(), replies] {
            let entries = match fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(SpoolError::io("readdir", &dir, e)),
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let number = name
                    .to_string_lossy()
                    .split('.')
                    .next()
                    .map(str::parse::<u64>);
                if let Some(Ok(n)) = number {
                    highest = highest.max(n);
                }
            }
        }
        for job in self.scan_job_listing()?.jobs {
            highest = highest.max(job.applied_request);
        }
        Ok(highest)
    }

    /// Every request not yet consumed, in sequence order, plus files that are not requests.
    pub fn scan_requests(&self) -> Result<(Vec<Request>, Vec<ScanProblem>), SpoolError> {
        let dir = self.requests_dir();
        let mut requests = Vec::new();
        let mut problems = Vec::new();
        let entries = fs::read_dir(&dir).map_err(|e| SpoolError::io("readdir", &dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| SpoolError::io("readdir", &dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            if !name.ends_with(".req") {
                problems.push(ScanProblem {
                    path,
                    reason: "not a gridspool request".into(),
                });
                continue;
            }
            match crate::file::open::read(&path) {
                Ok(bytes) => match serde_json::from_slice::<Request>(&bytes) {
                    Ok(req) => requests.push(req),
                    Err(e) => problems.push(ScanProblem {
                        path,
                        reason: format!("bad request: {e}"),
                    }),
                },
                Err(e) if e.is_not_found() => {}
                Err(e) => problems.push(ScanProblem {
                    path,
                    reason: e.to_string(),
                }),
            }
        }
        requests.sort_unstable_by_key(|r| r.seq);
        Ok((requests, problems))
    }

    /// Removes a consumed request (`sched_d`, after the affected records are durable).
    pub fn remove_request(&self, seq: u64) -> Result<(), SpoolError> {
        durable::remove(&self.requests_dir(), &request_name(seq)).map_err(SpoolError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::JobId;

    /// An emptied or garbled request counter goes on past every number the cell still
    /// carries: a request waiting, a reply, a job's last applied request.
    #[test]
    fn an_emptied_request_counter_goes_on_past_every_number_in_use() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spool = Spool::create(dir.path()).expect("spool");
        let who = Requester {
            uid: 1000,
            user: "alice".into(),
            host: "vm".into(),
            manager: false,
            operator: false,
        };
        let hold = || {
            vec![RequestAction::Delete {
                job: JobId(1),
                tasks: crate::model::TaskSelector::All,
                force: false,
            }]
        };
        for _ in 0..3 {
            spool.publish_request(who.clone(), hold()).expect("publish");
        }
        let counter = spool.seq_dir().join("request");
        std::fs::write(&counter, "").expect("empty the counter");
        assert_eq!(
            spool
                .publish_request(who.clone(), hold())
                .expect("publish")
                .seq,
            4
        );
        // Requests consumed, a reply of 7 kept: the count goes on past the reply.
        for entry in std::fs::read_dir(spool.requests_dir()).expect("readdir") {
            std::fs::remove_file(entry.expect("entry").path()).expect("consume");
        }
        let reply = crate::spool::Reply {
            v: 1,
            ok: true,
            message: String::new(),
            exit_status: None,
        };
        spool.write_reply(7, &reply).expect("reply");
        std::fs::write(&counter, "garbled\n").expect("garble the counter");
        assert_eq!(spool.publish_request(who, hold()).expect("publish").seq, 8);
    }
}
