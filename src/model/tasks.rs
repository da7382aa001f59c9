//! Array task ranges and sets, printed the way Grid Engine prints them.

use super::TaskId;
use serde::{Deserialize, Serialize};
use std::fmt;

/// `n[-m[:s]]`: the task range of `qsub -t`, `qdel -t` and `job.task` ids.
///
/// Stored with first ≤ last, as SGE stores a submitted range: `-t 5-1` is kept as `1-5:1`
/// (see the `qsub-t-bad` capture); `last` stays as given, off the step grid or not (`-t
/// 1-10:2` echoes and shows in `qstat -j` as `1-10:2`, oracle), while the task lists made from
/// it end on the grid ([`TaskIdRange::corrected`]: `qstat` lists `1-9:2`).
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
        TaskIdRange { first, last, step }
    }

    /// The range ending on its last member (SGE's `range_correct_end`): `1-10:2` is `1-9:2`.
    pub fn corrected(self) -> Self {
        TaskIdRange {
            last: self.first + (self.last - self.first) / self.step * self.step,
            ..self
        }
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
        TaskSet {
            ranges: vec![r.corrected()],
        }
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

    /// Takes the lowest task id out of the set: how the scheduler starts array tasks (SGE's
    /// `job_enroll`, a removal of that id). O(1) but for the settling of the first range.
    pub fn pop_first(&mut self) -> Option<TaskId> {
        let id = self.ranges.first()?.first;
        self.remove_at(0, id);
        self.compress_from(0, true);
        Some(id)
    }

    /// Removes one id as SGE's `range_list_remove_id` does (its range shrinks or splits in
    /// two), then compresses the list (SGE's callers always do). Returns whether it was
    /// present.
    pub fn remove(&mut self, id: TaskId) -> bool {
        let Some(i) = self.ranges.iter().position(|r| r.contains(id)) else {
            return false;
        };
        self.remove_at(i, id);
        self.compress_from(0, false);
        true
    }

    /// `range_list_remove_id` on range `i`, which holds `id`. A range left with one id keeps
    /// its step, as in SGE (it matters to the merge rules).
    fn remove_at(&mut self, i: usize, id: TaskId) {
        let r = &mut self.ranges[i];
        let step = r.step;
        if id == r.first && (id == r.last || id.saturating_add(step) > r.last) {
            self.ranges.remove(i);
        } else if id == r.first {
            r.first += step;
        } else if id == r.last {
            r.last -= step;
        } else {
            let upper = TaskIdRange {
                first: id + step,
                last: r.last,
                step,
            };
            r.last = id - step;
            self.ranges.insert(i + 1, upper);
        }
    }

    /// Adds one id (a task that joins a hold list, a requeued task) as SGE's
    /// `range_list_insert_id` does, then compresses the list: the id extends the range
    /// that ends one step before it or the next range that starts one step after it,
    /// splits a range whose span it falls into off its grid, or stands alone.
    pub fn insert(&mut self, id: TaskId) {
        if self.ranges.windows(2).any(|w| w[0].first > w[1].first) {
            // SGE sorts by first id before it inserts; stored sets are always sorted.
            self.ranges.sort_by_key(|r| r.first);
        }
        // The last range whose end is not above `id` (`before`), and the one after it.
        let after = self.ranges.partition_point(|r| r.last <= id);
        let before = after.checked_sub(1);
        let next = self.ranges.get(after).copied();
        if let Some(n) = next
            && id > n.first
        {
            // Inside the span of `next` (which ends above `id`).
            if (id - n.first).is_multiple_of(n.step) {
                return;
            }
            let below = n.first + (id - n.first) / n.step * n.step;
            let pieces = [
                TaskIdRange {
                    first: n.first,
                    last: below,
                    step: n.step,
                },
                TaskIdRange::single(id),
                TaskIdRange {
                    first: below + n.step,
                    last: n.last,
                    step: n.step,
                },
            ];
            self.ranges.splice(after..=after, pieces);
        } else if before.is_some_and(|b| self.ranges[b].last == id)
            || next.is_some_and(|n| n.first == id)
        {
            return;
        } else if let Some(b) = before.filter(|&b| {
            let r = self.ranges[b];
            r.last.checked_add(r.step) == Some(id)
        }) {
            self.ranges[b].last = id;
        } else if let Some(n) = next.filter(|n| n.first.checked_sub(n.step) == Some(id)) {
            self.ranges[after].first = n.first - n.step;
        } else {
            self.ranges.insert(after, TaskIdRange::single(id));
        }
        self.compress_from(0, false);
    }

    /// The members of `self` that are also in `other`, as SGE's
    /// `range_list_calculate_intersection_set` builds them: one id after the other, then
    /// compressed.
    pub fn intersection(&self, other: &TaskSet) -> TaskSet {
        let mut out = TaskSet {
            ranges: self
                .iter()
                .filter(|id| other.contains(*id))
                .map(TaskIdRange::single)
                .collect(),
        };
        out.compress_from(0, false);
        out
    }

    /// Removes every member of `other` and returns them as a set of their own, moved one id
    /// at a time in ascending order, as SGE moves the ids of a `qhold`/`qalter` task range
    /// between its per-hold lists (`job_set_hold_state`), so both sets print as SGE's would.
    pub fn remove_all(&mut self, other: &TaskSet) -> TaskSet {
        let hit: Vec<TaskId> = self.iter().filter(|id| other.contains(*id)).collect();
        let mut moved = TaskSet::new();
        for id in hit {
            self.remove(id);
            moved.insert(id);
        }
        moved
    }

    /// SGE's `range_list_compress`, from range `i` on: a pair of neighbours joins when the
    /// second continues the first with the same step; when a single id (step 1) sits one
    /// step of the other before or after the other range; or when both are single ids with
    /// step 1, which then form a range whose step is their distance (`1` and `5` make
    /// `1-5:4`). After a join the joined range is compared with its new neighbour.
    /// `first_only` stops at the first pair that does not join (the rest of the list was
    /// compressed before and is unchanged).
    fn compress_from(&mut self, mut i: usize, first_only: bool) {
        while i + 1 < self.ranges.len() {
            let (a, b) = (self.ranges[i], self.ranges[i + 1]);
            let joined = if a.last.checked_add(a.step) == Some(b.first) && a.step == b.step {
                Some(TaskIdRange { last: b.last, ..a })
            } else if a.is_single() && a.step == 1 && b.first.checked_sub(b.step) == Some(a.last) {
                Some(TaskIdRange {
                    first: a.first,
                    last: b.last,
                    step: b.step,
                })
            } else if b.is_single() && b.step == 1 && a.last.checked_add(a.step) == Some(b.last) {
                Some(TaskIdRange { last: b.last, ..a })
            } else if a.is_single()
                && b.is_single()
                && a.step == 1
                && b.step == 1
                && b.first > a.first
            {
                Some(TaskIdRange {
                    first: a.first,
                    last: b.first,
                    step: b.first - a.first,
                })
            } else {
                None
            };
            match joined {
                Some(r) => {
                    self.ranges[i] = r;
                    self.ranges.remove(i + 1);
                }
                None if first_only => return,
                None => i += 1,
            }
        }
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
        // Kept as submitted (oracle: `qsub -t 1-10:2` echoes `1-10:2`), listed corrected.
        assert_eq!(
            TaskIdRange::parse("1-6:2").expect("ok").to_string(),
            "1-6:2"
        );
        assert_eq!(set("1-6:2").to_string(), "1-5:2");
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

    /// SGE's `sge_range.c` rules: two single ids join at any distance (`1` and `4` make
    /// `1-4:3`), and an id inserted inside a range's span off its grid splits the range
    /// (oracle `oracle-ranges-hu`: rngC prints `1,2,4,6-8:1`).
    #[test]
    fn insert_splits_a_range_around_an_id_off_its_grid() {
        let mut s = set("1-8");
        for id in [2, 3, 5] {
            assert!(s.remove(id));
        }
        assert_eq!(
            s.ranges(),
            &[TaskIdRange::new(1, 4, 3), TaskIdRange::new(6, 8, 1)]
        );
        s.insert(2);
        assert_eq!(s.to_string(), "1,2,4,6-8:1");
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![1, 2, 4, 6, 7, 8]);
        // Held one by one: 1, 3, 4, 5 print as SGE's `1,3,4,5` (oracle-ranges-history).
        let mut h = TaskSet::new();
        for id in [1, 3, 4, 5] {
            h.insert(id);
        }
        assert_eq!(h.to_string(), "1,3,4,5");
        let mut g = TaskSet::new();
        for id in [1, 3, 5, 4] {
            g.insert(id);
        }
        assert_eq!(g.to_string(), "1,3,4,5");
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
