//! What the library asks of the cell. A user's process may not read or write the spool (only
//! the installed clients may, setgid to the cell's group: `docs/security.md`), so jobs are
//! submitted and controlled by running those clients — `qsub -terse`, `qdel`, `qhold`,
//! `qrls`, `qmod` — as Grid Engine's library asks its qmaster. Their state comes from one
//! client that stays for the session, `qstat --drmaa-agent` ([`States`]), which reads the
//! spool's listing and waits on its events for the session, so that a session with thousands
//! of jobs costs no process per call; their ends from the accounting file, which everyone may
//! read and which is followed from where it ended when the session began.

use crate::error::{DrmaaError, DrmaaResult, Errno};
use gridspool::acct::AccountingRecord;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

/// `DRMAA_PS_*`.
pub mod ps {
    pub const UNDETERMINED: i32 = 0x00;
    pub const QUEUED_ACTIVE: i32 = 0x10;
    pub const SYSTEM_ON_HOLD: i32 = 0x11;
    pub const USER_ON_HOLD: i32 = 0x12;
    pub const USER_SYSTEM_ON_HOLD: i32 = 0x13;
    pub const RUNNING: i32 = 0x20;
    pub const SYSTEM_SUSPENDED: i32 = 0x21;
    pub const USER_SUSPENDED: i32 = 0x22;
    pub const DONE: i32 = 0x30;
    pub const FAILED: i32 = 0x40;
}

/// A DRMAA job id: `7` for a job, `7.3` for a task of a bulk job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobRef {
    pub job: u32,
    pub task: Option<u32>,
}

impl JobRef {
    pub fn parse(text: &str) -> DrmaaResult<JobRef> {
        let bad = || DrmaaError::new(Errno::InvalidArgument, format!("invalid job id \"{text}\""));
        let (job, task) = match text.split_once('.') {
            Some((j, t)) => (j, Some(t.parse().map_err(|_| bad())?)),
            None => (text, None),
        };
        Ok(JobRef {
            job: job.parse().map_err(|_| bad())?,
            task,
        })
    }

    /// The accounting file's `(job_number, task_number)`: 0 for a job that is no array.
    fn key(&self) -> (u32, u32) {
        (self.job, self.task.unwrap_or(0))
    }
}

impl std::fmt::Display for JobRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.task {
            Some(t) => write!(f, "{}.{t}", self.job),
            None => write!(f, "{}", self.job),
        }
    }
}

/// The cell of `$SGE_ROOT`/`$SGE_CELL`, and how to reach its commands.
#[derive(Debug, Clone)]
pub struct Cell {
    sge_root: PathBuf,
    spool: PathBuf,
    user: String,
    pub home: String,
}

impl Cell {
    pub fn locate() -> DrmaaResult<Cell> {
        let spool = gridspool::cli::locate_spool(None)
            .map_err(|e| DrmaaError::new(Errno::DrmsInitFailed, e.to_string()))?;
        let sge_root = spool.parent().map(Path::to_path_buf).unwrap_or_default();
        let me = nix::unistd::User::from_uid(nix::unistd::getuid())
            .ok()
            .flatten()
            .ok_or_else(|| DrmaaError::new(Errno::DrmsInitFailed, "who am I? no passwd entry"))?;
        Ok(Cell {
            sge_root,
            spool,
            user: me.name,
            home: me.dir.to_string_lossy().into_owned(),
        })
    }

    /// A client program: `$GRIDSPOOL_BIN` (a directory, for tests), else
    /// `$SGE_ROOT/bin/<arch>/<name>` (as the installation links them), else the one of `PATH`.
    fn program(&self, name: &str) -> PathBuf {
        if let Some(dir) = std::env::var_os("GRIDSPOOL_BIN") {
            return Path::new(&dir).join(name);
        }
        let arch = match std::env::consts::ARCH {
            "x86_64" => "lx-amd64",
            "aarch64" => "lx-arm64",
            other => other,
        };
        let installed = self.sge_root.join("bin").join(arch).join(name);
        if installed.exists() {
            return installed;
        }
        PathBuf::from(name)
    }

    /// Runs a client; its standard output, or its standard error as the error.
    fn run(&self, name: &str, args: &[String], code: Errno) -> DrmaaResult<String> {
        self.run_with(name, args, &[], code)
    }

    /// [`Cell::run`] with variables added to the client's environment.
    fn run_with(
        &self,
        name: &str,
        args: &[String],
        env: &[(String, String)],
        code: Errno,
    ) -> DrmaaResult<String> {
        let out = Command::new(self.program(name))
            .args(args)
            .envs(env.iter().map(|(n, v)| (n, v)))
            .env("SGE_ROOT", &self.sge_root)
            .env("SGE_CELL", self.spool.file_name().unwrap_or_default())
            .output()
            .map_err(|e| {
                DrmaaError::new(
                    Errno::DrmCommunicationFailure,
                    format!("cannot run {name}: {e}"),
                )
            })?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            let mut why = String::from_utf8_lossy(&out.stderr).trim().to_string();
            if why.is_empty() {
                why = String::from_utf8_lossy(&out.stdout).trim().to_string();
            }
            Err(DrmaaError::new(code, why))
        }
    }

    /// Submits, with `env` in qsub's environment (variables its `-v` names bare); the ids of
    /// the job (one) or of the tasks of a bulk job.
    pub fn submit(
        &self,
        mut args: Vec<String>,
        env: &[(String, String)],
    ) -> DrmaaResult<Vec<JobRef>> {
        args.insert(0, "-terse".to_string());
        let out = self.run_with("qsub", &args, env, Errno::DeniedByDrm)?;
        let line = out.trim();
        // `7`, or `7.1-10:2` for an array.
        let bad = || DrmaaError::new(Errno::InternalError, format!("qsub said \"{line}\""));
        match line.split_once('.') {
            None => Ok(vec![JobRef {
                job: line.parse().map_err(|_| bad())?,
                task: None,
            }]),
            Some((job, range)) => {
                let job: u32 = job.parse().map_err(|_| bad())?;
                let (span, step) = range.split_once(':').unwrap_or((range, "1"));
                let (first, last) = span.split_once('-').unwrap_or((span, span));
                let (first, last, step): (u32, u32, u32) = (
                    first.parse().map_err(|_| bad())?,
                    last.parse().map_err(|_| bad())?,
                    step.parse().map_err(|_| bad())?,
                );
                Ok((first..=last)
                    .step_by(step.max(1) as usize)
                    .map(|t| JobRef { job, task: Some(t) })
                    .collect())
            }
        }
    }

    /// `drmaa_control`'s actions, with the client each takes.
    pub fn control(&self, job: JobRef, action: i32) -> DrmaaResult<()> {
        let id = job.to_string();
        let (program, args, code): (&str, Vec<String>, Errno) = match action {
            0 => (
                "qmod",
                vec!["-sj".into(), id],
                Errno::SuspendInconsistentState,
            ),
            1 => (
                "qmod",
                vec!["-usj".into(), id],
                Errno::ResumeInconsistentState,
            ),
            2 => (
                "qhold",
                vec!["-h".into(), "u".into(), id],
                Errno::HoldInconsistentState,
            ),
            3 => (
                "qrls",
                vec!["-h".into(), "u".into(), id],
                Errno::ReleaseInconsistentState,
            ),
            4 => ("qdel", vec![id], Errno::InternalError),
            _ => {
                return Err(DrmaaError::new(
                    Errno::InvalidArgument,
                    format!("unknown control action {action}"),
                ));
            }
        };
        match self.run(program, &args, code) {
            Ok(out) => {
                // qmod reports refusals on standard output with exit status 0 at times.
                let lower = out.to_lowercase();
                if lower.contains("does not exist") {
                    return Err(DrmaaError::new(Errno::InvalidJob, out.trim()));
                }
                Ok(())
            }
            Err(e) if e.message.contains("does not exist") => {
                Err(DrmaaError::new(Errno::InvalidJob, e.message))
            }
            Err(e) => Err(e),
        }
    }

    /// The caller's jobs in the cell by `qstat -xml -u <user>`: job, state letters, and the
    /// task or task range of each line (the way when no agent can be had).
    fn active_by_qstat(&self) -> DrmaaResult<Vec<ActiveLine>> {
        let xml = self.run(
            "qstat",
            &["-xml".into(), "-u".into(), self.user.clone()],
            Errno::DrmCommunicationFailure,
        )?;
        Ok(parse_qstat_xml(&xml))
    }

    /// Grid Engine's `qtask` files: the cell's, then the user's (which wins).
    pub fn qtask_files(&self) -> Vec<PathBuf> {
        vec![
            self.spool.join("common").join("qtask"),
            Path::new(&self.home).join(".qtask"),
        ]
    }

    pub fn accounting_path(&self) -> PathBuf {
        self.spool.join("common").join("accounting")
    }
}

/// One line of the cell's listing of the caller's jobs: a running task, or a group of pending
/// tasks in one state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveLine {
    pub job: u32,
    /// An array (bulk) job: its tasks are named `job.task`, the bare id names none.
    pub array: bool,
    pub state: String,
    /// `3`, or `1-10:1` for pending tasks; `None` for a job that is no array.
    pub tasks: Option<String>,
    /// What holds a pending group (`u`, `o`, `s`, `d`, `j`, `a`: the agent's letters), where
    /// known: `qstat -xml` tells only that something does.
    pub holds: Option<String>,
}

impl ActiveLine {
    pub fn covers(&self, job: JobRef) -> bool {
        self.job == job.job && tasks_cover(self.tasks.as_deref(), job.task)
    }

    /// `DRMAA_PS_*` of the state letters (`qw`, `hqw`, `r`, `s`, `S`, `Eqw`…), as Grid
    /// Engine's library maps them: error is FAILED; a user hold is USER_ON_HOLD, other holds
    /// SYSTEM_ON_HOLD; `qmod -s` is USER_SUSPENDED, a queue's suspension SYSTEM_SUSPENDED.
    pub fn ps(&self) -> i32 {
        let s = &self.state;
        if s.contains('E') {
            return ps::FAILED;
        }
        if s.contains('q') {
            if !s.contains('h') {
                return ps::QUEUED_ACTIVE;
            }
            // As Grid Engine's library: only `-h u` is the user's hold (the one
            // `drmaa_control` releases); operator and system holds, a start time ahead and
            // predecessors are the system's.
            let Some(holds) = &self.holds else {
                return ps::USER_ON_HOLD;
            };
            let user = holds.contains('u');
            let system = holds.chars().any(|c| "osdja".contains(c));
            return match (user, system) {
                (true, true) => ps::USER_SYSTEM_ON_HOLD,
                (false, true) => ps::SYSTEM_ON_HOLD,
                _ => ps::USER_ON_HOLD,
            };
        }
        let mut v = ps::RUNNING;
        if s.contains('s') {
            v |= ps::USER_SUSPENDED & 0x0f;
        }
        if s.contains('S') || s.contains('T') {
            v |= ps::SYSTEM_SUSPENDED & 0x0f;
        }
        v
    }
}

/// Whether a line's tasks (`3`, `1-10:1`, `1,3-5:1`; `None` for a job that is no array)
/// hold `task` (`None`: the job's bare id, which every line of its job holds).
fn tasks_cover(tasks: Option<&str>, task: Option<u32>) -> bool {
    match (task, tasks) {
        (None, _) | (_, None) => true,
        (Some(t), Some(range)) => range.split(',').any(|part| {
            let (span, step) = part.split_once(':').unwrap_or((part, "1"));
            let (a, b) = span.split_once('-').unwrap_or((span, span));
            match (a.parse::<u32>(), b.parse::<u32>(), step.parse::<u32>()) {
                (Ok(a), Ok(b), Ok(s)) => t >= a && t <= b && (t - a) % s.max(1) == 0,
                _ => false,
            }
        }),
    }
}

/// What the cell's forecast says of a job's pending tasks (gridspool's own; DRMAA 1.0 has
/// no start-time estimates).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartEstimate {
    /// At `time`, in `queue` on `hosts` (the master's first), `slots` in all.
    At {
        time: i64,
        queue: String,
        hosts: String,
        slots: u32,
    },
    Unknown(String),
    Never(String),
}

/// One line of the agent's answer to `start ID`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartLine {
    tasks: Option<String>,
    pub estimate: StartEstimate,
}

impl StartLine {
    pub fn covers(&self, task: Option<u32>) -> bool {
        tasks_cover(self.tasks.as_deref(), task)
    }
}

/// An agent line of `start`: `TASKS at TIME QUEUE HOSTS SLOTS`, `TASKS unknown WHY`,
/// `TASKS never WHY`.
fn parse_start_line(line: &str) -> Option<StartLine> {
    let (tasks, rest) = line.split_once(' ')?;
    let (kind, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let estimate = match kind {
        "at" => {
            let mut w = rest.split_ascii_whitespace();
            StartEstimate::At {
                time: w.next()?.parse().ok()?,
                queue: w.next()?.to_string(),
                hosts: w.next()?.to_string(),
                slots: w.next()?.parse().ok()?,
            }
        }
        "unknown" => StartEstimate::Unknown(rest.to_string()),
        "never" => StartEstimate::Never(rest.to_string()),
        _ => return None,
    };
    Some(StartLine {
        tasks: (tasks != "-").then(|| tasks.to_string()),
        estimate,
    })
}

/// The `<job_list>` entries of `qstat -xml`: number, state and tasks of each.
fn parse_qstat_xml(xml: &str) -> Vec<ActiveLine> {
    let field = |block: &str, tag: &str| -> Option<String> {
        let open = format!("<{tag}>");
        let start = block.find(&open)? + open.len();
        let end = block[start..].find(&format!("</{tag}>"))? + start;
        Some(block[start..end].trim().to_string())
    };
    xml.split("<job_list")
        .skip(1)
        .filter_map(|block| {
            let block = block.split("</job_list>").next().unwrap_or(block);
            let tasks = field(block, "tasks");
            Some(ActiveLine {
                job: field(block, "JB_job_number")?.parse().ok()?,
                array: tasks.is_some(),
                state: field(block, "state").unwrap_or_default(),
                tasks,
                holds: None,
            })
        })
        .collect()
}

/// `qstat --drmaa-agent`, started once per session: the state of the caller's jobs read from
/// the spool by a client that may read it (the library, in the user's process, may not), with
/// no process per call, and a wait woken by the spool's events (`src/cli/drmaa_agent.rs`
/// gives the requests).
struct Agent {
    child: Child,
    input: Option<ChildStdin>,
    output: BufReader<ChildStdout>,
}

impl Agent {
    fn start(cell: &Cell) -> std::io::Result<Agent> {
        let mut child = Command::new(cell.program("qstat"))
            .arg("--drmaa-agent")
            .env("SGE_ROOT", &cell.sge_root)
            .env("SGE_CELL", cell.spool.file_name().unwrap_or_default())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("no pipes to the agent"));
        };
        Ok(Agent {
            child,
            input: Some(input),
            output: BufReader::new(output),
        })
    }

    /// One request: the lines of its answer, or why it failed (`Ok(Err)`: the agent said
    /// so; `Err`: the agent is gone or never was).
    fn ask(&mut self, request: &str) -> std::io::Result<Result<Vec<String>, String>> {
        let input = self
            .input
            .as_mut()
            .ok_or_else(|| std::io::Error::other("closed"))?;
        input.write_all(format!("{request}\n").as_bytes())?;
        input.flush()?;
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            if self.output.read_line(&mut line)? == 0 {
                return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
            }
            let line = line.trim_end_matches('\n');
            if line == "." {
                return Ok(Ok(lines));
            }
            if let Some(why) = line.strip_prefix("! ") {
                // Read to the end of the answer before giving it.
                let why = why.to_string();
                loop {
                    let mut rest = String::new();
                    if self.output.read_line(&mut rest)? == 0 || rest.trim_end() == "." {
                        return Ok(Err(why));
                    }
                }
            }
            lines.push(line.to_string());
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        // The end of its input ends the agent.
        self.input.take();
        let _ = self.child.wait();
    }
}

/// An agent line: `JOB ARRAY TASKS STATE HOLDS`.
fn parse_agent_line(line: &str) -> Option<ActiveLine> {
    let mut w = line.split_ascii_whitespace();
    let job = w.next()?.parse().ok()?;
    let array = w.next()? == "1";
    let tasks = w.next()?;
    let state = w.next()?.to_string();
    let holds = w.next()?;
    Some(ActiveLine {
        job,
        array,
        state,
        tasks: (tasks != "-").then(|| tasks.to_string()),
        holds: Some(if holds == "-" {
            String::new()
        } else {
            holds.to_string()
        }),
    })
}

/// Where a session learns the state of its jobs: its agent, or `qstat -xml` once per look
/// where no agent can be had (an installation whose `qstat` predates it).
pub struct States {
    agent: Option<Agent>,
    /// The agent was tried and failed: `qstat` from then on.
    by_qstat: bool,
}

/// How often a waiting session looks at the cell without an agent.
const POLL: Duration = Duration::from_millis(200);

impl States {
    pub fn new() -> States {
        States {
            agent: None,
            by_qstat: false,
        }
    }

    fn agent(&mut self, cell: &Cell) -> Option<&mut Agent> {
        if self.agent.is_none() && !self.by_qstat {
            match Agent::start(cell) {
                Ok(a) => self.agent = Some(a),
                Err(_) => self.by_qstat = true,
            }
        }
        self.agent.as_mut()
    }

    /// The caller's jobs in the system now (only `job`'s lines when given), as one look:
    /// a job that is not in them has left the system (its end recorded before it left).
    pub fn lines(&mut self, cell: &Cell, job: Option<u32>) -> DrmaaResult<Vec<ActiveLine>> {
        let request = match job {
            Some(j) => format!("job {j}"),
            None => "jobs".to_string(),
        };
        if let Some(agent) = self.agent(cell) {
            match agent.ask(&request) {
                Ok(Ok(lines)) => {
                    return Ok(lines.iter().filter_map(|l| parse_agent_line(l)).collect());
                }
                Ok(Err(why)) => return Err(DrmaaError::new(Errno::DrmCommunicationFailure, why)),
                Err(_) => {
                    self.agent = None;
                    self.by_qstat = true;
                }
            }
        }
        let mut lines = cell.active_by_qstat()?;
        if let Some(j) = job {
            lines.retain(|l| l.job == j);
        }
        Ok(lines)
    }

    /// The lines of `jobs` (job numbers), as [`States::lines`]: a few are asked one by one
    /// (each read alone, whatever the size of the cell), many with one listing.
    pub fn lines_of(
        &mut self,
        cell: &Cell,
        jobs: &std::collections::BTreeSet<u32>,
    ) -> DrmaaResult<Vec<ActiveLine>> {
        const ONE_BY_ONE: usize = 16;
        if let [one] = jobs.iter().copied().collect::<Vec<_>>()[..] {
            return self.lines(cell, Some(one));
        }
        if jobs.len() <= ONE_BY_ONE && self.agent(cell).is_some() {
            let mut all = Vec::new();
            for j in jobs {
                all.extend(self.lines(cell, Some(*j))?);
            }
            return Ok(all);
        }
        self.lines(cell, None)
    }

    /// The forecast's estimates of `job`'s pending tasks, which only the agent can read
    /// (`qstat -xml` has none): none for a job with no pending task.
    pub fn estimates(&mut self, cell: &Cell, job: u32) -> DrmaaResult<Vec<StartLine>> {
        let Some(agent) = self.agent(cell) else {
            return Err(DrmaaError::new(
                Errno::DrmCommunicationFailure,
                "start-time estimates need the session's qstat --drmaa-agent, which could not be started",
            ));
        };
        match agent.ask(&format!("start {job}")) {
            Ok(Ok(lines)) => Ok(lines.iter().filter_map(|l| parse_start_line(l)).collect()),
            Ok(Err(why)) => Err(DrmaaError::new(Errno::DrmCommunicationFailure, why)),
            Err(e) => {
                self.agent = None;
                self.by_qstat = true;
                Err(DrmaaError::new(
                    Errno::DrmCommunicationFailure,
                    format!("the session's qstat --drmaa-agent failed: {e}"),
                ))
            }
        }
    }

    /// Waits at most `max` for the cell to change since the last look: returns early on a
    /// change where the agent sees it.
    pub fn wait_change(&mut self, cell: &Cell, max: Duration) {
        if let Some(agent) = self.agent(cell) {
            match agent.ask(&format!("wait {}", max.as_millis())) {
                Ok(_) => return,
                Err(_) => {
                    self.agent = None;
                    self.by_qstat = true;
                }
            }
        }
        std::thread::sleep(max.min(POLL));
    }
}

impl Default for States {
    fn default() -> Self {
        States::new()
    }
}

/// The ends of the caller's jobs, read from the accounting file as it grows.
#[derive(Debug)]
pub struct Ends {
    path: PathBuf,
    offset: u64,
    owner: String,
    records: HashMap<(u32, u32), AccountingRecord>,
}

impl Ends {
    /// From the file's end now (the session's jobs end later).
    pub fn from_now(cell: &Cell) -> Ends {
        let offset = std::fs::metadata(cell.accounting_path()).map_or(0, |m| m.len());
        Ends::from_offset(cell, offset)
    }

    /// From `offset`: where a session that is taken up again began.
    pub fn from_offset(cell: &Cell, offset: u64) -> Ends {
        Ends {
            path: cell.accounting_path(),
            offset,
            owner: cell.user.clone(),
            records: HashMap::new(),
        }
    }

    /// Where the next look starts.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads what was appended since the last look (from the start again if the file was
    /// cut back, as by a rotation).
    pub fn catch_up(&mut self) {
        let Ok(mut file) = std::fs::File::open(&self.path) else {
            return;
        };
        let len = file.metadata().map_or(0, |m| m.len());
        if len < self.offset {
            self.offset = 0;
        }
        if len == self.offset || file.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut bytes = Vec::new();
        if file.read_to_end(&mut bytes).is_err() {
            return;
        }
        // Whole lines only: a record being appended is read next time.
        let Some(end) = bytes.iter().rposition(|&b| b == b'\n') else {
            return;
        };
        for line in String::from_utf8_lossy(&bytes[..end]).lines() {
            if line.starts_with('#') {
                continue;
            }
            if let Ok(r) = AccountingRecord::parse_line(line)
                && r.owner == self.owner
                && r.is_master_task()
            {
                self.records.insert((r.job_number, r.task_number), r);
            }
        }
        self.offset += end as u64 + 1;
    }

    pub fn get(&self, job: JobRef) -> Option<&AccountingRecord> {
        self.records.get(&job.key())
    }

    pub fn forget(&mut self, job: JobRef) {
        self.records.remove(&job.key());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qstat_xml_lines_and_their_states() {
        let xml = "<job_info><queue_info><job_list state=\"running\"><JB_job_number>7</JB_job_number><state>r</state><tasks>3</tasks></job_list></queue_info><job_info><job_list state=\"pending\"><JB_job_number>7</JB_job_number><state>hqw</state><tasks>4-10:2</tasks></job_list><job_list state=\"pending\"><JB_job_number>8</JB_job_number><state>qw</state></job_list></job_info></job_info>";
        let lines = parse_qstat_xml(xml);
        assert_eq!(lines.len(), 3);
        let t = |task| JobRef {
            job: 7,
            task: Some(task),
        };
        assert!(lines[0].covers(t(3)) && !lines[0].covers(t(4)));
        assert!(lines[1].covers(t(6)) && !lines[1].covers(t(5)));
        assert_eq!(
            (lines[0].ps(), lines[1].ps(), lines[2].ps()),
            (ps::RUNNING, ps::USER_ON_HOLD, ps::QUEUED_ACTIVE)
        );
        let s = ActiveLine {
            job: 1,
            array: false,
            state: "s".into(),
            tasks: None,
            holds: None,
        };
        assert_eq!(s.ps(), ps::USER_SUSPENDED);
        assert_eq!(JobRef::parse("7.3").expect("id").to_string(), "7.3");
    }

    #[test]
    fn agent_lines_and_the_holds_grid_engine_tells_apart() {
        let ps_of = |line: &str| parse_agent_line(line).expect("line").ps();
        // Only `-h u` is the user's hold; predecessors, a start time, `-h o`/`-h s` the
        // system's.
        assert_eq!(ps_of("5 0 - hqw u"), ps::USER_ON_HOLD);
        assert_eq!(ps_of("5 1 1-3:1 hqw j"), ps::SYSTEM_ON_HOLD);
        assert_eq!(ps_of("5 0 - hqw ud"), ps::USER_SYSTEM_ON_HOLD);
        assert_eq!(ps_of("5 0 - Eqw -"), ps::FAILED);
        assert_eq!(ps_of("5 0 - qw -"), ps::QUEUED_ACTIVE);
        assert_eq!(ps_of("5 0 - Ss -"), ps::RUNNING | 0x03);
        let l = parse_agent_line("9 1 2-8:2 qw -").expect("line");
        assert!(
            l.array
                && l.covers(JobRef {
                    job: 9,
                    task: Some(4)
                })
        );
        assert!(!l.covers(JobRef {
            job: 9,
            task: Some(3)
        }));
        assert!(parse_agent_line("! broken").is_none());
        let at = parse_start_line("2-4:2 at 1800000600 all.q node1,node2 4").expect("line");
        assert!(at.covers(Some(4)) && !at.covers(Some(3)));
        assert_eq!(
            at.estimate,
            StartEstimate::At {
                time: 1_800_000_600,
                queue: "all.q".into(),
                hosts: "node1,node2".into(),
                slots: 4
            }
        );
        let never = parse_start_line("- never no queue: arch=nowhere").expect("line");
        assert!(never.covers(None));
        assert_eq!(
            never.estimate,
            StartEstimate::Never("no queue: arch=nowhere".into())
        );
        assert!(parse_start_line("- soon").is_none());
        assert!(JobRef::parse("x").is_err());
    }
}
