//! Launching tasks for real: the shepherd binary, real processes, files, signals and a real
//! sshd on 127.0.0.1. Jobs run as `sgeuser` when the tests run as root (as the captures were
//! made), else as the calling user.

use crate::support::sshd::{Sshd, free_port};
use crate::support::*;
use gridspool::config::{ClusterConfig, HostConfig, LaunchMethod};
use gridspool::launch::{
    LaunchEvent, LaunchSpec, Launcher, LauncherOptions, Reattach, exec_spool_dir,
};
use gridspool::model::{
    EnvVar, JOB_SCHEMA_VERSION, JobId, JobRecord, JobSpec, JobSubmission, PathSpec, Placement,
    ResourceRequest, Submitter, TaskIdRange, TaskResult,
};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

const SHEPHERD: &str = env!("CARGO_BIN_EXE_gridspool-shepherd");

/// The user jobs run as: sgeuser as root, else whoever runs the tests.
fn job_user() -> TestUser {
    if is_root()
        && let Some(u) = user1()
    {
        return u;
    }
    let me = gridspool::identity::Caller::from_kernel().expect("caller");
    TestUser {
        name: me.user,
        uid: me.uid,
        gid: me.gid,
        home: me.home.into(),
    }
}

fn host() -> String {
    gridspool::identity::short_hostname()
}

/// Fields drop in order: the launcher (which ends its ssh masters) before the cell.
struct Rig {
    launcher: Option<Launcher>,
    cell: TestCell,
    config: ClusterConfig,
    events: Receiver<LaunchEvent>,
    user: TestUser,
}

fn options(cell: &TestCell) -> LauncherOptions {
    let mut o = LauncherOptions::defaults(&cell.spool).expect("options");
    o.shepherd = PathBuf::from(SHEPHERD);
    o.poll_interval = Duration::from_millis(100);
    o
}

impl Rig {
    fn new() -> Rig {
        Self::with(|_| {})
    }

    /// A rig over `cell` and `config` whose launcher runs `shepherd` on the ssh hosts.
    fn with_remote_shepherd(
        cell: TestCell,
        config: ClusterConfig,
        user: TestUser,
        shepherd: &str,
    ) -> Rig {
        let (tx, rx) = channel();
        let mut opts = options(&cell);
        opts.remote_shepherd = Some(shepherd.to_string());
        let launcher = Launcher::with_options(&config, &cell.spool, tx, opts).expect("launcher");
        Rig {
            launcher: Some(launcher),
            cell,
            config,
            events: rx,
            user,
        }
    }

    /// A new launcher over the same cell, as a restarted `sched_d` makes one (the old one
    /// dropped first by the caller), with its own event channel.
    fn new_launcher(&mut self) {
        let (tx, rx) = channel();
        let launcher =
            Launcher::with_options(&self.config, &self.cell.spool, tx, options(&self.cell))
                .expect("launcher");
        self.events = rx;
        self.launcher = Some(launcher);
    }

    fn with(edit: impl FnOnce(&mut ClusterConfig)) -> Rig {
        Self::with_options(edit, |_| {})
    }

    fn with_options(
        edit: impl FnOnce(&mut ClusterConfig),
        edit_options: impl FnOnce(&mut LauncherOptions),
    ) -> Rig {
        let cell = TestCell::new();
        let mut config = ClusterConfig::load(&cell.spool.config_path()).expect("config");
        edit(&mut config);
        let (tx, rx) = channel();
        let mut opts = options(&cell);
        edit_options(&mut opts);
        let launcher = Launcher::with_options(&config, &cell.spool, tx, opts).expect("launcher");
        let user = job_user();
        Rig {
            cell,
            config,
            launcher: Some(launcher),
            events: rx,
            user,
        }
    }

    fn launcher(&self) -> &Launcher {
        self.launcher.as_ref().expect("launcher")
    }

    /// A directory the job's owner can write in.
    fn workdir(&self) -> PathBuf {
        self.cell.workdir(&self.user)
    }

    fn submitter(&self) -> Submitter {
        Submitter {
            owner: self.user.name.clone(),
            uid: self.user.uid,
            group: self.user.name.clone(),
            gid: self.user.gid,
            submission_time: 0,
            sge_o_home: self.user.home.display().to_string(),
            sge_o_log_name: self.user.name.clone(),
            sge_o_path: "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games".into(),
            sge_o_shell: "/bin/bash".into(),
            sge_o_workdir: self.user.home.display().to_string(),
            sge_o_host: host(),
            sge_o_mail: None,
            sge_o_tz: None,
        }
    }

    /// Publishes a job (with its script) in the spool, as qsub would.
    fn job(&self, id: u32, spec: JobSpec, script: &str) -> JobRecord {
        let sub = JobSubmission {
            v: JOB_SCHEMA_VERSION,
            id: JobId(id),
            submitter: self.submitter(),
            spec,
            holds: Default::default(),
        };
        self.cell
            .spool
            .publish_job(&sub, script.as_bytes())
            .expect("publish");
        JobRecord::from_submission(sub)
    }

    fn placement(&self, host: &str, slots: u32, pe: Option<&str>) -> Placement {
        Placement {
            host: host.to_string(),
            queue: "all.q".into(),
            slots,
            granted: vec![(host.to_string(), "all.q".into(), slots)],
            pe: pe.map(str::to_string),
        }
    }

    /// The launch spec of a task on the local host, one slot.
    fn spec(&self, job: &JobRecord, task: u32) -> LaunchSpec {
        self.spec_on(job, task, &self.placement(&host(), 1, None))
    }

    fn spec_on(&self, job: &JobRecord, task: u32, placement: &Placement) -> LaunchSpec {
        LaunchSpec::build(&self.cell.spool, &self.config, job, task, placement, false)
            .expect("spec")
    }

    fn start_on(&self, job: &JobRecord, task: u32, placement: &Placement) {
        self.launcher()
            .start(self.spec_on(job, task, placement))
            .expect("start");
    }

    fn start(&self, job: &JobRecord, task: u32) {
        self.start_on(job, task, &self.placement(&host(), 1, None));
    }

    /// Waits for the next event (panics after `secs`).
    fn event(&self, secs: u64) -> LaunchEvent {
        self.events
            .recv_timeout(Duration::from_secs(secs))
            .unwrap_or_else(|_| panic!("no launch event within {secs} s"))
    }

    fn started(&self) -> u32 {
        match self.event(30) {
            LaunchEvent::Started { pid, .. } => pid,
            other => panic!("expected Started, got {other:?}"),
        }
    }

    /// The next result, acknowledged as the scheduler does once it has recorded it.
    fn ended(&self, secs: u64) -> TaskResult {
        loop {
            match self.event(secs) {
                LaunchEvent::Ended(r) => {
                    self.launcher().acknowledge(r.job, r.task, &r.host);
                    return *r;
                }
                LaunchEvent::Started { .. } => continue,
                other => panic!("expected Ended, got {other:?}"),
            }
        }
    }

    /// Runs a job to its end.
    fn run(&self, job: &JobRecord) -> TaskResult {
        self.start(job, 1);
        self.ended(60)
    }
}

fn script_job(name: &str) -> JobSpec {
    JobSpec {
        name: name.into(),
        script_file: name.into(),
        ..JobSpec::default()
    }
}

fn binary_job(name: &str, command: &str, args: &[&str]) -> JobSpec {
    JobSpec {
        name: name.into(),
        script_file: command.into(),
        binary: true,
        args: args.iter().map(|a| a.to_string()).collect(),
        ..JobSpec::default()
    }
}

/// A binary job without arguments that runs in `dir` (`-cwd`).
fn binary_job_in(dir: &Path, name: &str, command: &str) -> JobSpec {
    JobSpec {
        cwd: Some(dir.display().to_string()),
        ..binary_job(name, command, &[])
    }
}

fn path(p: &Path) -> Vec<PathSpec> {
    vec![PathSpec {
        host: None,
        path: p.display().to_string(),
    }]
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn wait_for(what: &str, secs: u64, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn alive(pid: i32) -> bool {
    // A zombie is dead for our purpose.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit(')')
                .next()
                .map(|r| !r.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// `KEY=value` lines of a capture (or of `env | sort`) as a map.
pub(crate) fn env_map(text: &str) -> std::collections::BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Compares a job's `env | sort` with a capture: the same variables; equal values except
/// those whose value is a gridspool path or id, which must equal `ours`.
pub(crate) fn assert_env_like_capture(output: &str, capture: &str, ours: &[(&str, String)]) {
    let mut expected = env_map(&Capture::load(capture).stdout);
    for (k, v) in ours {
        assert!(expected.contains_key(*k), "{k} is not in {capture}");
        expected.insert(k.to_string(), v.clone());
    }
    let actual = env_map(output);
    let keys =
        |m: &std::collections::BTreeMap<String, String>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&actual),
        keys(&expected),
        "variables differ from {capture}"
    );
    for (k, v) in &expected {
        assert_eq!(&actual[k], v, "{k} differs from {capture}");
    }
}

/// The values that differ from SGE's by path or id.
fn env_overrides(
    rig: &Rig,
    id: u32,
    task_dir: &str,
    name: &str,
    suffix: &str,
) -> Vec<(&'static str, String)> {
    let h = host();
    let spool = exec_spool_dir(rig.cell.spool.root(), &h);
    let td = spool.join("active_jobs").join(task_dir);
    let wd = rig.workdir().display().to_string();
    let bin = Path::new(SHEPHERD)
        .parent()
        .expect("dir")
        .display()
        .to_string();
    vec![
        ("HOSTNAME", h.clone()),
        ("SGE_O_HOST", h),
        ("JOB_ID", id.to_string()),
        ("JOB_SCRIPT", td.join("job_script").display().to_string()),
        ("SGE_JOB_SPOOL_DIR", td.display().to_string()),
        ("SGE_BINARY_PATH", bin),
        ("SGE_ROOT", rig.cell.root.display().to_string()),
        ("PWD", wd.clone()),
        ("SGE_CWD_PATH", wd.clone()),
        ("SGE_STDOUT_PATH", format!("{wd}/{name}.o{id}{suffix}")),
        ("SGE_STDERR_PATH", format!("{wd}/{name}.e{id}{suffix}")),
        ("TMP", format!("/tmp/{task_dir}.all.q")),
        ("TMPDIR", format!("/tmp/{task_dir}.all.q")),
    ]
}

const ENV_SCRIPT: &str = "#!/bin/sh\nenv | sort\n";

#[test]
fn launch_script_job_environment_matches_sge() {
    if !is_root() {
        return skip(
            "launch_script_job_environment_matches_sge",
            "needs root to run as sgeuser",
        );
    }
    let rig = Rig::new();
    let id = 9037;
    let job = rig.job(
        id,
        JobSpec {
            cwd: Some(rig.workdir().display().to_string()),
            ..script_job("envjob")
        },
        ENV_SCRIPT,
    );
    let r = rig.run(&job);
    assert_eq!((r.exit_status, r.failed, r.error.as_deref()), (0, 0, None));
    let out = read(&rig.workdir().join(format!("envjob.o{id}")));
    assert_env_like_capture(
        &out,
        "job/env-output.txt",
        &env_overrides(&rig, id, &format!("{id}.1"), "envjob", ""),
    );
    // TMPDIR is gone with the task, and so is the task directory (collected).
    assert!(!Path::new(&format!("/tmp/{id}.1.all.q")).exists());
    let td = exec_spool_dir(rig.cell.spool.root(), &host()).join(format!("active_jobs/{id}.1"));
    wait_for("task directory removal", 10, || !td.exists());
}

#[test]
fn launch_pe_job_environment_and_hostfile_match_sge() {
    if !is_root() {
        return skip(
            "launch_pe_job_environment_and_hostfile_match_sge",
            "needs root",
        );
    }
    let rig = Rig::new();
    let id = 9038;
    let job = rig.job(
        id,
        JobSpec {
            cwd: Some(rig.workdir().display().to_string()),
            ..script_job("envpe")
        },
        "#!/bin/sh\nenv | sort\ncat $PE_HOSTFILE >&2\n",
    );
    rig.start_on(&job, 1, &rig.placement(&host(), 2, Some("smp")));
    let r = rig.ended(60);
    assert_eq!((r.exit_status, r.failed), (0, 0));
    let out = read(&rig.workdir().join(format!("envpe.o{id}")));
    let mut ours = env_overrides(&rig, id, &format!("{id}.1"), "envpe", "");
    let td = exec_spool_dir(rig.cell.spool.root(), &host()).join(format!("active_jobs/{id}.1"));
    ours.push(("PE_HOSTFILE", td.join("pe_hostfile").display().to_string()));
    assert_env_like_capture(&out, "job/env-output-pe.txt", &ours);
    let hostfile = read(&rig.workdir().join(format!("envpe.e{id}")));
    assert_eq!(hostfile, format!("{h} 2 all.q@{h} UNDEFINED\n", h = host()));
}

#[test]
fn launch_array_task_environment_matches_sge() {
    if !is_root() {
        return skip("launch_array_task_environment_matches_sge", "needs root");
    }
    let rig = Rig::new();
    let id = 9039;
    let job = rig.job(
        id,
        JobSpec {
            cwd: Some(rig.workdir().display().to_string()),
            array: Some(TaskIdRange::new(2, 3, 1)),
            ..script_job("envarr")
        },
        ENV_SCRIPT,
    );
    rig.start(&job, 2);
    let r = rig.ended(60);
    assert_eq!((r.task, r.exit_status, r.failed), (2, 0, 0));
    let out = read(&rig.workdir().join(format!("envarr.o{id}.2")));
    assert_env_like_capture(
        &out,
        "job/env-output-array-task2.txt",
        &env_overrides(&rig, id, &format!("{id}.2"), "envarr", ".2"),
    );
}

#[test]
fn launch_binary_job_environment_matches_sge() {
    if !is_root() {
        return skip("launch_binary_job_environment_matches_sge", "needs root");
    }
    let rig = Rig::new();
    let id = 9040;
    // `-b y` runs through the shell (`-shell y`), so the pipe works as in SGE.
    let job = rig.job(
        id,
        JobSpec {
            cwd: Some(rig.workdir().display().to_string()),
            ..binary_job("envjob", "env", &["|", "sort"])
        },
        "",
    );
    let r = rig.run(&job);
    assert_eq!((r.exit_status, r.failed), (0, 0));
    let out = read(&rig.workdir().join(format!("envjob.o{id}")));
    let mut ours = env_overrides(&rig, id, &format!("{id}.1"), "envjob", "");
    // SGE: JOB_SCRIPT of a binary job is its command.
    for o in ours.iter_mut() {
        if o.0 == "JOB_SCRIPT" {
            o.1 = "env".into();
        }
    }
    assert_env_like_capture(&out, "job/env-output.txt", &ours);
}

#[test]
fn launch_user_variables_and_sge_variables() {
    let rig = Rig::new();
    let job = rig.job(
        9041,
        JobSpec {
            cwd: Some(rig.workdir().display().to_string()),
            env: vec![
                EnvVar {
                    name: "FOO".into(),
                    value: Some("bar".into()),
                },
                EnvVar {
                    name: "TERM".into(),
                    value: Some("vt".into()),
                },
                // SGE 8.1.9 keeps its own HOME and JOB_ID.
                EnvVar {
                    name: "HOME".into(),
                    value: Some("/yy".into()),
                },
                EnvVar {
                    name: "JOB_ID".into(),
                    value: Some("77".into()),
                },
            ],
            ..binary_job("vars", "echo", &["$FOO", "$TERM", "$HOME", "$JOB_ID"])
        },
        "",
    );
    let r = rig.run(&job);
    assert_eq!((r.exit_status, r.failed), (0, 0));
    let out = read(&rig.workdir().join("vars.o9041"));
    assert_eq!(out, format!("bar vt {} 9041\n", rig.user.home.display()));
}

#[test]
fn launch_output_paths_follow_sge_rules() {
    let rig = Rig::new();
    let wd = rig.workdir();
    let odir = wd.join("odir");
    std::fs::create_dir_all(&odir).expect("odir");
    let _ = nix::unistd::chown(
        &odir,
        Some(nix::unistd::Uid::from_raw(rig.user.uid)),
        Some(nix::unistd::Gid::from_raw(rig.user.gid)),
    );
    let cwd = Some(wd.display().to_string());
    // Array task 2: -o a directory, -e with pseudo variables (relative to the cwd).
    let job = rig.job(
        9042,
        JobSpec {
            cwd: cwd.clone(),
            array: Some(TaskIdRange::new(1, 2, 1)),
            stdout: path(&odir),
            stderr: vec![PathSpec {
                host: None,
                path: "err.$TASK_ID.$JOB_NAME.$USER".into(),
            }],
            ..binary_job("paths", "echo out; echo err >&2", &[])
        },
        "",
    );
    rig.start(&job, 2);
    assert_eq!(rig.ended(60).exit_status, 0);
    assert_eq!(read(&odir.join("paths.o9042.2")), "out\n");
    assert_eq!(
        read(&wd.join(format!("err.2.paths.{}", rig.user.name))),
        "err\n"
    );

    // -j y: one file for both streams, in order (SGE's SGE_STDERR_PATH names it too).
    let job = rig.job(
        9043,
        JobSpec {
            cwd: cwd.clone(),
            merge_stderr: true,
            stdout: vec![PathSpec { host: None, path: "joined.out".into() }],
            ..binary_job("joined", "echo hello from job $JOB_ID task $SGE_TASK_ID; echo err >&2; echo $SGE_STDERR_PATH", &[])
        },
        "",
    );
    assert_eq!(rig.run(&job).exit_status, 0);
    assert_eq!(
        read(&wd.join("joined.out")),
        format!(
            "hello from job 9043 task undefined\nerr\n{}/joined.out\n",
            wd.display()
        )
    );
    assert!(!wd.join("joined.e9043").exists());

    // Defaults without -cwd: the owner's home; stdin from -i.
    let input = wd.join("input.txt");
    std::fs::write(&input, "from stdin\n").expect("input");
    let job = rig.job(
        9044,
        JobSpec {
            stdin: path(&input),
            stdout: path(&wd.join("cat.out")),
            ..binary_job("cat", "cat", &[])
        },
        "",
    );
    assert_eq!(rig.run(&job).exit_status, 0);
    assert_eq!(read(&wd.join("cat.out")), "from stdin\n");
    let home_err = rig.user.home.join("cat.e9044");
    assert!(home_err.exists(), "stderr goes to the home by default");
    let _ = std::fs::remove_file(home_err);
}

#[test]
fn launch_exit_codes_as_sge_reports_them() {
    let rig = Rig::new();
    let cwd = Some(rig.workdir().display().to_string());
    let exit3 = rig.job(
        9045,
        JobSpec {
            cwd: cwd.clone(),
            ..script_job("exit3.sh")
        },
        "#!/bin/sh\necho \"exiting with 3\"\nexit 3\n",
    );
    let r = rig.run(&exit3);
    assert_eq!((r.exit_status, r.failed, r.signal), (3, 0, None));
    assert!(r.rusage.maxrss > 0.0 && r.rusage.minflt > 0, "{r:?}");
    assert!(r.end_time >= r.start_time && r.start_time > 0.0);
    assert_eq!(
        read(&rig.workdir().join("exit3.sh.o9045")),
        "exiting with 3\n"
    );

    let t = rig.job(
        9046,
        JobSpec {
            cwd: cwd.clone(),
            ..binary_job("true", "true", &[])
        },
        "",
    );
    assert_eq!((rig.run(&t).exit_status, 0), (0, 0));

    // capture qsub/sync-y-nonexistent-binary: exit 127, failed 0.
    let nb = rig.job(
        9047,
        JobSpec {
            cwd: cwd.clone(),
            name: "binary".into(),
            ..binary_job("binary", "/no/such/binary", &[])
        },
        "",
    );
    let r = rig.run(&nb);
    assert_eq!((r.exit_status, r.failed), (127, 0));

    // `-shell n` with a missing command: SGE 8.1.9 fails with 27 (searching requested shell).
    let nb = rig.job(
        9048,
        JobSpec {
            cwd: cwd.clone(),
            shell: false,
            ..binary_job("shn", "/no/such/bin", &[])
        },
        "",
    );
    let r = rig.run(&nb);
    assert_eq!(r.failed, 27, "{r:?}");

    // A missing working directory: 28.
    let nc = rig.job(
        9049,
        JobSpec {
            cwd: Some("/nonexistent-gridspool".into()),
            ..binary_job("nocwd", "true", &[])
        },
        "",
    );
    let r = rig.run(&nc);
    assert_eq!(r.failed, 28, "{r:?}");
    assert_eq!(
        r.error.as_deref(),
        Some("can't chdir to /nonexistent-gridspool: No such file or directory")
    );

    // -S that does not exist: 27.
    let ns = rig.job(
        9050,
        JobSpec {
            cwd: cwd.clone(),
            interpreter: vec![PathSpec {
                host: None,
                path: "/no/shell".into(),
            }],
            ..script_job("nosh")
        },
        "echo hi\n",
    );
    assert_eq!(rig.run(&ns).failed, 27);

    // -shell n runs the binary directly with its arguments, found in PATH.
    let direct = rig.job(
        9051,
        JobSpec {
            cwd: cwd.clone(),
            shell: false,
            ..binary_job("direct", "printf", &["%s-%s", "a b", "$HOME"])
        },
        "",
    );
    assert_eq!(rig.run(&direct).exit_status, 0);
    assert_eq!(read(&rig.workdir().join("direct.o9051")), "a b-$HOME");
}

#[test]
fn launch_output_open_failure_is_failed_26_with_sge_reason() {
    let rig = Rig::new();
    let job = rig.job(
        9052,
        JobSpec {
            stdout: path(Path::new("/nonexistent-dir/out.txt")),
            ..binary_job("true", "true", &[])
        },
        "",
    );
    let r = rig.run(&job);
    assert_eq!(r.failed, 26);
    // capture qstat/j-error.txt: the text after "error: ".
    assert_eq!(
        r.error.as_deref(),
        Some("can't open output file \"/nonexistent-dir/out.txt\": No such file or directory")
    );
}

#[test]
fn launch_kill_takes_the_whole_process_tree() {
    let rig = Rig::new();
    let pids = rig.workdir().join("pids");
    let _ = std::fs::remove_file(&pids);
    let job = rig.job(
        9053,
        JobSpec {
            cwd: Some(rig.workdir().display().to_string()),
            ..script_job("tree")
        },
        &format!(
            "#!/bin/sh\n\
             sh -c 'trap \"\" TERM; while :; do sleep 1; done' &\n\
             echo $! >> {p}\n\
             setsid sh -c 'trap \"\" TERM HUP; while :; do sleep 1; done' &\n\
             echo $! >> {p}\n\
             echo $$ >> {p}\n\
             sleep 600\n",
            p = pids.display()
        ),
    );
    rig.start(&job, 1);
    let pid = rig.started();
    assert!(pid > 0);
    wait_for("the job's children", 30, || {
        std::fs::read_to_string(&pids).is_ok_and(|s| s.lines().count() == 3)
    });
    let all: Vec<i32> = read(&pids)
        .lines()
        .map(|l| l.trim().parse().expect("pid"))
        .collect();
    assert!(all.iter().all(|p| alive(*p)));
    rig.launcher().kill(JobId(9053), 1, false).expect("kill");
    let r = rig.ended(30);
    // capture qacct/j-killed.txt: failed 100, exit 137.
    assert_eq!((r.exit_status, r.failed, r.signal), (137, 100, Some(9)));
    wait_for("every process of the job to be gone", 10, || {
        all.iter().all(|p| !alive(*p))
    });
}

#[test]
fn launch_kill_with_notify_sends_sigusr2_first() {
    let rig = Rig::with(|c| c.queues[0].notify = "00:00:02".into());
    let wd = rig.workdir();
    let job = rig.job(
        9054,
        JobSpec {
            cwd: Some(wd.display().to_string()),
            notify: true,
            ..script_job("notify")
        },
        "#!/bin/sh\ntrap 'echo got USR2' USR2\necho ready\nwhile :; do sleep 1; done\n",
    );
    rig.start(&job, 1);
    rig.started();
    wait_for("the job to trap", 30, || {
        std::fs::read_to_string(wd.join("notify.o9054")).is_ok_and(|s| s.contains("ready"))
    });
    let t0 = Instant::now();
    rig.launcher().kill(JobId(9054), 1, true).expect("kill");
    let r = rig.ended(30);
    assert!(
        t0.elapsed() >= Duration::from_secs(1),
        "SIGKILL came after the notify time"
    );
    assert_eq!((r.exit_status, r.failed), (137, 100));
    assert!(read(&wd.join("notify.o9054")).contains("got USR2"));
}

#[test]
fn launch_h_rt_kills_and_s_rt_warns() {
    let rig = Rig::new();
    let wd = rig.workdir();
    let job = rig.job(
        9055,
        JobSpec {
            cwd: Some(wd.display().to_string()),
            hard_resources: vec![
                ResourceRequest {
                    name: "s_rt".into(),
                    value: "0:0:2".into(),
                },
                ResourceRequest {
                    name: "h_rt".into(),
                    value: "0:0:5".into(),
                },
            ],
            ..script_job("limits")
        },
        "#!/bin/sh\ntrap 'echo got USR1' USR1\nwhile :; do sleep 1; done\n",
    );
    // s_rt 2 s and h_rt 5 s leave the shell time to install its trap on a loaded machine.
    let r = rig.run(&job);
    // SGE 8.1.9 (oracle, h_rt=0:0:3): failed 37, exit_status 137 — killed by the limit.
    assert_eq!((r.exit_status, r.failed), (137, 37));
    assert!(
        r.end_time - r.start_time >= 4.5,
        "killed before h_rt: {r:?}"
    );
    // Sampled from /proc while it ran.
    assert!(r.maxvmem > 0.0 && r.mem > 0.0, "{r:?}");
    assert!(read(&wd.join("limits.o9055")).contains("got USR1"));
}

#[test]
fn launch_h_vmem_becomes_an_address_space_limit() {
    let rig = Rig::new();
    let wd = rig.workdir();
    let job = rig.job(
        9056,
        JobSpec {
            cwd: Some(wd.display().to_string()),
            hard_resources: vec![
                ResourceRequest {
                    name: "h_vmem".into(),
                    value: "300M".into(),
                },
                ResourceRequest {
                    name: "h_cpu".into(),
                    value: "0:1:0".into(),
                },
            ],
            ..binary_job("vmem", "ulimit -v; ulimit -t", &[])
        },
        "",
    );
    assert_eq!(rig.run(&job).exit_status, 0);
    assert_eq!(
        read(&wd.join("vmem.o9056")),
        format!("{}\n60\n", 300 * 1024)
    );
}

#[test]
fn launch_runs_jobs_as_their_owner_with_groups_when_root() {
    if !is_root() {
        return skip(
            "launch_runs_jobs_as_their_owner_with_groups_when_root",
            "needs root",
        );
    }
    let rig = Rig::new();
    let wd = rig.workdir();
    let job = rig.job(
        9057,
        binary_job_in(&wd, "ident", "id -u; id -g; id -G; ls -ld $TMPDIR"),
        "",
    );
    assert_eq!(rig.run(&job).exit_status, 0);
    let out = read(&wd.join("ident.o9057"));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], rig.user.uid.to_string());
    assert_eq!(lines[1], rig.user.gid.to_string());
    // initgroups: exactly the user's groups, never root's.
    assert!(!lines[2].split_whitespace().any(|g| g == "0"), "{out}");
    assert!(
        lines[3].contains(&format!(" {} ", rig.user.name)),
        "TMPDIR owned by the user: {out}"
    );
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(wd.join("ident.o9057")).expect("meta");
    assert_eq!((meta.uid(), meta.mode() & 0o777), (rig.user.uid, 0o644));
}

#[test]
fn launch_shepherd_refuses_other_users_jobs_when_not_root() {
    if !is_root() {
        return skip(
            "launch_shepherd_refuses_other_users_jobs_when_not_root",
            "needs root to become sgeuser",
        );
    }
    let rig = Rig::new();
    let mut job = rig.job(9058, binary_job("other", "true", &[]), "");
    job.submitter.owner = "root".into();
    job.submitter.uid = 0;
    let spec = rig.spec(&job, 1);
    use std::io::Write;
    use std::os::unix::process::CommandExt;
    let mut child = std::process::Command::new(SHEPHERD)
        .arg("run")
        .uid(rig.user.uid)
        .gid(rig.user.gid)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("shepherd");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&serde_json::to_vec(&spec).expect("json"))
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"reply\":\"failed\""), "{text}");
    assert!(text.contains("can only run that user's jobs"), "{text}");
}

#[test]
fn launch_reattach_after_the_launcher_is_recreated() {
    let mut rig = Rig::new();
    let wd = rig.workdir();
    let job = rig.job(
        9059,
        binary_job_in(&wd, "survivor", "sleep 2; echo survived"),
        "",
    );
    rig.start(&job, 1);
    rig.started();
    // sched_d goes away; the job carries on.
    drop(rig.launcher.take());
    rig.new_launcher();
    rig.launcher()
        .reattach(&[
            Reattach::running(JobId(9059), 1, host()),
            Reattach::running(JobId(9999), 1, host()),
        ])
        .expect("reattach");
    let mut results = [rig.ended(30), rig.ended(30)];
    results.sort_by_key(|r| r.job);
    assert_eq!(
        (results[0].job, results[0].exit_status, results[0].failed),
        (JobId(9059), 0, 0)
    );
    assert_eq!(read(&wd.join("survivor.o9059")), "survived\n");
    // A task the host knows nothing about is reported lost.
    assert_eq!((results[1].job, results[1].failed), (JobId(9999), 100));
    assert!(
        results[1]
            .error
            .as_deref()
            .unwrap_or("")
            .contains("not found")
    );
}

#[test]
fn launch_reattach_waits_for_a_host_that_cannot_list_its_tasks() {
    let mut rig = Rig::new();
    let wd = rig.workdir();
    let job = rig.job(
        9061,
        binary_job_in(&wd, "patient", "sleep 6; echo waited"),
        "",
    );
    rig.start(&job, 1);
    rig.started();
    drop(rig.launcher.take());
    // The host's task directories cannot be listed when the new launcher asks (an I/O
    // error, an unmounted spool): their absence must not be taken for lost tasks.
    let active = exec_spool_dir(rig.cell.spool.root(), &host()).join("active_jobs");
    let aside = active.with_extension("aside");
    std::fs::rename(&active, &aside).expect("move the task directories aside");
    std::fs::write(&active, "not a directory").expect("write");
    rig.new_launcher();
    rig.launcher()
        .reattach(&[Reattach::running(JobId(9061), 1, host())])
        .expect("reattach");
    let early = rig.events.recv_timeout(Duration::from_millis(2500));
    assert!(early.is_err(), "concluded without asking again: {early:?}");
    std::fs::remove_file(&active).expect("remove");
    std::fs::rename(&aside, &active).expect("put the task directories back");
    let result = rig.ended(30);
    assert_eq!(
        (result.job, result.exit_status, result.failed),
        (JobId(9061), 0, 0),
        "{:?}",
        result.error
    );
    assert_eq!(read(&wd.join("patient.o9061")), "waited\n");
    assert!(
        rig.events.recv_timeout(Duration::from_millis(500)).is_err(),
        "the task ended twice"
    );
}

#[test]
fn launch_result_stays_until_the_scheduler_acknowledges_it() {
    let mut rig = Rig::new();
    let wd = rig.workdir();
    let job = rig.job(9077, binary_job_in(&wd, "unacked", "exit 3"), "");
    rig.start(&job, 1);
    let first = loop {
        match rig.event(60) {
            LaunchEvent::Ended(r) => break *r,
            LaunchEvent::Started { .. } => continue,
            other => panic!("expected Ended, got {other:?}"),
        }
    };
    assert_eq!((first.job, first.exit_status), (JobId(9077), 3));
    let td = exec_spool_dir(rig.cell.spool.root(), &host()).join("active_jobs/9077.1");
    std::thread::sleep(Duration::from_millis(300));
    // The result came through the start server; its supervisor waits for the
    // acknowledgement, with the task directory kept.
    assert!(td.exists(), "removed before acknowledgement");
    assert!(
        !td.join("result.json").exists(),
        "the result came through the start server, not a file"
    );
    let sup = supervisor_pid(&rig, 9077);
    assert!(
        alive(sup as i32),
        "the supervisor waits for the acknowledgement"
    );
    // The scheduler dies before its records are durable: its start server ends with it,
    // the supervisor leaves the result in the task directory, durably, and the next
    // launcher reports it again; the directory goes once that one is acknowledged.
    drop(rig.launcher.take());
    wait_for("the result left in the task directory", 10, || {
        td.join("result.json").exists()
    });
    rig.new_launcher();
    rig.launcher()
        .reattach(&[Reattach::running(JobId(9077), 1, host())])
        .expect("reattach");
    let again = rig.ended(30);
    assert_eq!(
        (again.job, again.exit_status, again.failed),
        (JobId(9077), 3, 0)
    );
    wait_for("task directory removal", 10, || !td.exists());
    // Acknowledging again, or a task that is not there, does nothing.
    rig.launcher().acknowledge(JobId(9077), 1, &host());
    rig.launcher().acknowledge(JobId(9998), 1, &host());
}

#[test]
fn launch_over_ssh_through_a_real_sshd() {
    let Some(sshd) = Sshd::start("launch_over_ssh_through_a_real_sshd") else {
        return;
    };
    let user = job_user();
    let opts = sshd.client_options();
    let port = sshd.port;
    let owner = user.name.clone();
    let rig = Rig::with(|c| {
        c.hosts.push(HostConfig::new(
            "sshowner",
            Some(1),
            LaunchMethod::Ssh {
                address: Some("127.0.0.1".into()),
                port: Some(port),
                user: Some(owner),
                options: opts.clone(),
                max_sessions: 2,
                ssh_client: Default::default(),
            },
        ));
        c.hosts.push(HostConfig::new(
            "sshhost",
            Some(2),
            LaunchMethod::Ssh {
                address: Some("127.0.0.1".into()),
                port: Some(port),
                // As root, log in as root (which runs sgeuser's job); else as ourselves.
                user: Some(if is_root() {
                    "root".into()
                } else {
                    user.name.clone()
                }),
                options: opts,
                max_sessions: 4,
                ssh_client: Default::default(),
            },
        ));
    });
    let wd = rig.workdir();
    // The shepherds of both logins share the cell's execution spool directory.
    let execd = rig.cell.spool.root().join("execd");
    std::fs::create_dir_all(&execd).expect("execd");
    set_mode(&execd, 0o1777);
    let mut ids = vec![];
    for (i, id) in (9060..9063).enumerate() {
        let job = rig.job(
            id,
            binary_job_in(&wd, "viassh", &format!("echo $HOSTNAME $JOB_ID; exit {i}")),
            "",
        );
        rig.start_on(&job, 1, &rig.placement("sshhost", 1, None));
        ids.push(id);
    }
    let mut ended = vec![];
    while ended.len() < 3 {
        match rig.event(60) {
            LaunchEvent::Started { host, .. } => assert_eq!(host, "sshhost"),
            LaunchEvent::Ended(r) => ended.push(*r),
            other => panic!("unexpected {other:?}\nsshd log: {}", sshd.log()),
        }
    }
    ended.sort_by_key(|r| r.job);
    for (i, r) in ended.iter().enumerate() {
        assert_eq!(
            (r.job, r.exit_status, r.failed, r.host.as_str()),
            (JobId(ids[i]), i as i32, 0, "sshhost")
        );
        assert_eq!(
            read(&wd.join(format!("viassh.o{}", ids[i]))),
            format!("sshhost {}\n", ids[i])
        );
    }
    // Logged in as the job's owner instead: the shepherd runs unprivileged.
    let job = rig.job(9065, binary_job_in(&wd, "asowner", "id -un"), "");
    rig.start_on(&job, 1, &rig.placement("sshowner", 1, None));
    let r = rig.ended(60);
    assert_eq!(
        (r.exit_status, r.failed, r.host.as_str()),
        (0, 0, "sshowner")
    );
    assert_eq!(read(&wd.join("asowner.o9065")), format!("{}\n", user.name));
    // A kill over ssh.
    let job = rig.job(9063, binary_job_in(&wd, "sshkill", "sleep 600"), "");
    rig.start_on(&job, 1, &rig.placement("sshhost", 1, None));
    rig.started();
    rig.launcher().kill(JobId(9063), 1, false).expect("kill");
    let r = rig.ended(30);
    assert_eq!((r.exit_status, r.failed), (137, 100));
}

#[test]
fn launch_to_an_unreachable_host_fails_with_host_unreachable() {
    let port = free_port();
    let rig = Rig::with(|c| {
        c.hosts.push(HostConfig::new(
            "deadhost",
            Some(1),
            LaunchMethod::Ssh {
                address: Some("127.0.0.1".into()),
                port: Some(port),
                user: None,
                options: vec![
                    "-F".into(),
                    "/dev/null".into(),
                    "-o".into(),
                    "ConnectTimeout=5".into(),
                ],
                max_sessions: 2,
                ssh_client: Default::default(),
            },
        ));
    });
    // The name the ssh master's stderr once had in the shared temporary directory: a link
    // planted there must not be followed (the launcher runs as root).
    let victim_dir = tempfile::tempdir().expect("tempdir");
    let victim = victim_dir.path().join("precious");
    std::fs::write(&victim, "precious\n").expect("victim");
    let planted =
        std::env::temp_dir().join(format!("gridspool-ssh-{}-deadhost.err", std::process::id()));
    let _ = std::fs::remove_file(&planted);
    std::os::unix::fs::symlink(&victim, &planted).expect("plant link");
    let job = rig.job(9064, binary_job("nowhere", "true", &[]), "");
    rig.start_on(&job, 1, &rig.placement("deadhost", 1, None));
    let event = rig.event(60);
    let _ = std::fs::remove_file(&planted);
    assert_eq!(read(&victim), "precious\n", "the planted link was followed");
    match event {
        LaunchEvent::Failed {
            job,
            host,
            host_unreachable,
            error,
            ..
        } => {
            assert_eq!(
                (job, host.as_str(), host_unreachable),
                (JobId(9064), "deadhost", true),
                "{error}"
            );
        }
        other => panic!("expected Failed, got {other:?}"),
    }
}

#[test]
fn launch_shell_start_modes_and_interpreter() {
    let wd_of = |rig: &Rig| Some(rig.workdir().display().to_string());
    // posix_compliant (default): the queue's shell, or -S, runs the script with its args.
    let rig = Rig::new();
    let script = "#!/bin/false\necho \"$0|$1|$2|${BASH_VERSION:+bash}\"\n";
    let job = rig.job(
        9070,
        JobSpec {
            cwd: wd_of(&rig),
            args: vec!["a b".into(), "c".into()],
            interpreter: vec![PathSpec {
                host: None,
                path: "/bin/bash".into(),
            }],
            ..script_job("posix")
        },
        script,
    );
    assert_eq!(rig.run(&job).exit_status, 0);
    let td = exec_spool_dir(rig.cell.spool.root(), &host()).join("active_jobs/9070.1/job_script");
    assert_eq!(
        read(&rig.workdir().join("posix.o9070")),
        format!("{}|a b|c|bash\n", td.display())
    );

    // unix_behavior: the #! line decides.
    let rig = Rig::with(|c| c.queues[0].shell_start_mode = "unix_behavior".into());
    let job = rig.job(
        9071,
        JobSpec {
            cwd: wd_of(&rig),
            ..script_job("unix")
        },
        "#!/bin/false\necho never\n",
    );
    let r = rig.run(&job);
    assert_eq!((r.exit_status, r.failed), (1, 0));

    // script_from_stdin: the shell reads the script on its stdin.
    let rig = Rig::with(|c| c.queues[0].shell_start_mode = "script_from_stdin".into());
    let job = rig.job(
        9072,
        JobSpec {
            cwd: wd_of(&rig),
            args: vec!["x".into()],
            ..script_job("stdin")
        },
        "echo \"from stdin $1\"\n",
    );
    assert_eq!(rig.run(&job).exit_status, 0);
    assert_eq!(read(&rig.workdir().join("stdin.o9072")), "from stdin x\n");
}

#[test]
fn launch_shepherd_survives_the_crash_of_its_starter() {
    let rig = Rig::new();
    let wd = rig.workdir();
    let job = rig.job(
        9073,
        binary_job_in(&wd, "crash", "sleep 2; echo survived"),
        "",
    );
    let spec = rig.spec(&job, 1);
    let dir = tempfile::tempdir().expect("tempdir");
    let spec_file = dir.path().join("spec.json");
    let reply = dir.path().join("reply");
    std::fs::write(&spec_file, serde_json::to_vec(&spec).expect("json")).expect("spec");
    // A stand-in for sched_d: starts the shepherd, then lives on in its process group.
    use std::os::unix::process::CommandExt;
    let mut starter = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{SHEPHERD} run < {} > {}; sleep 600",
            spec_file.display(),
            reply.display()
        ))
        .process_group(0)
        .spawn()
        .expect("starter");
    wait_for("the shepherd's reply", 30, || {
        std::fs::read_to_string(&reply).is_ok_and(|r| r.contains("started"))
    });
    // The crash: SIGHUP then SIGKILL to the starter's whole process group.
    let pgid = nix::unistd::Pid::from_raw(starter.id() as i32);
    let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGHUP);
    let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
    let _ = starter.wait();
    // A new launcher picks the task up and collects its result.
    rig.launcher()
        .reattach(&[Reattach::running(JobId(9073), 1, host())])
        .expect("reattach");
    let r = rig.ended(30);
    assert_eq!((r.job, r.exit_status, r.failed), (JobId(9073), 0, 0));
    assert!(r.end_time - r.start_time >= 1.5, "{r:?}");
    assert_eq!(read(&wd.join("crash.o9073")), "survived\n");
}

#[test]
fn launch_job_starts_with_default_signal_handling() {
    let rig = Rig::new();
    let job = rig.job(
        9074,
        JobSpec {
            cwd: Some(rig.workdir().display().to_string()),
            shell: false,
            ..binary_job(
                "sigs",
                "grep",
                &["-E", "^Sig(Blk|Ign)", "/proc/self/status"],
            )
        },
        "",
    );
    assert_eq!(rig.run(&job).exit_status, 0);
    // Nothing blocked or ignored: the shepherd's own signal mask must not leak into jobs.
    // Signals 32 and 33 are glibc's internal ones (below SIGRTMIN, unusable by programs);
    // glibc's posix_spawn leaves them ignored and only a raw syscall could reset them.
    let out = read(&rig.workdir().join("sigs.o9074"));
    let masks: Vec<u64> = out
        .lines()
        .map(|l| u64::from_str_radix(l.split('\t').nth(1).expect("mask"), 16).expect("hex"))
        .collect();
    let glibc_internal = (1u64 << 31) | (1u64 << 32);
    assert_eq!(masks.len(), 2, "{out}");
    assert_eq!(masks[0], 0, "blocked: {out}");
    assert_eq!(masks[1] & !glibc_internal, 0, "ignored: {out}");
}

#[test]
fn launch_a_burst_of_array_tasks() {
    let rig = Rig::new();
    let wd = rig.workdir();
    let job = rig.job(
        9075,
        JobSpec {
            cwd: Some(wd.display().to_string()),
            array: Some(TaskIdRange::new(1, 20, 1)),
            ..binary_job("burst", "echo $SGE_TASK_ID", &[])
        },
        "",
    );
    for task in 1..=20 {
        rig.start(&job, task);
    }
    let (mut started, mut ended) = (0, vec![]);
    while ended.len() < 20 {
        match rig.event(60) {
            LaunchEvent::Started { .. } => started += 1,
            LaunchEvent::Ended(r) => ended.push(*r),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(started, 20);
    ended.sort_by_key(|r| r.task);
    for (i, r) in ended.iter().enumerate() {
        let task = i as u32 + 1;
        assert_eq!((r.task, r.exit_status, r.failed), (task, 0, 0));
        assert_eq!(
            read(&wd.join(format!("burst.o9075.{task}"))),
            format!("{task}\n")
        );
    }
    // Nothing is reported twice.
    assert!(rig.events.recv_timeout(Duration::from_millis(500)).is_err());
}

#[test]
fn launch_over_ssh_without_a_shepherd_there_is_a_host_fault() {
    let Some(sshd) = Sshd::start("launch_over_ssh_without_a_shepherd_there_is_a_host_fault") else {
        return;
    };
    let user = job_user();
    let cell = TestCell::new();
    let mut config = ClusterConfig::load(&cell.spool.config_path()).expect("config");
    config.hosts.push(HostConfig::new(
        "bare",
        Some(1),
        LaunchMethod::Ssh {
            address: Some("127.0.0.1".into()),
            port: Some(sshd.port),
            user: Some(user.name.clone()),
            options: sshd.client_options(),
            max_sessions: 2,
            ssh_client: Default::default(),
        },
    ));
    let rig = Rig::with_remote_shepherd(cell, config, user, "/nonexistent/gridspool-shepherd");
    let job = rig.job(9076, binary_job("bare", "true", &[]), "");
    rig.start_on(&job, 1, &rig.placement("bare", 1, None));
    match rig.event(60) {
        LaunchEvent::Failed {
            host_unreachable,
            error,
            ..
        } => {
            assert!(host_unreachable, "{error}");
            assert!(error.contains("the shepherd did not answer"), "{error}");
        }
        other => panic!("expected Failed, got {other:?}"),
    }
}

/// `io`: the bytes the job's processes read and wrote (`rchar + wchar`, as SGE 8.1.9 counts on
/// Linux: a job copying 250 MB showed 500 MB on the oracle), children it reaped included.
#[test]
fn launch_reports_the_jobs_io() {
    if !std::path::Path::new("/proc/self/io").exists() {
        return skip(
            "launch_reports_the_jobs_io",
            "no I/O accounting in this kernel",
        );
    }
    let rig = Rig::new();
    let cwd = Some(rig.workdir().display().to_string());
    let job = rig.job(
        9081,
        JobSpec {
            cwd,
            ..script_job("io.sh")
        },
        "#!/bin/sh\ndd if=/dev/zero of=io.dat bs=1M count=8 2>/dev/null\ncat io.dat > /dev/null\nrm -f io.dat\n",
    );
    let r = rig.run(&job);
    assert_eq!((r.exit_status, r.failed), (0, 0), "{r:?}");
    // dd reads 8 MB and writes 8 MB, cat reads them again and writes them to /dev/null.
    let bytes = r.io * 1024.0 * 1024.0 * 1024.0;
    let mb = 1024.0 * 1024.0;
    assert!((32.0 * mb..40.0 * mb).contains(&bytes), "{bytes} bytes");
}

/// `/proc/<pid>/cmdline` as words.
fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect()
}

/// The supervisor pid of a running task, from its `shepherd.pid`.
fn supervisor_pid(rig: &Rig, id: u32) -> u32 {
    let pid_file = exec_spool_dir(rig.cell.spool.root(), &host())
        .join(format!("active_jobs/{id}.1/shepherd.pid"));
    wait_for("shepherd.pid", 10, || pid_file.exists());
    read(&pid_file)
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .expect("pid in shepherd.pid")
}

#[test]
fn local_tasks_start_through_one_fork_server_whose_supervisors_are_forked_not_execed() {
    let rig = Rig::new();
    let mut servers = Vec::new();
    for id in [9601, 9602] {
        let job = rig.job(
            id,
            binary_job_in(
                &rig.workdir(),
                "forked",
                "sleep 1; echo out-$JOB_ID; exit 5",
            ),
            "",
        );
        rig.start(&job, 1);
        let job_pid = rig.started();
        assert!(job_pid > 0);
        let sup = supervisor_pid(&rig, id);
        // A fork of the start server: its parent is the server, and it kept the server's
        // command line (an exec'd supervisor's would be `supervise <taskdir>`).
        let words = cmdline(sup);
        assert_eq!(
            words.get(1).map(String::as_str),
            Some("start-server"),
            "{words:?}"
        );
        let server = parent_of(sup).expect("supervisor's parent");
        assert_eq!(
            cmdline(server).get(1).map(String::as_str),
            Some("start-server")
        );
        assert_eq!(
            parent_of(server),
            Some(std::process::id()),
            "the server is the launcher's child"
        );
        // The job itself is the supervisor's child, in a session of its own.
        assert_eq!(parent_of(job_pid), Some(sup));
        servers.push(server);
        let r = rig.ended(30);
        assert_eq!((r.exit_status, r.failed, r.error.as_deref()), (5, 0, None));
        assert_eq!(
            read(&rig.workdir().join(format!("forked.o{id}"))),
            format!("out-{id}\n")
        );
        // The server reaps the supervisor once it has ended.
        wait_for("the supervisor reaped", 10, || {
            !alive(sup as i32) && parent_of(sup).is_none()
        });
    }
    assert_eq!(servers[0], servers[1], "one start server for the host");
    // The server ends with the launcher (its stdin closes).
    drop(rig);
    wait_for("the start server's exit", 10, || !alive(servers[0] as i32));
}

/// A forked supervisor's task directory has no `spec.json` (the supervisor has the spec in
/// memory); when the supervisor dies without a result, the watcher still reports the task as
/// ended (`failed` 100), on the host it ran on, exactly once.
#[test]
fn a_forked_supervisor_that_dies_is_reported_with_its_host_without_a_spec_file() {
    let rig = Rig::new();
    let id = 9603;
    let job = rig.job(
        id,
        binary_job_in(&rig.workdir(), "orphaned", "sleep 30"),
        "",
    );
    rig.start(&job, 1);
    let job_pid = rig.started();
    let sup = supervisor_pid(&rig, id);
    let task_dir =
        exec_spool_dir(rig.cell.spool.root(), &host()).join(format!("active_jobs/{id}.1"));
    assert!(!task_dir.join("spec.json").exists());
    use nix::sys::signal::{Signal, kill, killpg};
    use nix::unistd::Pid;
    let _ = kill(Pid::from_raw(sup as i32), Signal::SIGKILL);
    let _ = killpg(Pid::from_raw(job_pid as i32), Signal::SIGKILL);
    let r = rig.ended(30);
    assert_eq!((r.job, r.task, r.failed), (JobId(id), 1, 100), "{r:?}");
    assert_eq!(r.host, host());
    wait_for("the task directory gone", 10, || !task_dir.exists());
    assert!(
        rig.events.recv_timeout(Duration::from_millis(500)).is_err(),
        "reported once"
    );
}

#[test]
fn a_local_start_server_that_dies_is_replaced_and_setup_failures_still_come_back() {
    let rig = Rig::new();
    let job = |id: u32, cmd: &str| rig.job(id, binary_job_in(&rig.workdir(), "again", cmd), "");
    rig.start(&job(9611, "sleep 30"), 1);
    rig.started();
    let first = supervisor_pid(&rig, 9611);
    let server = parent_of(first).expect("server");
    assert_eq!(
        cmdline(server).get(1).map(String::as_str),
        Some("start-server")
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the start server");
    wait_for("the start server's death", 10, || !alive(server as i32));
    // Its supervisor carries on without it.
    assert!(alive(first as i32));
    rig.start(&job(9612, "sleep 1; echo second"), 1);
    rig.started();
    // A second server started for the later tasks.
    let server2 = parent_of(supervisor_pid(&rig, 9612)).expect("second server");
    assert_ne!(server2, server);
    assert_eq!(
        cmdline(server2).get(1).map(String::as_str),
        Some("start-server")
    );
    let r = rig.ended(30);
    assert_eq!((r.job, r.exit_status, r.failed), (JobId(9612), 0, 0));
    assert_eq!(read(&rig.workdir().join("again.o9612")), "second\n");
    let mut missing_cwd = job(9613, "true");
    missing_cwd.spec.cwd = Some("/nonexistent/dir".into());
    let r = rig.run(&missing_cwd);
    assert_eq!(r.failed, 28, "{r:?}");
    rig.launcher().kill(JobId(9611), 1, false).expect("kill");
    let r = rig.ended(30);
    assert_eq!((r.job, r.exit_status, r.failed), (JobId(9611), 137, 100));
}

#[test]
fn without_the_start_server_local_tasks_exec_their_supervisor() {
    let rig = Rig::with_options(|_| {}, |o| o.local_start_server = false);
    let id = 9621;
    let job = rig.job(
        id,
        binary_job_in(&rig.workdir(), "execd", "sleep 1; echo out; exit 4"),
        "",
    );
    rig.start(&job, 1);
    rig.started();
    let sup = supervisor_pid(&rig, id);
    assert_eq!(cmdline(sup).get(1).map(String::as_str), Some("supervise"));
    let r = rig.ended(30);
    assert_eq!((r.exit_status, r.failed), (4, 0));
    assert_eq!(read(&rig.workdir().join(format!("execd.o{id}"))), "out\n");
}

#[test]
fn the_start_server_answers_every_spec_and_exits_at_eof_leaving_its_supervisors_running() {
    use gridspool::launch::shepherd::{RunReply, StartReply, StartServerHello};
    use std::io::{BufRead, BufReader, Write};
    let rig = Rig::new();
    let spec = |id: u32, edit: &dyn Fn(&mut JobSpec)| {
        let mut js = binary_job_in(&rig.workdir(), "direct", "sleep 1; echo direct-$JOB_ID");
        edit(&mut js);
        let job = rig.job(id, js, "");
        let spec = rig.spec(&job, 1);
        serde_json::to_string(&spec).expect("json")
    };
    let running = spec(9631, &|_| {});
    let no_cwd = spec(9632, &|s| s.cwd = Some("/nonexistent/dir".into()));
    let mut unknown_owner: serde_json::Value =
        serde_json::from_str(&spec(9633, &|_| {})).expect("json");
    unknown_owner["submitter"]["owner"] = "no-such-user-gridspool".into();
    let mut server = std::process::Command::new(SHEPHERD)
        .arg("start-server")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start-server");
    let mut input = server.stdin.take().expect("stdin");
    let mut output = BufReader::new(server.stdout.take().expect("stdout"));
    let mut line = String::new();
    output.read_line(&mut line).expect("hello");
    let hello: StartServerHello = serde_json::from_str(&line).expect("hello line");
    assert_eq!(hello.start_server, 1);
    for l in [
        running,
        no_cwd,
        unknown_owner.to_string(),
        r#"{"job": 9634, "task": 1, "nonsense": true}"#.to_string(),
    ] {
        writeln!(input, "{l}").expect("write spec");
    }
    drop(input);
    let replies: std::collections::BTreeMap<u32, RunReply> = output
        .lines()
        .map(|l| serde_json::from_str::<StartReply>(&l.expect("line")).expect("reply"))
        .map(|r| (r.job.0, r.reply))
        .collect();
    // All answered, then the server exited at the end of its input…
    let status = server.wait().expect("wait");
    assert!(status.success(), "{status:?}");
    assert_eq!(replies.len(), 4, "{replies:?}");
    let Some(RunReply::Started { pid }) = replies.get(&9631) else {
        panic!("{replies:?}");
    };
    assert!(*pid > 0);
    // …while the job it started runs on (its supervisor was reparented).
    assert!(alive(*pid as i32));
    // A job that fails before it runs has started in the protocol's sense (pid 0): its
    // result, written by the supervisor, says why.
    assert_eq!(replies.get(&9632), Some(&RunReply::Started { pid: 0 }));
    let td = |id: u32| {
        exec_spool_dir(rig.cell.spool.root(), &host()).join(format!("active_jobs/{id}.1"))
    };
    // (The supervisor announces before it publishes the result.)
    wait_for("the failed task's result", 10, || {
        td(9632).join("result.json").exists()
    });
    let result: TaskResult =
        serde_json::from_slice(&std::fs::read(td(9632).join("result.json")).expect("result"))
            .expect("result json");
    assert_eq!(result.failed, 28, "{result:?}");
    match replies.get(&9633) {
        Some(RunReply::Failed { error, host_fault }) => {
            assert!(error.contains("no-such-user-gridspool"), "{error}");
            assert!(!host_fault);
        }
        other => panic!("{other:?}"),
    }
    assert!(!td(9633).exists(), "no directory for a task refused");
    assert!(
        matches!(replies.get(&9634), Some(RunReply::Failed { error, .. }) if error.contains("bad launch spec"))
    );
    wait_for("the running task's result", 30, || {
        td(9631).join("result.json").exists()
    });
    assert_eq!(read(&rig.workdir().join("direct.o9631")), "direct-9631\n");
}

#[test]
fn the_multicall_program_as_the_shepherd_execs_its_supervisor_by_name() {
    // An installation's shepherd is a link to the one program (src/cli/multicall.rs);
    // `gridspool-shepherd run` (how ssh hosts start a task without a start server) execs
    // its own file, /proc/self/exe, to supervise the task. That file is `gridspool`, so the
    // supervisor must be told its command by argv[0], not by the file's name.
    use gridspool::launch::shepherd::RunReply;
    use std::io::Write;
    let rig = Rig::new();
    let links = tempfile::tempdir().expect("tempdir");
    let shepherd = links.path().join("gridspool-shepherd");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_gridspool"), &shepherd).expect("link");
    let id = 9651;
    let job = rig.job(
        id,
        binary_job_in(&rig.workdir(), "multi", "echo out; exit 3"),
        "",
    );
    let spec = serde_json::to_vec(&rig.spec(&job, 1)).expect("json");
    let mut child = std::process::Command::new(&shepherd)
        .arg("run")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("shepherd run");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&spec)
        .expect("spec");
    let out = child.wait_with_output().expect("run");
    let reply: RunReply =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert!(
        matches!(reply, RunReply::Started { pid } if pid > 0),
        "{reply:?} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = rig.workdir().join(format!("multi.o{id}"));
    wait_for("the job's output", 30, || {
        std::fs::read_to_string(&stdout).is_ok_and(|s| s == "out\n")
    });
}

/// Issue 23: a start server whose input never ends (the `sched_d` at the other end stopped
/// and something still holds the pipe) stayed for ever, found an hour later with parent 1.
/// One whose starter is gone takes its session as over, and one whose execution spool was
/// removed while it had nothing in flight exits.
#[test]
fn a_start_server_whose_starter_or_spool_is_gone_exits_though_its_input_stays_open() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().expect("tempdir");
    // Orphaned: started in the background by a shell that exits at once, its standard input
    // the pipe this test holds open.
    let orphan_spool = dir.path().join("orphan");
    let mut shell = Command::new("/bin/sh")
        .args([
            "-c",
            r#"exec 3<&0; "$0" start-server --results --master one --spool "$1" <&3 3<&- >/dev/null & echo $!
            while [ ! -e "$1/start-server" ]; do sleep 0.05; done"#,
            SHEPHERD,
        ])
        .arg(&orphan_spool)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sh");
    let held_open = shell.stdin.take().expect("stdin");
    let mut pid = String::new();
    BufReader::new(shell.stdout.take().expect("stdout"))
        .read_line(&mut pid)
        .expect("pid");
    let orphan: i32 = pid.trim().parse().expect("pid");
    assert!(shell.wait().expect("sh").success());
    // Its spool stays: only the loss of its starter ends it.
    wait_for("the orphaned start server to exit", 30, || !alive(orphan));
    assert!(orphan_spool.is_dir());
    // Still our child, input open, its execution spool removed.
    let spool = dir.path().join("removed");
    let mut server = Command::new(SHEPHERD)
        .args(["start-server", "--results", "--master", "two", "--spool"])
        .arg(&spool)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start-server");
    let mut hello = String::new();
    let mut out = BufReader::new(server.stdout.take().expect("stdout"));
    out.read_line(&mut hello).expect("hello");
    assert!(hello.contains("start_server"), "{hello}");
    assert!(spool.is_dir(), "the server records itself there");
    std::fs::remove_dir_all(&spool).expect("remove the spool");
    wait_for("the start server of a removed spool to exit", 30, || {
        matches!(server.try_wait(), Ok(Some(_)))
    });
    drop(held_open);
}

/// A host whose shepherd predates the session protocol (its start server greets with 2: here
/// the real shepherd without `--session`, which an older one ignores) is reached the older
/// ways: results, kills and the heartbeat over the `watch` session and short sessions of a
/// master connection.
#[test]
fn a_host_with_an_older_shepherd_is_reached_through_the_watcher_and_the_master_connection() {
    let Some(sshd) = Sshd::start(
        "a_host_with_an_older_shepherd_is_reached_through_the_watcher_and_the_master_connection",
    ) else {
        return;
    };
    let user = job_user();
    let cell = TestCell::new();
    let older = cell.root.join("older-shepherd");
    std::fs::write(
        &older,
        format!(
            "#!/bin/sh\nfor a; do shift; [ \"$a\" = --session ] || set -- \"$@\" \"$a\"; done\nexec {SHEPHERD} \"$@\"\n"
        ),
    )
    .expect("wrapper");
    set_mode(&older, 0o755);
    let mut config = ClusterConfig::load(&cell.spool.config_path()).expect("config");
    config.hosts.push(HostConfig::new(
        "oldhost",
        Some(2),
        LaunchMethod::Ssh {
            address: Some("127.0.0.1".into()),
            port: Some(sshd.port),
            user: Some(if is_root() {
                "root".into()
            } else {
                user.name.clone()
            }),
            options: sshd.client_options(),
            max_sessions: 4,
            ssh_client: Default::default(),
        },
    ));
    let rig = Rig::with_remote_shepherd(cell, config, user, &older.display().to_string());
    let wd = rig.workdir();
    let job = rig.job(
        9081,
        binary_job_in(&wd, "older", "echo via older; exit 3"),
        "",
    );
    rig.start_on(&job, 1, &rig.placement("oldhost", 1, None));
    let r = rig.ended(60);
    assert_eq!(
        (r.exit_status, r.failed, r.host.as_str()),
        (3, 0, "oldhost")
    );
    assert_eq!(read(&wd.join("older.o9081")), "via older\n");
    // The older ways are in use: a `watch` session, over a master connection.
    let exec_spool = rig.cell.spool.root().join("execd");
    let running = |needle: &str| {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
                    String::from_utf8_lossy(&c)
                        .replace('\0', " ")
                        .contains(needle)
                })
            })
    };
    wait_for("the watcher session", 30, || {
        running(&format!("watch {}", exec_spool.display()))
    });
    assert!(running("[mux]") || running("ControlMaster=yes"));
    // A kill over a short session of the master connection.
    let job = rig.job(9082, binary_job_in(&wd, "olderkill", "sleep 600"), "");
    rig.start_on(&job, 1, &rig.placement("oldhost", 1, None));
    rig.started();
    rig.launcher().kill(JobId(9082), 1, false).expect("kill");
    let r = rig.ended(30);
    assert_eq!((r.exit_status, r.failed), (137, 100));
}

/// Issue 27: a held start (`hold <spec>`: the task prepared while `sched_d` makes its
/// dispatch durable) runs its job only on `go`, and one let go by `drop`, by the end of the
/// server's input (its master died before the `go`) or by the server's own death leaves
/// nothing behind: no task directory for a new master to find, no supervisor, no `TMPDIR`,
/// and the job never ran. Started afresh after that, it runs once.
#[test]
fn a_held_start_runs_only_on_go_and_a_dropped_one_leaves_nothing() {
    use gridspool::launch::shepherd::{RunReply, StartReply, StartServerHello};
    use std::io::{BufRead, BufReader, Write};
    let rig = Rig::new();
    let dir = rig.workdir();
    let active = exec_spool_dir(rig.cell.spool.root(), &host()).join("active_jobs");
    let ran = |id: u32| dir.join(format!("ran.{id}"));
    let runs = |id: u32| {
        std::fs::read_to_string(ran(id))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let specs: std::collections::BTreeMap<u32, LaunchSpec> = [9671, 9672, 9673, 9674]
        .into_iter()
        .map(|id| {
            let js = binary_job_in(&dir, "held", "echo ran >> ran.$JOB_ID");
            (id, rig.spec(&rig.job(id, js, ""), 1))
        })
        .collect();
    let tmpdir = |id: u32| {
        let s = &specs[&id];
        Path::new(&s.tmpdir).join(format!("{id}.1.{}", s.queue_name()))
    };
    let server = |edit: &dyn Fn(&mut std::process::Command)| {
        let mut command = std::process::Command::new(SHEPHERD);
        command
            .arg("start-server")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        edit(&mut command);
        let mut child = command.spawn().expect("start-server");
        let input = child.stdin.take().expect("stdin");
        let mut output = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        output.read_line(&mut line).expect("hello");
        let hello: StartServerHello = serde_json::from_str(&line).expect("hello line");
        assert!(hello.held_starts, "{line}");
        (child, input, output)
    };
    // The supervisor of a held task, once it has prepared the task and waits: its
    // directory is under the hidden name, with its pid, and its TMPDIR exists.
    let held_supervisor = |id: u32, server: u32| {
        let staging = active.join(format!(".{id}.1.held.{server}"));
        wait_for("the held task prepared", 30, || {
            staging.join("shepherd.pid").exists() && tmpdir(id).exists()
        });
        read(&staging.join("shepherd.pid"))
            .split_whitespace()
            .next()
            .and_then(|p| p.parse::<i32>().ok())
            .expect("pid")
    };
    let gone_without_a_trace = |id: u32, supervisor: i32| {
        wait_for("the dropped supervisor's exit", 30, || !alive(supervisor));
        let left: Vec<String> = std::fs::read_dir(&active)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.contains(&id.to_string()))
                    .collect()
            })
            .unwrap_or_default();
        assert!(left.is_empty(), "task {id} left {left:?}");
        assert!(!tmpdir(id).exists(), "task {id} left its TMPDIR");
        assert_eq!(runs(id), 0, "task {id} ran");
    };

    let (mut first, mut input, output) = server(&|_| {});
    for id in [9671, 9672, 9673] {
        let json = serde_json::to_string(&specs[&id]).expect("json");
        writeln!(input, "hold {json}").expect("hold");
    }
    let sup: Vec<i32> = [9671, 9672, 9673]
        .into_iter()
        .map(|id| held_supervisor(id, first.id()))
        .collect();
    // Prepared, and not run: no directory under the task's name, nothing ran.
    for id in [9671, 9672, 9673] {
        assert!(!active.join(format!("{id}.1")).exists());
        assert_eq!(runs(id), 0);
    }
    writeln!(input, "go 9671.1").expect("go");
    writeln!(input, "drop 9672.1").expect("drop");
    gone_without_a_trace(9672, sup[1]);
    // The master is gone: its `go` for 9673 never comes.
    drop(input);
    let replies: Vec<StartReply> = output
        .lines()
        .map(|l| serde_json::from_str::<StartReply>(&l.expect("line")).expect("reply"))
        .collect();
    assert!(first.wait().expect("wait").success());
    gone_without_a_trace(9673, sup[2]);
    // Only the committed start was answered, and its job ran once.
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0].job, JobId(9671));
    assert!(matches!(replies[0].reply, RunReply::Started { pid } if pid > 0));
    wait_for("the committed task's result", 30, || {
        active.join("9671.1/result.json").exists()
    });
    assert_eq!(runs(9671), 1);

    // A server killed while it holds a start: its supervisor gives the task up too.
    let (mut second, mut input, _output) = server(&|_| {});
    let json = serde_json::to_string(&specs[&9674]).expect("json");
    writeln!(input, "hold {json}").expect("hold");
    let held = held_supervisor(9674, second.id());
    second.kill().expect("kill -9");
    second.wait().expect("wait");
    gone_without_a_trace(9674, held);
    // Started afresh (as after the new master's recovery): it runs, once.
    rig.launcher().start(specs[&9674].clone()).expect("start");
    // (The launcher's watcher also reports 9671, whose result its server left on disk.)
    let r = std::iter::repeat_with(|| rig.ended(30))
        .find(|r| r.job == JobId(9674))
        .expect("the result");
    assert_eq!((r.exit_status, r.failed), (0, 0));
    assert_eq!(runs(9674), 1);
    assert_eq!(runs(9673), 0);
    assert_eq!(runs(9672), 0);
}
