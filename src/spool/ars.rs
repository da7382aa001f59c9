//! Advance reservations in the spool (`ars/`): `qrsub` publishes `<id>.ar` once (the
//! submission, owned by its submitter as the kernel records it), `sched_d` alone writes
//! `<id>.state` (granted and what it holds, or refused and why) and removes both when the
//! reservation ends, is deleted, or its refusal has been read. Ids come from their own
//! counter, `seq/arid`, under the same rules as job ids (`spool/README.md`).

use super::{CLIENT_FILE_MODE, ScanProblem, Spool, SpoolError, sequence};
use crate::file::durable;
use crate::model::{ArRecord, ArSubmission};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// What `ars/` holds: the reservations `sched_d` has decided on and the submissions it has
/// not decided on yet.
#[derive(Debug, Default)]
pub struct ArScan {
    pub records: Vec<ArRecord>,
    /// Submissions without a state yet, with the uid that owns their file.
    pub undecided: Vec<(ArSubmission, u32)>,
    pub problems: Vec<ScanProblem>,
}

impl Spool {
    /// `ars/`: advance reservations.
    pub fn ars_dir(&self) -> PathBuf {
        self.root.join("ars")
    }

    pub fn ar_submission_file(&self, id: u32) -> PathBuf {
        self.ars_dir().join(format!("{id}.ar"))
    }

    pub fn ar_state_file(&self, id: u32) -> PathBuf {
        self.ars_dir().join(format!("{id}.state"))
    }

    /// Creates `ars/` in a cell made before advance reservations existed, shared as
    /// `requests/` is (its group and mode: clients of a multi-user installation create
    /// files in it through the spool group).
    pub fn ensure_ars_dir(&self) -> Result<PathBuf, SpoolError> {
        let dir = self.ars_dir();
        if !dir.is_dir() {
            std::fs::create_dir_all(&dir).map_err(|e| SpoolError::io("mkdir", &dir, e))?;
            use std::os::unix::fs::PermissionsExt;
            if let Ok(like) = std::fs::metadata(self.requests_dir()) {
                let _ = std::os::unix::fs::chown(&dir, None, Some(like.gid()));
                let _ = std::fs::set_permissions(
                    &dir,
                    std::fs::Permissions::from_mode(like.mode() & 0o7777),
                );
            }
            durable::sync_dir(&self.root)?;
        }
        Ok(dir)
    }

    /// The next AR id (`seq/arid`), durable before it is returned; skips ids whose files
    /// exist, and an emptied or garbled counter goes on from the highest id the cell still
    /// carries (a file in `ars/`, an `arid` of the accounting file).
    pub fn allocate_ar_id(&self) -> Result<u32, SpoolError> {
        let dir = self.ensure_ars_dir()?;
        let n = sequence::next_free(
            &self.seq_dir(),
            "arid",
            1,
            sequence::Sync::Now,
            |n| dir.join(format!("{n}.ar")).exists() || dir.join(format!("{n}.state")).exists(),
            || self.highest_ar_id_seen(),
        )?;
        u32::try_from(n).map_err(|_| SpoolError::Malformed {
            path: self.seq_dir().join("arid"),
            reason: "advance reservation id sequence exhausted (above 2^32)".into(),
        })
    }

    fn highest_ar_id_seen(&self) -> Result<u64, SpoolError> {
        // accounting(5): `arid` is the 44th field.
        Ok(self
            .highest_id_in_dir(&self.ars_dir())
            .max(self.highest_in_accounting(43)?))
    }

    /// Publishes a submission (`qrsub`), whole or not at all, never over another.
    pub fn publish_ar(&self, sub: &ArSubmission) -> Result<(), SpoolError> {
        let dir = self.ensure_ars_dir()?;
        let name = format!("{}.ar", sub.id);
        let bytes = serde_json::to_vec(sub).map_err(|e| SpoolError::Malformed {
            path: dir.join(&name),
            reason: format!("cannot encode advance reservation: {e}"),
        })?;
        durable::write_new(&dir, &name, &bytes, CLIENT_FILE_MODE)?;
        Ok(())
    }

    /// Writes the reservation as it is now (`sched_d` only).
    pub fn write_ar_state(&self, record: &ArRecord) -> Result<(), SpoolError> {
        let dir = self.ensure_ars_dir()?;
        let name = format!("{}.state", record.id());
        let bytes = serde_json::to_vec(record).map_err(|e| SpoolError::Malformed {
            path: dir.join(&name),
            reason: format!("cannot encode advance reservation: {e}"),
        })?;
        durable::write_replace(&dir, &name, &bytes, CLIENT_FILE_MODE)?;
        Ok(())
    }

    /// Removes a reservation's files (`sched_d` only), after making the id counter durable
    /// past it, so that the id is never handed out again.
    pub fn remove_ar(&self, id: u32) -> Result<(), SpoolError> {
        sequence::sync(&self.seq_dir(), "arid")?;
        let dir = self.ars_dir();
        durable::remove(&dir, &format!("{id}.state"))?;
        durable::remove(&dir, &format!("{id}.ar"))?;
        Ok(())
    }

    /// One reservation's state, if `sched_d` has decided on it.
    pub fn read_ar_state(&self, id: u32) -> Result<Option<ArRecord>, SpoolError> {
        let path = self.ar_state_file(id);
        match crate::file::open::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| SpoolError::Malformed {
                        path,
                        reason: format!("bad advance reservation: {e}"),
                    })
            }
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(SpoolError::open("read", &path, e)),
        }
    }

    /// A submission and the uid that owns its file.
    pub fn read_ar_submission(&self, id: u32) -> Result<(ArSubmission, u32), SpoolError> {
        let path = self.ar_submission_file(id);
        let mut f =
            crate::file::open::open(&path).map_err(|e| SpoolError::open("open", &path, e))?;
        let owner = f
            .metadata()
            .map_err(|e| SpoolError::io("stat", &path, e))?
            .uid();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut f, &mut bytes)
            .map_err(|e| SpoolError::io("read", &path, e))?;
        let sub = serde_json::from_slice(&bytes).map_err(|e| SpoolError::Malformed {
            path,
            reason: format!("bad advance reservation: {e}"),
        })?;
        Ok((sub, owner))
    }

    /// Every reservation in `ars/`, in id order.
    pub fn scan_ars(&self) -> Result<ArScan, SpoolError> {
        let dir = self.ars_dir();
        let mut scan = ArScan::default();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(scan),
            Err(e) => return Err(SpoolError::io("readdir", &dir, e)),
        };
        let mut submitted = std::collections::BTreeSet::new();
        let mut decided = std::collections::BTreeSet::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            match name.split_once('.') {
                Some((id, "ar")) if id.parse::<u32>().is_ok() => {
                    submitted.insert(id.parse::<u32>().unwrap_or(0));
                }
                Some((id, "state")) if id.parse::<u32>().is_ok() => {
                    decided.insert(id.parse::<u32>().unwrap_or(0));
                }
                _ => scan.problems.push(ScanProblem {
                    path: entry.path(),
                    reason: "not a gridspool advance reservation".into(),
                }),
            }
        }
        for &id in &decided {
            match self.read_ar_state(id) {
                Ok(Some(r)) => scan.records.push(r),
                Ok(None) => {}
                Err(e) => scan.problems.push(ScanProblem {
                    path: self.ar_state_file(id),
                    reason: e.to_string(),
                }),
            }
        }
        for id in submitted.difference(&decided) {
            match self.read_ar_submission(*id) {
                Ok(s) => scan.undecided.push(s),
                Err(e) if e.is_not_found() => {}
                Err(e) => scan.problems.push(ScanProblem {
                    path: self.ar_submission_file(*id),
                    reason: e.to_string(),
                }),
            }
        }
        Ok(scan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An emptied or garbled AR counter goes on past every id the cell still carries: a
    /// reservation's files and an `arid` of the accounting file.
    #[test]
    fn an_emptied_ar_counter_goes_on_past_every_id_in_use() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spool = Spool::create(dir.path()).expect("spool");
        assert_eq!(spool.allocate_ar_id().expect("id"), 1);
        assert_eq!(spool.allocate_ar_id().expect("id"), 2);
        std::fs::write(spool.ars_dir().join("2.state"), "{}").expect("state");
        let counter = spool.seq_dir().join("arid");
        std::fs::write(&counter, "").expect("empty the counter");
        assert_eq!(spool.allocate_ar_id().expect("id"), 3);
        // An accounting record of a job in AR 17 (the 44th field).
        let mut fields = vec!["0"; 46];
        fields[43] = "17";
        std::fs::write(spool.accounting_path(), format!("{}\n", fields.join(":")))
            .expect("accounting");
        std::fs::write(&counter, "x1\n").expect("garble the counter");
        assert_eq!(spool.allocate_ar_id().expect("id"), 18);
    }
}
