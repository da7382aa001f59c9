//! Array task ranges and sets, printed the way Grid Engine prints them.

use super::TaskId;
use serde::{Deserialize, Serialize};
use std::fmt;

/// `n[-m[:s]]`: the task range of `qsub -t`, `qdel -t` and `job.task` ids.
///
/// Stored normalised (first ≤ last, `last` on the step grid), as SGE stores it: `-t 5-1` is
/// kept as `1-5:1` (see the `qsub-t-bad` capture), `-t 1-6:2` as `1-5:2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskIdRange {
    pub first: TaskId,
    pub last: TaskId,
    pub step: TaskId,
}

/// Why a task range did not parse; `compat` turns this into SGE's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskRangeError {
    #[error("task id range {0:?} is not of the form n[-m[:s]]")]
    Syntax(String),
    #[error("task ids must be greater than 0 in {0:?}")]
    Zero(String),
}

impl TaskIdRange {
    pub fn single(id: TaskId) -> Self {
        TaskIdRange {
            first: id,
            last: id,
            step: 1,
        }
    }

    pub fn new(a: TaskId, b: TaskId, step: TaskId) -> Self {
        let (first, last) = if a <= b { (a, b) } else { (b, a) };
        let step = step.max(1);
        let last = first + (last - first) / step * step;
        TaskIdRange { first, last, step }
    }

    pub fn parse(text: &str) -> Result<Self, TaskRangeError> {
        let syntax = || TaskRangeError::Syntax(text.to_string());
        let num = |s: &str| s.trim().parse::<TaskId>().map_err(|_| syntax());
        let (range, step) = match text.split_once(':') {
            Some((r, s)) => (r, Some(num(s)?)),
            None => (text, None),
        };
        let (a, b) = match range.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None if step.is_none() => {
                let a = num(range)?;
                (a, a)
            }
            None => return Err(syntax()),
        };
        if a == 0 || b == 0 || step == Some(0) {
            return Err(TaskRangeError::Zero(text.to_string()));
        }
        Ok(TaskIdRange::new(a, b, step.unwrap_or(1)))
    }

    pub fn len(&self) -> u64 {
        u64::from((self.last - self.first) / self.step) + 1
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn is_single(&self) -> bool {
        self.first == self.last
    }

    pub fn contains(&self, id: TaskId) -> bool {
        id >= self.first && id <= self.last && (id - self.first).is_multiple_of(self.step)
    }

    pub fn iter(&self) -> impl Iterator<Item = TaskId> + '_ {
        (self.first..=self.last).step_by(self.step as usize)
    }
}

/// `qsub`'s echo form: always `first-last:step` (`Your job-array 10.1-5:1`).
impl fmt::Display for TaskIdRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}:{}", self.first, self.last, self.step)
    }
}

/// A set of task ids kept as Grid Engine keeps it: an ordered list of ranges that operations
/// split and re-merge, so that `qstat` prints the same `1,3-5:1` or `1-5:2` that SGE prints.
/// (The printed form depends on the history of the set, not only on its members: SGE shows
/// `{1,3,4,5}` as `1,3-5:1` after task 2 of `1-5` is held.)
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TaskSet {
    ranges: Vec<TaskIdRange>,
}

impl TaskSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn from_range(r: TaskIdRange) -> Self {
        TaskSet { ranges: vec![r] }
    }

    /// Exactly these ranges, as a set stored them (what deserialising its list does): for
    /// compact encodings of a stored set, which must print as the original did.
    pub fn from_stored_ranges(ranges: Vec<TaskIdRange>) -> Self {
        TaskSet { ranges }
    }

    pub fn ranges(&self) -> &[TaskIdRange] {
        &self.ranges
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    pub fn len(&self) -> u64 {
        self.ranges.iter().map(TaskIdRange::len).sum()
    }

    pub fn first(&self) -> Option<TaskId> {
        self.ranges.first().map(|r| r.first)
    }

    pub fn contains(&self, id: TaskId) -> bool {
        self.ranges.iter().any(|r| r.contains(id))
    }

    pub fn iter(&self) -> impl Iterator<Item = TaskId> + '_ {
        self.ranges.iter().flat_map(|r| r.iter())
    }

    /// Takes the lowest task id out of the set in O(1): how the scheduler starts array tasks.
    pub fn pop_first(&mut self) -> Option<TaskId> {
        let r = self.ranges.first_mut()?;
        let id = r.first;
        if r.first == r.last {
            self.ranges.remove(0);
        } else {
            r.first += r.step;
        }
        Some(id)
    }

    /// Removes one id, splitting its range as SGE does. Returns whether it was present.
    pub fn remove(&mut self, id: TaskId) -> bool {
        let Some(i) = self.ranges.iter().position(|r| r.contains(id)) else {
            return false;
        };
        let r = self.ranges[i];
        let mut pieces = Vec::with_capacity(2);
        if id > r.first {
            pieces.push(TaskIdRange {
                first: r.first,
                last: id - r.step,
                step: r.step,
            });
        }
        if id < r.last {
            pieces.push(TaskIdRange {
                first: id + r.step,
                last: r.last,
                step: r.step,
            });
        }
        for p in pieces.iter_mut() {
            if p.first == p.last {
                p.step = 1;
            }
        }
        self.ranges.splice(i..=i, pieces);
        self.compress();
        true
    }

    /// Adds one id (a requeued task), merging with its neighbours where SGE would.
    pub fn insert(&mut self, id: TaskId) {
        if self.contains(id) {
            return;
        }
        let at = self
            .ranges
            .iter()
            .position(|r| r.first > id)
            .unwrap_or(self.ranges.len());
        self.ranges.insert(at, TaskIdRange::single(id));
        self.compress();
    }

    /// The members of `self` that are also in `other`, as a new set.
    pub fn intersection(&self, other: &TaskSet) -> TaskSet {
        let mut out = TaskSet::new();
        for id in self.iter().filter(|id| other.contains(*id)) {
            out.push_back(id);
        }
        out
    }

    /// Removes every member of `other`; returns the ids actually removed.
    pub fn remove_all(&mut self, other: &TaskSet) -> TaskSet {
        let hit = self.intersection(other);
        for id in hit.iter() {
            self.remove(id);
        }
        hit
    }

    /// Appends an id larger than every member (building a set in order).
    fn push_back(&mut self, id: TaskId) {
        self.ranges.push(TaskIdRange::single(id));
        self.compress();
    }

    /// SGE's merge rule: neighbouring ranges join when the gap between them equals their common
    /// step; a single id takes the step of the range it joins, and two single ids form a range
    /// whose step is their distance.
    fn compress(&mut self) {
        let mut out: Vec<TaskIdRange> = Vec::with_capacity(self.ranges.len());
        for r in self.ranges.drain(..) {
            if let Some(prev) = out.last_mut() {
                let step = match (prev.is_single(), r.is_single()) {
                    (false, _) => prev.step,
                    (true, false) => r.step,
                    (true, true) => r.first - prev.last,
                };
                let fits = r.first.checked_sub(prev.last) == Some(step)
                    && (prev.is_single() || prev.step == step)
                    && (r.is_single() || r.step == step);
                if fits {
                    prev.last = r.last;
                    prev.step = step;
                    continue;
                }
            }
            out.push(r);
        }
        self.ranges = out;
    }
}

/// `qstat`'s `ja-task-ID` form: `2`, `1,3` (a two-element range), `1-5:1`, comma-joined.
impl fmt::Display for TaskSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if r.is_single() {
                write!(f, "{}", r.first)?;
            } else if r.first + r.step == r.last {
                write!(f, "{},{}", r.first, r.last)?;
            } else {
                write!(f, "{}-{}:{}", r.first, r.last, r.step)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str) -> TaskSet {
        TaskSet::from_range(TaskIdRange::parse(text).expect("range"))
    }

    #[test]
    fn parse_normalises_like_sge() {
        assert_eq!(TaskIdRange::parse("5-1").expect("ok").to_string(), "1-5:1");
        assert_eq!(
            TaskIdRange::parse("1-6:2").expect("ok").to_string(),
            "1-5:2"
        );
        assert_eq!(TaskIdRange::parse("7").expect("ok").to_string(), "7-7:1");
        assert!(TaskIdRange::parse("0-3").is_err());
        assert!(TaskIdRange::parse("a-3").is_err());
        assert!(TaskIdRange::parse("1-3:0").is_err());
    }

    #[test]
    fn display_matches_qstat_captures() {
        // qstat-as-sgeuser: `-t 1-5` shows 1-5:1, `-t 1-3:2` shows 1,3.
        assert_eq!(set("1-5").to_string(), "1-5:1");
        assert_eq!(set("1-3:2").to_string(), "1,3");
        // qstat-array-after-task-hold: task 2 of 1-5 held leaves 1,3-5:1.
        let mut s = set("1-5");
        assert!(s.remove(2));
        assert_eq!(s.to_string(), "1,3-5:1");
        // qstat-after-qdel: tasks 2 and 4 of 1-5 deleted leaves 1-5:2.
        assert!(s.remove(4));
        assert_eq!(s.to_string(), "1-5:2");
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn pop_insert_and_intersections() {
        let mut s = set("1-3");
        assert_eq!(s.pop_first(), Some(1));
        assert_eq!(s.to_string(), "2,3");
        s.insert(1);
        assert_eq!(s.to_string(), "1-3:1");
        let held = s.remove_all(&TaskSet::from_range(TaskIdRange::single(2)));
        assert_eq!(held.to_string(), "2");
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![1, 3]);
        assert!(!s.remove(2));
    }
}
