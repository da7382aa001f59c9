//! The spool directory: the only code that knows paths.
//!
//! Layout of `$SGE_ROOT/$SGE_CELL` (documented for administrators in `spool/README.md`):
//!
//! | path | written by | what |
//! |---|---|---|
//! | `config.yaml` | administrator | cluster configuration (`config` module) |
//! | `config.snapshot` | `sched_d` | the configuration compiled, for clients (`config::snapshot`) |
//! | `common/` | administrator, `sched_d` | SGE's own files: `sge_request`, `accounting`, `settings.sh` |
//! | `seq/` | clients (locked) | `jobid` and `request` counters |
//! | `jobs/<id>.job` | `qsub`, once | submission header (one JSON line) followed by the script |
//! | `jobs/<id>.state` | `sched_d` | the job record as it is now |
//! | `jobs/<id>.exits` | `sched_d`, appended | one line per finished task (for `qsub -sync`) |
//! | `ars/<id>.ar`, `ars/<id>.state` | `qrsub`, `sched_d` | advance reservations ([`ars`]) |
//! | `requests/<seq>.req` | `qdel`, `qalter`, `qhold`, `qrls` | change requests, applied in order |
//! | `quarantine/` | `sched_d` | malformed or foreign files set aside, each with a `.reason` |
//! | `daemon/` | `sched_d` | lock, pid file, log, the listing index ([`index`]), `storage_blocked`, the start-time forecast (`estimates`) |
//!
//! Names starting with a dot are temporary files of [`crate::file::durable`] and are never
//! read. Every file under the spool is opened through [`crate::file::open`]: never through a
//! link, never blocking on a FIFO, regular files only.

mod ars;
mod estimates;
pub mod index;
mod jobs;
mod qinstances;
mod requests;
pub mod sequence;

pub use ars::ArScan;
pub use index::{IndexWriter, ListingEntry};
pub use jobs::{
    JobIds, JobLine, JobLines, JobScan, PendingGroups, RunningLine, RunningTasks, ScanProblem,
    TaskRanges, encode_state, listing_entry,
};
pub use qinstances::{QueueInstanceStates, Reply};

use crate::file::open::OpenError;
use crate::file::{FileError, durable, open};
use std::path::{Path, PathBuf};

/// An I/O or format problem in the spool, with the path and the operation.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} already exists")]
    Exists { path: PathBuf },
    #[error("{path}: {reason}")]
    Malformed { path: PathBuf, reason: String },
    #[error("no spool at {path}: run `sched_d --init` to create one")]
    Missing { path: PathBuf },
    /// A FIFO, socket, device, directory or link where the spool expects a file
    /// ([`open`]): set aside, never read.
    #[error("{path}: not a regular file ({kind})")]
    NotRegular { path: PathBuf, kind: &'static str },
}

impl SpoolError {
    /// The error of opening `path` with [`open`].
    pub fn open(op: &'static str, path: &Path, e: OpenError) -> Self {
        match e {
            OpenError::NotRegular(kind) => SpoolError::NotRegular {
                path: path.to_path_buf(),
                kind,
            },
            OpenError::Io(source) => SpoolError::io(op, path, source),
        }
    }

    /// Whether the storage refused the write (a full disk, a quota, an I/O error): what
    /// may pass once space returns, as opposed to a refusal that will stand.
    pub fn is_storage_failure(&self) -> bool {
        matches!(self, SpoolError::Io { source, .. } if durable::is_storage_failure(source))
    }

    /// Whether the file was not there (an `Io` error of kind `NotFound`).
    pub fn is_not_found(&self) -> bool {
        matches!(self, SpoolError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }

    pub fn io(op: &'static str, path: &Path, source: std::io::Error) -> Self {
        SpoolError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }
}

impl From<FileError> for SpoolError {
    fn from(e: FileError) -> Self {
        match e {
            FileError::Io { op, path, source } => SpoolError::Io { op, path, source },
            FileError::Exists { path } => SpoolError::Exists { path },
        }
    }
}

/// Mode of files clients publish: readable by the spool group (multi-user installs run the
/// clients setgid to that group), never by others.
pub const CLIENT_FILE_MODE: u32 = 0o640;

/// A spool directory (`$SGE_ROOT/$SGE_CELL`).
#[derive(Debug, Clone)]
pub struct Spool {
    root: PathBuf,
    /// Job ids up to this one are known to be durable in `seq/jobid` (`sched_d` syncs the
    /// counter before removing a job file above it; see [`sequence::Sync::Deferred`]).
    job_ids_durable_upto: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// The name of the marker of [`Spool::storage_blocked_path`].
const STORAGE_BLOCKED: &str = "storage_blocked";

/// What `qstat -j` shows for a pending job while the marker is up (in the manner of SGE's
/// `All queues dropped because of overload or full`).
pub const STORAGE_BLOCKED_REASON: &str =
    "all jobs dropped because job ends cannot be recorded (storage blocked)";

/// The subdirectories a spool must have.
const SUBDIRS: [&str; 7] = [
    "common",
    "seq",
    "jobs",
    "requests",
    "ars",
    "quarantine",
    "daemon",
];

impl Spool {
    /// Opens an existing spool, checking that it looks like one.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, SpoolError> {
        let root = root.into();
        if !root.join("jobs").is_dir() || !root.join("seq").is_dir() {
            return Err(SpoolError::Missing { path: root });
        }
        Ok(Spool::at(root))
    }

    /// Creates the directory tree of a new spool (idempotent). `sched_d --init` then writes the
    /// default configuration.
    pub fn create(root: impl Into<PathBuf>) -> Result<Self, SpoolError> {
        let root = root.into();
        for sub in SUBDIRS {
            let dir = root.join(sub);
            std::fs::create_dir_all(&dir).map_err(|e| SpoolError::io("mkdir", &dir, e))?;
        }
        durable::sync_dir(&root)?;
        Ok(Spool::at(root))
    }

    fn at(root: PathBuf) -> Self {
        Spool {
            root,
            job_ids_durable_upto: Default::default(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn config_path(&self) -> PathBuf {
        self.root.join("config.yaml")
    }

    /// `config.snapshot`: the configuration as `sched_d` last parsed it, with the text it
    /// parsed (`config::snapshot`); clients use it only when it matches `config.yaml`.
    pub fn config_snapshot_path(&self) -> PathBuf {
        self.root.join("config.snapshot")
    }

    /// The configuration, as clients load it: from the snapshot when it stands for the
    /// current `config.yaml`, else from the YAML.
    pub fn load_config(&self) -> Result<crate::config::ClusterConfig, crate::config::ConfigError> {
        crate::config::ClusterConfig::load_with_snapshot(
            &self.config_path(),
            &self.config_snapshot_path(),
        )
    }

    /// Writes the snapshot of `config`, parsed from `text` (`sched_d` only). Returns false,
    /// writing nothing, when the configuration cannot be carried exactly by the snapshot; an
    /// old snapshot is then removed, although it could not match `text` anyway.
    pub fn write_config_snapshot(
        &self,
        text: &str,
        config: &crate::config::ClusterConfig,
    ) -> Result<bool, SpoolError> {
        match crate::config::snapshot::encode(text.as_bytes(), config) {
            Some(bytes) => {
                durable::write_replace(&self.root, "config.snapshot", &bytes, 0o644)?;
                Ok(true)
            }
            None => {
                durable::remove(&self.root, "config.snapshot")?;
                Ok(false)
            }
        }
    }

    pub fn common_dir(&self) -> PathBuf {
        self.root.join("common")
    }

    /// `common/sge_request`: cluster-wide default qsub options, as in SGE.
    pub fn cluster_sge_request(&self) -> PathBuf {
        self.common_dir().join("sge_request")
    }

    /// `common/accounting`: SGE's accounting file.
    pub fn accounting_path(&self) -> PathBuf {
        self.common_dir().join("accounting")
    }

    /// `usage/baseline`: share-tree usage imported from SGE and the part of the accounting
    /// file it covers (`acct::baseline`); `sched_d` starts its usage from it.
    pub fn usage_baseline_path(&self) -> PathBuf {
        self.root.join("usage").join("baseline")
    }

    pub fn seq_dir(&self) -> PathBuf {
        self.root.join("seq")
    }

    pub fn jobs_dir(&self) -> PathBuf {
        self.root.join("jobs")
    }

    pub fn requests_dir(&self) -> PathBuf {
        self.root.join("requests")
    }

    pub fn quarantine_dir(&self) -> PathBuf {
        self.root.join("quarantine")
    }

    pub fn daemon_dir(&self) -> PathBuf {
        self.root.join("daemon")
    }

    pub fn job_file(&self, id: crate::model::JobId) -> PathBuf {
        self.jobs_dir().join(format!("{id}.job"))
    }

    pub fn state_file(&self, id: crate::model::JobId) -> PathBuf {
        self.jobs_dir().join(format!("{id}.state"))
    }

    pub fn exits_file(&self, id: crate::model::JobId) -> PathBuf {
        self.jobs_dir().join(format!("{id}.exits"))
    }

    /// `daemon/storage_blocked`: present while `sched_d` cannot make job ends durable and
    /// so starts nothing (issue 12). Its text, when it could be written, says why.
    pub fn storage_blocked_path(&self) -> PathBuf {
        self.daemon_dir().join(STORAGE_BLOCKED)
    }

    /// Why dispatch is stopped, if `sched_d` says it is ([`Spool::storage_blocked_path`]);
    /// a marker whose text could not be written (the disk was full) gives the general
    /// reason.
    pub fn storage_blocked(&self) -> Option<String> {
        let text = match open::read_to_string(&self.storage_blocked_path()) {
            Ok(t) => t,
            Err(_) => return None,
        };
        Some(match text.strip_suffix('\n') {
            Some(why) if !why.is_empty() && !why.contains('\n') => {
                format!("{STORAGE_BLOCKED_REASON}: {why}")
            }
            _ => STORAGE_BLOCKED_REASON.to_string(),
        })
    }

    /// Puts up the marker (`sched_d` only). Best effort, and not by [`durable`]: on a full
    /// disk an empty file can still be created (it needs an inode, no data block) where a
    /// temporary file with the text could not; the text follows if it fits.
    pub fn set_storage_blocked(&self, why: &str) {
        use std::io::Write;
        let path = self.storage_blocked_path();
        let _ = std::fs::remove_file(&path);
        if let Ok(mut f) = open::open_append(&path, 0o644) {
            let _ = f.write_all(format!("{}\n", why.replace('\n', " ")).as_bytes());
        }
    }

    /// Takes the marker down (`sched_d`, when ends are durable again and at start-up).
    pub fn clear_storage_blocked(&self) {
        let _ = std::fs::remove_file(self.storage_blocked_path());
    }

    /// Sets a malformed file aside with a note saying why; used by `sched_d`, never by clients
    /// (they only report). Returns where it went.
    pub fn quarantine(&self, path: &Path, reason: &str) -> Result<PathBuf, SpoolError> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stamp = crate::time::now();
        let target_name = format!("{stamp}.{name}");
        let target = self.quarantine_dir().join(&target_name);
        if path.parent() == Some(self.jobs_dir().as_path())
            && let Some(id) = name.split('.').next().and_then(|s| s.parse().ok())
        {
            // A job file leaving `jobs/` no longer keeps its id taken (`sequence::Sync`).
            self.ensure_job_id_durable(crate::model::JobId(id))?;
        }
        std::fs::rename(path, &target).map_err(|e| SpoolError::io("rename", path, e))?;
        durable::write_replace(
            &self.quarantine_dir(),
            &format!("{target_name}.reason"),
            format!("{}\n{reason}\n", path.display()).as_bytes(),
            0o640,
        )?;
        if let Some(parent) = path.parent() {
            durable::sync_dir(parent)?;
        }
        Ok(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ClusterConfig;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn clients_take_the_snapshot_only_while_it_matches_config_yaml() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spool = Spool::create(dir.path()).expect("spool");
        let text = ClusterConfig::default_text("node1", 4);
        std::fs::write(spool.config_path(), &text).expect("config");
        // A snapshot of this very text whose configuration differs from the YAML's shows
        // which of the two a client loaded.
        let mut marked = ClusterConfig::parse(&text).expect("parses");
        marked.managers = vec!["from-snapshot".into()];
        assert!(spool.write_config_snapshot(&text, &marked).expect("write"));
        assert_eq!(spool.load_config().expect("load"), marked);

        // Writable by others: not trusted.
        let snap = spool.config_snapshot_path();
        std::fs::set_permissions(&snap, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        assert!(spool.load_config().expect("load").managers.is_empty());
        std::fs::set_permissions(&snap, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert_eq!(spool.load_config().expect("load"), marked);

        // config.yaml edited (same length), the snapshot not rewritten: the YAML wins.
        let edited = text.replacen("slots: 4", "slots: 5", 1);
        std::fs::write(spool.config_path(), &edited).expect("edit");
        let loaded = spool.load_config().expect("load");
        assert!(loaded.managers.is_empty());
        assert_eq!(loaded.queues[0].slots, 5);
    }

    #[test]
    fn job_ids_taken_without_a_sync_are_synced_before_their_job_files_go() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spool = Spool::create(dir.path()).expect("spool");
        let a = spool.allocate_job_id_for_publication().expect("id");
        let b = spool.allocate_job_id_for_publication().expect("id");
        assert_eq!((a.0, b.0), (1, 2));
        assert_eq!(
            sequence::current(&spool.seq_dir(), "jobid").expect("current"),
            2
        );
        spool.ensure_job_id_durable(b).expect("sync");
        spool.remove_job(a).expect("remove");
        // A counter behind an existing job file (restored from a backup, say) moves past it.
        std::fs::write(spool.job_file(crate::model::JobId(3)), b"{}\n").expect("job file");
        assert_eq!(spool.allocate_job_id().expect("id").0, 4);
    }
}
