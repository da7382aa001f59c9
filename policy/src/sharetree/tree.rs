//! The share tree as configured (`share_tree(5)`, `qconf -sstree`), with the lookups SGE's
//! `search_userprj_node` performs precomputed: a job's node is one hash lookup.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a: the name lookups run once per job per pass (100,000 jobs), and SipHash's
/// flooding resistance buys nothing for configured user and project names.
#[derive(Default)]
pub(super) struct Fnv1a(u64);

impl Hasher for Fnv1a {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// A multiply-rotate hash over whole words (FxHash's), for keys that are already integers.
#[derive(Default)]
pub(super) struct WordHash(u64);

impl WordHash {
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for WordHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.add(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

type NameMap<V> = HashMap<String, V, BuildHasherDefault<Fnv1a>>;

/// The name of the share-tree leaf that stands for every user without a node of their own
/// (`share_tree(5)`).
pub const DEFAULT_USER_NODE: &str = "default";

/// A node of the share tree as configured (`qconf -sstree`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareTreeNodeSpec {
    /// Node name: a user or project name for leaves, anything for groups; `Root` by convention
    /// for the root.
    pub name: String,
    /// Shares among the node's siblings.
    pub shares: u32,
    /// Child nodes in configuration order (order matters for SGE's name lookup and ties).
    pub children: Vec<ShareTreeNodeSpec>,
}

impl ShareTreeNodeSpec {
    /// A leaf node.
    pub fn leaf(name: &str, shares: u32) -> Self {
        Self {
            name: name.to_string(),
            shares,
            children: Vec::new(),
        }
    }

    /// An inner node.
    pub fn group(name: &str, shares: u32, children: Vec<ShareTreeNodeSpec>) -> Self {
        Self {
            name: name.to_string(),
            shares,
            children,
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct TreeNode {
    pub(super) name: String,
    pub(super) shares: u32,
    pub(super) parent: Option<usize>,
    pub(super) children: Vec<usize>,
    /// The name is a configured project.
    pub(super) is_project: bool,
    /// The outermost project node on the path from the root, excluding this node: the
    /// project whose usage sub-records this node's leaves read (`sge_calc_node_usage`).
    pub(super) project_context: Option<usize>,
}

/// A configured share tree with the lookups SGE's `search_userprj_node` performs, precomputed so
/// that mapping a job to its node costs one hash lookup.
#[derive(Debug, Clone)]
pub struct ShareTree {
    pub(super) nodes: Vec<TreeNode>,
    /// User name → node, searching outside project subtrees (depth-first, configuration order).
    pub(super) users: NameMap<usize>,
    /// The `default` node outside project subtrees.
    pub(super) default_user: Option<usize>,
    /// Project name → project node.
    pub(super) projects: NameMap<usize>,
    /// Project node → (user → node inside that project's subtree).
    pub(super) project_users: HashMap<usize, NameMap<usize>>,
    /// Project node → its `default` user node.
    pub(super) project_defaults: HashMap<usize, usize>,
    /// Which tree this is, for a [`ShareTreeCache`]: what it keeps (nodes, temporary nodes)
    /// is only valid for the tree it was built from. A clone is the same tree.
    pub(super) id: u64,
}

/// Source of [`ShareTree::id`].
static NEXT_TREE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl ShareTree {
    /// Builds the tree. `project_names` are the configured projects (`qconf -sprjl`): SGE
    /// treats a node as a project node when its name is one.
    pub fn new(root: &ShareTreeNodeSpec, project_names: &[&str]) -> Self {
        let mut nodes = Vec::new();
        // Iterative pre-order build keeping configuration order.
        let mut stack: Vec<(&ShareTreeNodeSpec, Option<usize>)> = vec![(root, None)];
        while let Some((spec, parent)) = stack.pop() {
            let idx = nodes.len();
            let is_project = project_names.contains(&spec.name.as_str());
            let project_context = parent.and_then(|p: usize| {
                let pn: &TreeNode = &nodes[p];
                pn.project_context
                    .or(if pn.is_project { Some(p) } else { None })
            });
            nodes.push(TreeNode {
                name: spec.name.clone(),
                shares: spec.shares,
                parent,
                children: Vec::new(),
                is_project,
                project_context,
            });
            if let Some(p) = parent {
                nodes[p].children.push(idx);
            }
            for child in spec.children.iter().rev() {
                stack.push((child, Some(idx)));
            }
        }
        let mut tree = Self {
            nodes,
            users: NameMap::default(),
            default_user: None,
            projects: NameMap::default(),
            project_users: HashMap::new(),
            project_defaults: HashMap::new(),
            id: NEXT_TREE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        };
        tree.index();
        tree
    }

    /// Precomputes `search_userprj_node`: first match in depth-first pre-order, not descending
    /// into project nodes other than the one searched for.
    fn index(&mut self) {
        let mut users = NameMap::default();
        let mut projects = NameMap::default();
        // Outside projects.
        let mut stack = vec![0usize];
        while let Some(i) = stack.pop() {
            let n = &self.nodes[i];
            if n.is_project && i != 0 {
                projects.entry(n.name.clone()).or_insert(i);
                continue;
            }
            users.entry(n.name.clone()).or_insert(i);
            for &c in n.children.iter().rev() {
                stack.push(c);
            }
        }
        let mut project_users: HashMap<usize, NameMap<usize>> = HashMap::new();
        let mut project_defaults = HashMap::new();
        for &p in projects.values() {
            let inside = project_users.entry(p).or_default();
            let mut stack: Vec<usize> = self.nodes[p].children.iter().rev().copied().collect();
            while let Some(i) = stack.pop() {
                let n = &self.nodes[i];
                if n.is_project {
                    continue;
                }
                if n.name == DEFAULT_USER_NODE {
                    project_defaults.entry(p).or_insert(i);
                }
                inside.entry(n.name.clone()).or_insert(i);
                for &c in n.children.iter().rev() {
                    stack.push(c);
                }
            }
        }
        self.default_user = users.get(DEFAULT_USER_NODE).copied();
        self.users = users;
        self.projects = projects;
        self.project_users = project_users;
        self.project_defaults = project_defaults;
    }

    /// Number of configured nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the tree is only a root.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() <= 1
    }

    /// The node a job of `user` (in `project`, if the job has a configured project) draws on:
    /// `Found(node)`, `Default(node)` for a `default` node (the user gets a sibling copy), or
    /// `None` (no share-tree tickets).
    pub(super) fn locate(&self, user: &str, project: Option<&str>) -> Located {
        match project {
            Some(p) => {
                let Some(&pn) = self.projects.get(p) else {
                    // SGE: a project not in the tree means no node, even if the user has one.
                    return Located::None;
                };
                if self.nodes[pn].children.is_empty() {
                    return Located::Found(pn);
                }
                match self.project_users.get(&pn).and_then(|m| m.get(user)) {
                    Some(&n) if user != DEFAULT_USER_NODE => Located::Found(n),
                    _ => match self.project_defaults.get(&pn) {
                        Some(&d) => Located::Default(d),
                        None => Located::None,
                    },
                }
            }
            None => match self.users.get(user) {
                Some(&n) if user != DEFAULT_USER_NODE => Located::Found(n),
                _ => match self.default_user {
                    Some(d) => Located::Default(d),
                    None => Located::None,
                },
            },
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Located {
    Found(usize),
    Default(usize),
    None,
}
