//! Generated batches: valid adds, removes and updates from a seed, with the tool names they
//! leave, and the tool names of a catalog to compare them with.

use listsync_core::vocab::{AuthCtx, Catalog, Kind};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Generates valid batches (checked adds, removes and updates) and tracks the catalog they
/// build, from a seed.
pub struct Batches {
    items: BTreeMap<String, u32>,
    next: u32,
    rng: u64,
}

impl Batches {
    /// Starting from [`initial_ops`](super::initial_ops).
    pub fn new(seed: u64) -> Batches {
        Batches {
            items: (0..6).map(|i| (format!("t{i}"), 1)).collect(),
            next: 6,
            rng: seed | 1,
        }
    }

    fn roll(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % n
    }

    /// The next batch: one to three ops on distinct names, keeping 3 to 12 tools.
    pub fn next_batch(&mut self) -> Value {
        let n = 1 + self.roll(3);
        let mut ops = Vec::new();
        let mut touched = Vec::new();
        for _ in 0..n {
            let len = self.items.len();
            let choice = if len <= 3 {
                0
            } else if len >= 12 {
                1
            } else {
                self.roll(3)
            };
            let free: Vec<String> = self
                .items
                .keys()
                .filter(|k| !touched.contains(*k))
                .cloned()
                .collect();
            match choice {
                1 | 2 if !free.is_empty() => {
                    let name = free[self.roll(free.len() as u64) as usize].clone();
                    touched.push(name.clone());
                    if choice == 1 {
                        self.items.remove(&name);
                        ops.push(json!({"op": "remove", "kind": "tools", "name": name}));
                    } else {
                        let rev = self.items.get_mut(&name).expect("present");
                        *rev += 1;
                        let d = format!("{name} v{rev}");
                        ops.push(json!({"op": "update", "kind": "tools", "name": name, "description": d}));
                    }
                }
                _ => {
                    let name = format!("t{}", self.next);
                    self.next += 1;
                    touched.push(name.clone());
                    self.items.insert(name.clone(), 1);
                    let d = format!("{name} v1");
                    ops.push(json!({"op": "add", "kind": "tools", "name": name, "description": d}));
                }
            }
        }
        Value::Array(ops)
    }

    /// The tool names the batches so far leave, sorted.
    pub fn names(&self) -> Vec<String> {
        self.items.keys().cloned().collect()
    }
}

/// Tool names of a catalog, sorted.
pub fn names_of(catalog: &Catalog) -> Vec<String> {
    let mut v: Vec<String> = catalog
        .visible(Kind::Tools, AuthCtx(0))
        .iter()
        .map(|i| i.name.to_string())
        .collect();
    v.sort();
    v
}
