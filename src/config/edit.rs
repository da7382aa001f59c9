//! Changing `config.yaml` for `qconf` the way an administrator would by hand: only the keys
//! that change are rewritten, everything else — comments, order, quoting, flow or block
//! style — stays byte for byte.
//!
//! Why a lossless YAML tree (`yaml-edit`, on rust-analyzer's `rowan`) rather than a careful
//! text edit: the configuration is written in both block and flow style (`- {name: all.q,
//! slots: 6}`), which no line-based edit handles, and re-serializing the parsed
//! configuration would drop every comment. Why it can be trusted: nothing is written unless
//! the edited text, parsed by the same [`ClusterConfig::parse`] that `sched_d` uses, gives
//! exactly the configuration the change meant; otherwise the change is refused and the file
//! left as it was. The file is replaced atomically, under `config.yaml.lock` so that two
//! `qconf` calls cannot lose each other's change.

use super::{ClusterConfig, ConfigError};
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use yaml_edit::{Document, Mapping, YamlNode};

/// Why a change was not made.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file's layout is not one the editor can change (say, `queues` is not a list).
    #[error("cannot change {path}: {reason}")]
    Layout { path: PathBuf, reason: String },
}

/// `config.yaml` opened for one change.
pub struct ConfigEditor {
    path: PathBuf,
    doc: Document,
    /// The configuration as the file is now.
    pub config: ClusterConfig,
    /// Held until the change is written (or dropped); `None` for a caller who may not write
    /// the cell's directory (its change goes through `sched_d`).
    _lock: Option<std::fs::File>,
    /// The file's text as read.
    original: String,
}

impl ConfigEditor {
    /// Takes the lock beside `path` and reads the file.
    pub fn open(path: &Path) -> Result<Self, EditError> {
        let lock_path = path.with_extension("yaml.lock");
        let io = |op, source| EditError::Io {
            op,
            path: lock_path.clone(),
            source,
        };
        let lock = match std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
        {
            Ok(lock) => {
                lock.lock().map_err(|e| io("lock", e))?;
                Some(lock)
            }
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => None,
            Err(e) => return Err(io("open", e)),
        };
        let (text, config) = ClusterConfig::load_text(path)?;
        let doc = Document::from_str(&text).map_err(|e| EditError::Layout {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        Ok(ConfigEditor {
            path: path.to_path_buf(),
            doc,
            config,
            _lock: lock,
            original: text,
        })
    }

    fn layout(&self, reason: impl Into<String>) -> EditError {
        EditError::Layout {
            path: self.path.clone(),
            reason: reason.into(),
        }
    }

    fn root(&self) -> Result<Mapping, EditError> {
        self.doc
            .as_mapping()
            .ok_or_else(|| self.layout("it is not a mapping"))
    }

    /// The item of the top-level list `list` (`queues`) whose `name` is `name`.
    fn item(&self, list: &str, name: &str) -> Result<Mapping, EditError> {
        let seq = self
            .root()?
            .get_sequence(list)
            .ok_or_else(|| self.layout(format!("{list} is not a list")))?;
        for i in 0..seq.len() {
            if let Some(node) = seq.get(i)
                && let Some(m) = node.as_mapping()
                && m.get("name")
                    .and_then(|n| n.as_scalar().map(|s| s.as_string()))
                    .is_some_and(|n| n == name)
            {
                return Ok(m.clone());
            }
        }
        Err(self.layout(format!("{list} has no entry named {name}")))
    }

    /// Changes the item `name` of `list` from `old` to `new`: the keys whose values differ
    /// are set, those `new` leaves out removed.
    pub fn update_item<T: Serialize>(
        &self,
        list: &str,
        name: &str,
        old: &T,
        new: &T,
    ) -> Result<(), EditError> {
        let item = self.item(list, name)?;
        self.update_mapping(&item, &json(old), &json(new))
    }

    fn update_mapping(&self, m: &Mapping, old: &Value, new: &Value) -> Result<(), EditError> {
        let (Value::Object(old), Value::Object(new)) = (old, new) else {
            return Err(self.layout("not a mapping"));
        };
        // Only changed keys: an unchanged one keeps its text, or, absent from the file, its
        // default.
        for (key, value) in new {
            if old.get(key) != Some(value) {
                m.set(key.as_str(), node(value)?);
            }
        }
        for key in old.keys() {
            if !new.contains_key(key) {
                m.remove(key.as_str());
            }
        }
        Ok(())
    }

    /// Puts `new` in the top-level list `list`, in the file and in `items` (that list of the
    /// configuration in memory): in place of the item named `name` when there is one (only
    /// its changed keys rewritten, [`Self::update_item`]), else at the end. Returns whether
    /// it replaced one.
    pub fn put_item<T: Serialize>(
        &self,
        list: &str,
        items: &mut Vec<T>,
        name: &str,
        name_of: impl Fn(&T) -> &str,
        new: T,
    ) -> Result<bool, EditError> {
        match items.iter().position(|x| name_of(x) == name) {
            Some(i) => {
                let old = std::mem::replace(&mut items[i], new);
                self.update_item(list, name, &old, &items[i])?;
                Ok(true)
            }
            None => {
                self.add_item(list, &new)?;
                items.push(new);
                Ok(false)
            }
        }
    }

    /// Appends `new` to the top-level list `list` (created if absent).
    pub fn add_item<T: Serialize>(&self, list: &str, new: &T) -> Result<(), EditError> {
        let root = self.root()?;
        let value = json(new);
        match root.get_sequence(list) {
            Some(seq) => seq.push(node(&value)?),
            None => root.set(list, node(&Value::Array(vec![value]))?),
        }
        Ok(())
    }

    /// Removes the item `name` of the top-level list `list`.
    pub fn remove_item(&self, list: &str, name: &str) -> Result<(), EditError> {
        let seq = self
            .root()?
            .get_sequence(list)
            .ok_or_else(|| self.layout(format!("{list} is not a list")))?;
        for i in 0..seq.len() {
            let named = seq
                .get(i)
                .and_then(|n| n.as_mapping().cloned())
                .and_then(|m| m.get("name"))
                .and_then(|n| n.as_scalar().map(|s| s.as_string()))
                .is_some_and(|n| n == name);
            if named {
                seq.remove(i);
                return Ok(());
            }
        }
        Err(self.layout(format!("{list} has no entry named {name}")))
    }

    /// Sets the top-level key `key` to `new` (a list, a mapping or a value), removing it
    /// when `new` is `None`. A mapping already there is changed key by key.
    pub fn set_top<T: Serialize>(&self, key: &str, old: &T, new: &T) -> Result<(), EditError> {
        let root = self.root()?;
        let (old, new) = (json(old), json(new));
        if old == new {
            return Ok(());
        }
        if let (Value::Object(_), Value::Object(_)) = (&old, &new)
            && let Some(m) = root.get_mapping(key)
        {
            return self.update_mapping(&m, &old, &new);
        }
        if new.is_null() {
            root.remove(key);
        } else {
            root.set(key, node(&new)?);
        }
        Ok(())
    }

    /// Whether the caller (its real uid and gid) may write the file itself: the lock was
    /// taken, and `config.yaml` is writable.
    pub fn writable(&self) -> bool {
        self._lock.is_some()
            && nix::unistd::access(&self.path, nix::unistd::AccessFlags::W_OK).is_ok()
    }

    /// The file's text as read and as changed, if the change parses to `expected`.
    pub fn texts(&self, expected: &ClusterConfig) -> Result<(String, String), EditError> {
        let text = self.doc.to_string();
        let parsed = ClusterConfig::parse(&text).map_err(|reason| ConfigError::Invalid {
            path: self.path.clone(),
            reason,
        })?;
        if json(&parsed) != json(expected) {
            return Err(self.layout(
                "the edited file would not say what the change means (nothing was written)",
            ));
        }
        Ok((self.original.clone(), text))
    }

    /// Writes the changed file if it parses to `expected`; else changes nothing.
    pub fn commit(self, expected: &ClusterConfig) -> Result<(), EditError> {
        let (_, text) = self.texts(expected)?;
        write_config(&self.path, &text)
    }
}

/// Replaces `config.yaml` at `path` with `text` atomically and durably, keeping its mode.
pub fn write_config(path: &Path, text: &str) -> Result<(), EditError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("config.yaml");
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o644)
    };
    crate::file::durable::write_replace(dir, name, text.as_bytes(), mode).map_err(|e| {
        EditError::Io {
            op: "write",
            path: path.to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        }
    })
}

fn json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// A YAML node for `value`, in flow style with plain scalars where they read back as the
/// same value.
fn node(value: &Value) -> Result<YamlNode, EditError> {
    let text = format!("v: {}\n", flow(value));
    let doc = Document::from_str(&text).map_err(|e| EditError::Layout {
        path: PathBuf::from("<value>"),
        reason: e.to_string(),
    })?;
    doc.as_mapping()
        .and_then(|m| m.get("v"))
        .ok_or_else(|| EditError::Layout {
            path: PathBuf::from("<value>"),
            reason: format!("cannot write {value}"),
        })
}

/// `value` as flow YAML.
fn flow(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => scalar(s),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(flow).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", scalar(k), flow(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A string as a plain scalar when YAML reads it back as that string, else double-quoted.
fn scalar(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./-$".contains(c))
        && !s.starts_with(['-', '.', '$'])
        && s.parse::<f64>().is_err()
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n" | "~"
        );
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# the cluster\nhosts:\n  - {name: \"vm\", slots: 6}  # local\nhostgroups:\n  \"@allhosts\": [\"vm\"]\nqueues:\n  # the default queue\n  - {name: all.q, hostlist: [\"@allhosts\"], slots: 6, pe_list: [smp]}\n  - name: big.q   # big\n    hostlist: [\"@allhosts\"]\n    slots: 2 # two\nparallel_environments:\n  - {name: smp, slots: 999, allocation_rule: $pe_slots}\nscheduler: {policy: sge}\n";

    fn editor(text: &str) -> (tempfile::TempDir, ConfigEditor) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, text).expect("write");
        let e = ConfigEditor::open(&path).expect("open");
        (dir, e)
    }

    #[test]
    fn a_change_rewrites_only_its_keys_and_keeps_comments() {
        let (dir, e) = editor(TEXT);
        let mut config = e.config.clone();
        let old = config.queues[1].clone();
        config.queues[1].slots = 8;
        config.queues[1].pe_list = vec!["smp".into()];
        config.queues[1].rerun = true;
        e.update_item("queues", "big.q", &old, &config.queues[1])
            .expect("update");
        let old = config.queues[0].clone();
        config.queues[0].hostlist = vec!["vm".into()];
        e.update_item("queues", "all.q", &old, &config.queues[0])
            .expect("update");
        e.commit(&config).expect("commit");
        let text = std::fs::read_to_string(dir.path().join("config.yaml")).expect("read");
        assert_eq!(
            text,
            "# the cluster\nhosts:\n  - {name: \"vm\", slots: 6}  # local\nhostgroups:\n  \"@allhosts\": [\"vm\"]\nqueues:\n  # the default queue\n  - {name: all.q, hostlist: [vm], slots: 6, pe_list: [smp]}\n  - name: big.q   # big\n    hostlist: [\"@allhosts\"]\n    slots: 8 # two\n    pe_list: [smp]\n    rerun: true\nparallel_environments:\n  - {name: smp, slots: 999, allocation_rule: $pe_slots}\nscheduler: {policy: sge}\n"
        );
    }

    #[test]
    fn items_are_added_and_removed() {
        let (dir, e) = editor(TEXT);
        let mut config = e.config.clone();
        let mut pe = config.parallel_environments[0].clone();
        pe.name = "mpi".into();
        pe.allocation_rule = "$fill_up".into();
        config.parallel_environments.push(pe.clone());
        e.add_item("parallel_environments", &pe).expect("add");
        config.queues.retain(|q| q.name != "big.q");
        e.remove_item("queues", "big.q").expect("remove");
        let old = config.managers.clone();
        config.managers.push("sgeadmin".into());
        e.set_top("managers", &old, &config.managers)
            .expect("managers");
        e.commit(&config).expect("commit");
        let again = ClusterConfig::load(&dir.path().join("config.yaml")).expect("load");
        assert_eq!(again, config);
    }

    #[test]
    fn an_edit_that_would_not_parse_to_the_change_is_not_written() {
        let (dir, e) = editor(TEXT);
        let mut config = e.config.clone();
        // The editor is told one thing, the expected configuration says another.
        let old = config.queues[0].clone();
        let mut new = old.clone();
        new.slots = 3;
        e.update_item("queues", "all.q", &old, &new)
            .expect("update");
        config.queues[0].slots = 4;
        assert!(e.commit(&config).is_err());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("config.yaml")).expect("read"),
            TEXT
        );
    }

    #[test]
    fn scalars_are_plain_only_when_they_read_back_the_same() {
        assert_eq!(scalar("all.q"), "all.q");
        assert_eq!(scalar("@allhosts"), "\"@allhosts\"");
        assert_eq!(scalar("true"), "\"true\"");
        assert_eq!(scalar("4"), "\"4\"");
        assert_eq!(scalar("a b"), "\"a b\"");
        assert_eq!(scalar("$pe_slots"), "\"$pe_slots\"");
    }
}
