//! Job templates: DRMAA's attributes, and the `qsub` command line a template stands for.
//!
//! As Grid Engine's library does, a template is a binary job (`-b y`) of
//! `drmaa_remote_command` with `drmaa_v_argv`, started without a shell (`-shell no`: each
//! element of the vector is one argument, where Grid Engine joins them into a command line
//! for the shell); `drmaa_native_specification` is `qsub`'s own
//! options, placed before the ones the other attributes give (so that those win where they
//! overlap, as in Grid Engine), after those of `drmaa_job_category` (a `qtask` file's line).
//! Placeholders: `$drmaa_hd_ph$` is the user's home,
//! `$drmaa_wd_ph$` the job's working directory, `$drmaa_incr_ph$` the task number of a bulk
//! job (`qsub`'s `$TASK_ID` in paths).

use crate::error::{DrmaaError, DrmaaResult, Errno};
use std::collections::BTreeMap;

pub const PLACEHOLDER_INCR: &str = "$drmaa_incr_ph$";
pub const PLACEHOLDER_HD: &str = "$drmaa_hd_ph$";
pub const PLACEHOLDER_WD: &str = "$drmaa_wd_ph$";

/// The scalar attributes this implementation supports (`drmaa_get_attribute_names`).
pub const SCALAR_ATTRIBUTES: &[&str] = &[
    "drmaa_remote_command",
    "drmaa_js_state",
    "drmaa_wd",
    "drmaa_job_category",
    "drmaa_native_specification",
    "drmaa_block_email",
    "drmaa_start_time",
    "drmaa_job_name",
    "drmaa_input_path",
    "drmaa_output_path",
    "drmaa_error_path",
    "drmaa_join_files",
    "drmaa_transfer_files",
    "drmaa_deadline_time",
    "drmaa_wct_hlimit",
    "drmaa_wct_slimit",
    "drmaa_duration_hlimit",
    "drmaa_duration_slimit",
];

/// The vector attributes (`drmaa_get_vector_attribute_names`).
pub const VECTOR_ATTRIBUTES: &[&str] = &["drmaa_v_argv", "drmaa_v_env", "drmaa_v_email"];

/// A job template's attributes as set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobTemplate {
    scalars: BTreeMap<String, String>,
    vectors: BTreeMap<String, Vec<String>>,
}

fn invalid(code: Errno, message: String) -> DrmaaError {
    DrmaaError::new(code, message)
}

impl JobTemplate {
    /// Sets a scalar attribute, checking its value's form.
    pub fn set(&mut self, name: &str, value: &str) -> DrmaaResult<()> {
        if !SCALAR_ATTRIBUTES.contains(&name) {
            return Err(invalid(
                Errno::InvalidArgument,
                format!("unknown attribute \"{name}\""),
            ));
        }
        let bad = || {
            invalid(
                Errno::InvalidAttributeValue,
                format!("invalid value \"{value}\" for attribute \"{name}\""),
            )
        };
        match name {
            "drmaa_js_state" if value != "drmaa_active" && value != "drmaa_hold" => {
                return Err(bad());
            }
            "drmaa_block_email" | "drmaa_join_files" if !matches!(value, "0" | "1" | "y" | "n") => {
                return Err(bad());
            }
            "drmaa_transfer_files" if !value.chars().all(|c| "ioe".contains(c)) => {
                return Err(bad());
            }
            "drmaa_wct_hlimit"
            | "drmaa_wct_slimit"
            | "drmaa_duration_hlimit"
            | "drmaa_duration_slimit"
                if gridspool::launch::parse_time(value).is_err() =>
            {
                return Err(invalid(
                    Errno::InvalidAttributeFormat,
                    format!("invalid time \"{value}\" for attribute \"{name}\""),
                ));
            }
            "drmaa_start_time" | "drmaa_deadline_time" if sge_time(value).is_none() => {
                return Err(invalid(
                    Errno::InvalidAttributeFormat,
                    format!("invalid date and time \"{value}\" for attribute \"{name}\""),
                ));
            }
            _ => {}
        }
        self.scalars.insert(name.to_string(), value.to_string());
        Ok(())
    }

    pub fn get(&self, name: &str) -> DrmaaResult<Option<&str>> {
        if !SCALAR_ATTRIBUTES.contains(&name) {
            return Err(invalid(
                Errno::InvalidArgument,
                format!("unknown attribute \"{name}\""),
            ));
        }
        Ok(self.scalars.get(name).map(String::as_str))
    }

    pub fn set_vector(&mut self, name: &str, values: Vec<String>) -> DrmaaResult<()> {
        if !VECTOR_ATTRIBUTES.contains(&name) {
            return Err(invalid(
                Errno::InvalidArgument,
                format!("unknown vector attribute \"{name}\""),
            ));
        }
        if name == "drmaa_v_env" && values.iter().any(|v| !v.contains('=')) {
            return Err(invalid(
                Errno::InvalidAttributeFormat,
                "drmaa_v_env: each value is NAME=VALUE".to_string(),
            ));
        }
        self.vectors.insert(name.to_string(), values);
        Ok(())
    }

    pub fn get_vector(&self, name: &str) -> DrmaaResult<Option<&[String]>> {
        if !VECTOR_ATTRIBUTES.contains(&name) {
            return Err(invalid(
                Errno::InvalidArgument,
                format!("unknown vector attribute \"{name}\""),
            ));
        }
        Ok(self.vectors.get(name).map(Vec::as_slice))
    }

    /// The variables of `drmaa_v_env` that `qsub` must find in its environment (those
    /// [`JobTemplate::qsub_args`] names bare).
    pub fn qsub_environment(&self) -> Vec<(String, String)> {
        self.vectors
            .get("drmaa_v_env")
            .into_iter()
            .flatten()
            .filter_map(|v| v.split_once('='))
            .filter(|(_, value)| value.contains(','))
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    /// The `qsub` arguments of the template (without `-terse`); `bulk` is `-t start-end:incr`.
    /// `home` replaces `$drmaa_hd_ph$`; `category` are the options of the template's
    /// `drmaa_job_category` (see [`category_options`]).
    pub fn qsub_args(
        &self,
        bulk: Option<(u32, u32, u32)>,
        home: &str,
        category: &[String],
    ) -> DrmaaResult<Vec<String>> {
        let s = |n: &str| self.scalars.get(n).map(String::as_str);
        let command = s("drmaa_remote_command").ok_or_else(|| {
            invalid(
                Errno::ConflictingAttributeValues,
                "the job template has no drmaa_remote_command".to_string(),
            )
        })?;
        // The command with its vector of arguments as they are, not joined into a shell
        // command line (which would split an argument holding a blank); a native
        // `-shell yes` can still ask for the shell.
        let mut args = vec!["-shell".to_string(), "no".to_string()];
        args.extend(category.iter().cloned());
        if let Some(native) = s("drmaa_native_specification") {
            args.extend(split_words(native)?);
        }
        let wd = s("drmaa_wd").map(|w| w.replace(PLACEHOLDER_HD, home));
        if let Some(wd) = &wd {
            if wd.contains(PLACEHOLDER_WD) {
                return Err(invalid(
                    Errno::InvalidAttributeValue,
                    "drmaa_wd cannot contain $drmaa_wd_ph$".to_string(),
                ));
            }
            if bulk.is_none() && wd.contains(PLACEHOLDER_INCR) {
                return Err(invalid(
                    Errno::InvalidAttributeValue,
                    "$drmaa_incr_ph$ is only for bulk jobs".to_string(),
                ));
            }
            args.extend(["-wd".to_string(), wd.replace(PLACEHOLDER_INCR, "$TASK_ID")]);
        }
        let path = |v: &str| -> DrmaaResult<String> {
            // `[hostname]:path`: the host part is Grid Engine's too (ignored on a shared
            // file system).
            let p = v.split_once(':').map_or(v, |(_, p)| p);
            if bulk.is_none() && p.contains(PLACEHOLDER_INCR) {
                return Err(invalid(
                    Errno::InvalidAttributeValue,
                    "$drmaa_incr_ph$ is only for bulk jobs".to_string(),
                ));
            }
            let wd_text = wd.clone().unwrap_or_else(|| home.to_string());
            Ok(p.replace(PLACEHOLDER_HD, home)
                .replace(PLACEHOLDER_WD, &wd_text)
                .replace(PLACEHOLDER_INCR, "$TASK_ID"))
        };
        for (attr, flag) in [
            ("drmaa_input_path", "-i"),
            ("drmaa_output_path", "-o"),
            ("drmaa_error_path", "-e"),
        ] {
            if let Some(v) = s(attr) {
                args.extend([flag.to_string(), path(v)?]);
            }
        }
        if matches!(s("drmaa_join_files"), Some("y" | "1")) {
            args.extend(["-j".to_string(), "y".to_string()]);
        }
        if let Some(name) = s("drmaa_job_name") {
            args.extend(["-N".to_string(), name.to_string()]);
        }
        if s("drmaa_js_state") == Some("drmaa_hold") {
            args.push("-h".to_string());
        }
        if let Some(t) = s("drmaa_start_time").and_then(sge_time) {
            args.extend(["-a".to_string(), t]);
        }
        if let Some(t) = s("drmaa_deadline_time").and_then(sge_time) {
            args.extend(["-dl".to_string(), t]);
        }
        for (attr, limit) in [
            ("drmaa_wct_hlimit", "h_rt"),
            ("drmaa_wct_slimit", "s_rt"),
            ("drmaa_duration_hlimit", "h_cpu"),
            ("drmaa_duration_slimit", "s_cpu"),
        ] {
            if let Some(v) = s(attr) {
                args.extend(["-l".to_string(), format!("{limit}={v}")]);
            }
        }
        if let Some(mails) = self.vectors.get("drmaa_v_email").filter(|m| !m.is_empty()) {
            args.extend(["-M".to_string(), mails.join(",")]);
        }
        if matches!(s("drmaa_block_email"), Some("1" | "y")) {
            args.extend(["-m".to_string(), "n".to_string()]);
        }
        // `-v` splits its list at commas: a value holding one is handed over in qsub's own
        // environment, named bare (`-v NAME` takes the submitter's value), and arrives whole
        // as Grid Engine's library passes it (`CUDA_VISIBLE_DEVICES=0,1`).
        for var in self.vectors.get("drmaa_v_env").into_iter().flatten() {
            match var.split_once('=') {
                Some((name, value)) if value.contains(',') => {
                    args.extend(["-v".to_string(), name.to_string()]);
                }
                _ => args.extend(["-v".to_string(), var.clone()]),
            }
        }
        if let Some((start, end, incr)) = bulk {
            args.extend(["-t".to_string(), format!("{start}-{end}:{incr}")]);
        }
        args.extend(["-b".to_string(), "y".to_string(), command.to_string()]);
        args.extend(
            self.vectors
                .get("drmaa_v_argv")
                .into_iter()
                .flatten()
                .cloned(),
        );
        Ok(args)
    }
}

/// The options of job category `name`, as Grid Engine's library finds them: the line of the
/// `qtask` files (`$SGE_ROOT/$SGE_CELL/common/qtask`, then the user's `~/.qtask`, which
/// wins) whose first word is `name`, the rest of it. A category in neither has no options.
pub fn category_options(name: &str, files: &[std::path::PathBuf]) -> DrmaaResult<Vec<String>> {
    let mut found = None;
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('#') {
                continue;
            }
            let (first, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            // `!name` in the global file: users may not redefine it.
            if first == name || first.strip_prefix('!') == Some(name) {
                found = Some(rest.to_string());
            }
        }
    }
    found.map_or(Ok(Vec::new()), |rest| split_words(&rest))
}

/// Words of a native specification, split as a shell splits them (blanks; single and double
/// quotes; backslash).
pub fn split_words(text: &str) -> DrmaaResult<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(unbalanced(text)),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c) => word.push(c),
                            None => return Err(unbalanced(text)),
                        },
                        Some(c) => word.push(c),
                        None => return Err(unbalanced(text)),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

fn unbalanced(text: &str) -> DrmaaError {
    DrmaaError::new(
        Errno::InvalidAttributeFormat,
        format!("unbalanced quotes in the native specification \"{text}\""),
    )
}

/// DRMAA's `[[[[CC]YY/]MM/]DD] hh:mm[:ss] [{-|+}UU:uu]` as `qsub -a`'s `[[CC]YY]MMDDhhmm[.SS]`
/// (the parts left out are today's; the zone is the local one when none is given).
pub fn sge_time(text: &str) -> Option<String> {
    let text = text.trim();
    let (date, time) = match text.rsplit_once(' ') {
        Some((d, t)) if t.contains(':') && !t.starts_with(['+', '-']) => (Some(d.trim()), t),
        _ if !text.contains(' ') => (None, text),
        _ => return None,
    };
    let mut hms = time.split(':');
    let number = |p: Option<&str>, max: u32| -> Option<u32> {
        let p = p?;
        (p.len() == 2 && p.chars().all(|c| c.is_ascii_digit()))
            .then(|| p.parse().ok())
            .flatten()
            .filter(|v| *v <= max)
    };
    let hour = number(hms.next(), 23)?;
    let minute = number(hms.next(), 59)?;
    let second = match hms.next() {
        Some(s) => Some(number(Some(s), 59)?),
        None => None,
    };
    let now = jiff::Zoned::now();
    let (mut year, mut month, mut day) =
        (i32::from(now.year()), now.month() as u32, now.day() as u32);
    if let Some(date) = date {
        let parts: Vec<&str> = date.split('/').collect();
        let n = |p: &str| -> Option<u32> {
            p.chars()
                .all(|c| c.is_ascii_digit())
                .then(|| p.parse().ok())
                .flatten()
        };
        match parts.as_slice() {
            [d] => day = n(d)?,
            [m, d] => (month, day) = (n(m)?, n(d)?),
            [y, m, d] => {
                let y = n(y)?;
                year = if y < 100 { 2000 + y as i32 } else { y as i32 };
                (month, day) = (n(m)?, n(d)?);
            }
            _ => return None,
        }
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let mut out = format!("{year:04}{month:02}{day:02}{hour:02}{minute:02}");
    if let Some(s) = second {
        out.push_str(&format!(".{s:02}"));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(pairs: &[(&str, &str)]) -> JobTemplate {
        let mut t = JobTemplate::default();
        for (n, v) in pairs {
            t.set(n, v).expect("set");
        }
        t
    }

    #[test]
    fn a_template_is_a_binary_job_with_native_options_first() {
        let mut t = template(&[
            ("drmaa_remote_command", "/bin/echo"),
            ("drmaa_native_specification", "-l h_rt=60 -q 'all.q'"),
            ("drmaa_job_name", "hello"),
            ("drmaa_output_path", ":$drmaa_hd_ph$/out.$drmaa_incr_ph$"),
            ("drmaa_join_files", "y"),
            ("drmaa_js_state", "drmaa_hold"),
        ]);
        t.set_vector("drmaa_v_argv", vec!["a b".into(), "c".into()])
            .expect("argv");
        t.set_vector("drmaa_v_env", vec!["X=1,2".into(), "Y=3".into()])
            .expect("env");
        assert_eq!(
            t.qsub_args(Some((1, 4, 2)), "/home/u", &[]).expect("args"),
            [
                "-shell",
                "no",
                "-l",
                "h_rt=60",
                "-q",
                "all.q",
                "-o",
                "/home/u/out.$TASK_ID",
                "-j",
                "y",
                "-N",
                "hello",
                "-h",
                "-v",
                "X",
                "-v",
                "Y=3",
                "-t",
                "1-4:2",
                "-b",
                "y",
                "/bin/echo",
                "a b",
                "c"
            ]
        );
        // The value with a comma goes whole through qsub's environment.
        assert_eq!(t.qsub_environment(), [("X".to_string(), "1,2".to_string())]);
        // The task placeholder is for bulk jobs only.
        assert_eq!(
            t.qsub_args(None, "/home/u", &[]).map_err(|e| e.code),
            Err(Errno::InvalidAttributeValue)
        );
    }

    #[test]
    fn attributes_are_checked() {
        let mut t = JobTemplate::default();
        assert_eq!(
            t.set("drmaa_js_state", "frozen").map_err(|e| e.code),
            Err(Errno::InvalidAttributeValue)
        );
        assert_eq!(
            t.set("no_such", "x").map_err(|e| e.code),
            Err(Errno::InvalidArgument)
        );
        assert_eq!(
            t.set("drmaa_wct_hlimit", "ten").map_err(|e| e.code),
            Err(Errno::InvalidAttributeFormat)
        );
        assert_eq!(
            JobTemplate::default()
                .qsub_args(None, "/h", &[])
                .map_err(|e| e.code),
            Err(Errno::ConflictingAttributeValues)
        );
    }

    #[test]
    fn drmaa_times_become_qsub_times() {
        assert_eq!(
            sge_time("2027/01/02 03:04:05").as_deref(),
            Some("202701020304.05")
        );
        assert_eq!(sge_time("27/01/02 03:04").as_deref(), Some("202701020304"));
        assert!(sge_time("3:4").is_none());
        assert!(sge_time("13/40 10:00").is_none());
    }

    #[test]
    fn job_categories_come_from_the_qtask_files() {
        let dir = std::env::temp_dir().join(format!("qtask-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let (global, own) = (dir.join("qtask"), dir.join(".qtask"));
        std::fs::write(
            &global,
            "# categories\nbig -l h_vmem=8G -pe smp 4\nsmall -l h_rt=60\n",
        )
        .expect("write");
        std::fs::write(&own, "small -l h_rt=120\n").expect("write");
        let files = [global, own];
        assert_eq!(
            category_options("big", &files).expect("big"),
            ["-l", "h_vmem=8G", "-pe", "smp", "4"]
        );
        assert_eq!(
            category_options("small", &files).expect("small"),
            ["-l", "h_rt=120"]
        );
        assert!(category_options("none", &files).expect("none").is_empty());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn native_specifications_split_as_a_shell_does() {
        assert_eq!(
            split_words(r#"-N "a b" -v 'X=1 2' c\ d"#).expect("words"),
            ["-N", "a b", "-v", "X=1 2", "c d"]
        );
        assert!(split_words("-N 'open").is_err());
    }
}
