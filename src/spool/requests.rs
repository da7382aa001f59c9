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
        let seq = sequence::next(&self.seq_dir(), "request")?;
        let req = Request {
            v: 1,
            seq,
            requester,
            time: jiff::Timestamp::now().as_second(),
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
