//! Scenario generation: a run's *shape* (how many clients, batches, items, calls, faults...) is
//! drawn by a proptest strategy from the run's seed, and the concrete scenario (catalog,
//! scripted batches, calls, authorization switches) is built from the shape with seeded
//! randomness. Shrinking a failing run is proptest shrinking the shape toward its simplest
//! value (one client, no batch, no fault, one page...) while the seed stays fixed.
//!
//! Each part of a scenario is drawn from its own random stream, so that shrinking one knob
//! (say, fewer initial items) leaves the others (the script, the calls) as they were.

use crate::plan::{FaultPlan, Micros};
use listsync_core::aggregate::Member;
use listsync_core::client::{ClientConfig, Limits, Pacing};
use listsync_core::history::ClientId;
use listsync_core::scenario::{Aggregate, Cluster, Faults, MAX_MEMBERS, Scenario, Transport};
use listsync_core::server::ServerConfig;
use listsync_core::strategy::{ClientStrategy, ServerStrategy};
use listsync_core::vocab::{AuthCtx, Era, Kind, KindSet, Name, Op, Scope};
use proptest::num::u32::BinarySearch;
use proptest::strategy::{NewTree, Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// The strategies under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Strategies {
    /// Every client's strategy.
    pub client: ClientStrategy,
    /// The server's strategy.
    pub server: ServerStrategy,
}

impl Strategies {
    /// Reference client and server.
    pub const REFERENCE: Strategies = Strategies {
        client: ClientStrategy::Reference,
        server: ServerStrategy::Reference,
    };

    /// Parses a strategy name: a client strategy, a server strategy, or `reference` (both).
    pub fn parse(name: &str) -> Result<Strategies, String> {
        if name == "reference" {
            return Ok(Strategies::REFERENCE);
        }
        if let Ok(client) = name.parse::<ClientStrategy>() {
            return Ok(Strategies {
                client,
                server: ServerStrategy::Reference,
            });
        }
        if let Ok(server) = name.parse::<ServerStrategy>() {
            return Ok(Strategies {
                client: ClientStrategy::Reference,
                server,
            });
        }
        let mut all: Vec<&str> = ClientStrategy::ALL.iter().map(|s| s.as_str()).collect();
        all.extend(ServerStrategy::ALL.iter().skip(1).map(|s| s.as_str()));
        Err(format!(
            "unknown strategy '{name}' (expected one of: {})",
            all.join(", ")
        ))
    }

    /// The name of the known-bad strategy under test, or `reference`.
    pub fn label(&self) -> &'static str {
        if self.client != ClientStrategy::Reference {
            self.client.as_str()
        } else {
            self.server.as_str()
        }
    }

    /// Whether both strategies are the reference.
    pub fn is_reference(&self) -> bool {
        *self == Strategies::REFERENCE
    }
}

/// What the generator may vary, besides the fault plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// Strategies under test.
    pub strategies: Strategies,
    /// Fault plan (batch counts and fault budgets come from it).
    pub plan: FaultPlan,
    /// Exactly this many clients (shrinking may still go below); None: 1 to 4.
    pub clients: Option<u32>,
    /// Server nodes sharing a store and a bus; None: one server (two or three nodes for a
    /// cluster strategy).
    pub nodes: Option<u8>,
    /// Worlds about the tool list alone, the simulator's twin of the model's list-refresh
    /// worlds (`listsync_model::configs::list_refresh`): clients keep the tools list only, no
    /// item is scoped to an authorization context, no context switches, no tools preloaded, no
    /// approvals asked, one server per application. A
    /// client machine written outside listsync that keeps only the tool list is simulated so
    /// (docs/library.md).
    pub tools_only: bool,
}

impl Params {
    /// The tool-list worlds of `plan` ([`Params::tools_only`]), against listsync's reference
    /// server, with one to four clients: what a client machine written outside listsync that
    /// keeps the tool list is simulated in (docs/library.md).
    pub fn tools_only(plan: FaultPlan) -> Params {
        Params {
            strategies: Strategies::REFERENCE,
            plan,
            clients: None,
            nodes: None,
            tools_only: true,
        }
    }
}

/// The knobs of a run, each shrinking toward its floor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Shape {
    /// The run's seed (never shrunk): scenario contents and schedule are drawn from it.
    pub seed: u64,
    /// Clients.
    pub clients: u32,
    /// Scripted batches.
    pub batches: u32,
    /// Most ops in one batch.
    pub ops: u32,
    /// Items in the initial catalog.
    pub initial: u32,
    /// Items per page (0: one page).
    pub page_size: u32,
    /// Lists kept: 1 tools; 2 tools and prompts; 3 also resources.
    pub kinds: u32,
    /// Whether some items are scoped to authorization context 1.
    pub scoped: bool,
    /// Scripted tool calls.
    pub calls: u32,
    /// Scripted authorization switches.
    pub auth_changes: u32,
    /// Budget of duplicated notifications.
    pub dups: u32,
    /// Budget of lost notifications.
    pub drops: u32,
    /// Connections cut at random moments.
    pub disconnects: u32,
    /// Server crashes.
    pub crashes: u32,
    /// Whether some messages are slow.
    pub slow: bool,
    /// 2026-07-28 instead of 2025-11-25.
    pub era26: bool,
    /// Streamable HTTP instead of stdio (always with 2026-07-28).
    pub http: bool,
    /// Server nodes (1: one server, no store or bus).
    pub nodes: u32,
    /// (cluster) Budget of duplicated and of lost bus events.
    pub bus_faults: u32,
    /// (cluster) Client connections moved to another node.
    pub migrations: u32,
}

/// Knob order, generation range and floor.
const KNOBS: usize = 19;

impl Shape {
    fn from_knobs(seed: u64, k: &[u32; KNOBS]) -> Shape {
        let era26 = k[14] == 1;
        Shape {
            seed,
            clients: k[0],
            batches: k[1],
            ops: k[2],
            initial: k[3],
            page_size: k[4],
            kinds: k[5],
            scoped: k[6] == 1,
            calls: k[7],
            auth_changes: k[8],
            dups: k[9],
            drops: k[10],
            disconnects: k[11],
            crashes: k[12],
            slow: k[13] == 1,
            era26,
            http: era26 || k[15] == 1,
            nodes: k[16],
            bus_faults: k[17],
            migrations: k[18],
        }
    }

    /// Generation range and shrink floor of every knob.
    fn ranges(p: &Params) -> [(u32, u32, u32); KNOBS] {
        let plan = &p.plan;
        let (clo, chi) = p.clients.map_or((1, 4), |c| (c, c));
        let cluster_strategy = p.strategies.server == ServerStrategy::ClusterNotifyBeforeVisible;
        let nodes = match p.nodes {
            Some(n) => (
                u32::from(n),
                u32::from(n),
                if cluster_strategy { 2 } else { 1 },
            ),
            None if cluster_strategy => (2, 3, 2),
            None => (1, 1, 1),
        };
        let era = if p.strategies.client == ClientStrategy::ListenWithoutRelist {
            (1, 1, 1)
        } else {
            (0, 1, 0)
        };
        // Tools only: one kind, no scoped items, no authorization switches.
        let (kinds, scoped, auth) = if p.tools_only {
            ((1, 1, 1), (0, 0, 0), (0, 0, 0))
        } else {
            ((1, 3, 1), (0, 1, 0), (0, 2, 0))
        };
        [
            (clo, chi, 1),
            (*plan.batches.start(), *plan.batches.end(), 0),
            (1, 3, 1),
            (1, 6, 0),
            (0, 3, 0),
            kinds,
            scoped,
            (0, 3, 0),
            auth,
            (0, plan.max_dup, 0),
            (0, plan.max_drop, 0),
            (0, plan.max_disconnects, 0),
            (0, plan.max_crashes, 0),
            (
                u32::from(plan.slow_permille > 0),
                u32::from(plan.slow_permille > 0),
                0,
            ),
            era,
            (0, 1, 0),
            nodes,
            (0, plan.max_bus_faults, 0),
            (0, plan.max_migrations, 0),
        ]
    }

    /// The shape a seed draws (the same for the same seed and parameters).
    pub fn draw(seed: u64, p: &Params) -> ShapeTree {
        let mut runner = runner_for(seed);
        ShapeStrategy { params: p.clone() }
            .new_tree(&mut runner)
            .expect("shape generation never rejects")
            .with_seed(seed)
    }
}

/// A proptest runner whose randomness is a function of `seed` alone.
fn runner_for(seed: u64) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..16].copy_from_slice(b"listsync");
    TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

/// The proptest strategy of run shapes.
#[derive(Clone, Debug)]
pub struct ShapeStrategy {
    /// What may vary.
    pub params: Params,
}

impl Strategy for ShapeStrategy {
    type Tree = ShapeTree;
    type Value = Shape;

    fn new_tree(&self, runner: &mut TestRunner) -> NewTree<Self> {
        let ranges = Shape::ranges(&self.params);
        let rng = runner.rng();
        let seed: u64 = rng.random();
        let knobs = ranges
            .iter()
            .map(|&(lo, hi, floor)| {
                let start = rng.random_range(lo..=hi.max(lo));
                BinarySearch::new_above(floor.min(start), start)
            })
            .collect();
        Ok(ShapeTree {
            seed,
            knobs,
            shrinker: 0,
            prev: None,
        })
    }
}

/// A shape with its shrinking state: each knob is a binary search toward its floor; knobs are
/// shrunk one after the other, like proptest's tuples.
#[derive(Clone, Debug)]
pub struct ShapeTree {
    seed: u64,
    knobs: Vec<BinarySearch>,
    shrinker: usize,
    prev: Option<usize>,
}

impl ShapeTree {
    fn with_seed(mut self, seed: u64) -> ShapeTree {
        self.seed = seed;
        self
    }
}

impl ValueTree for ShapeTree {
    type Value = Shape;

    fn current(&self) -> Shape {
        let mut k = [0u32; KNOBS];
        for (slot, knob) in k.iter_mut().zip(&self.knobs) {
            *slot = knob.current();
        }
        Shape::from_knobs(self.seed, &k)
    }

    fn simplify(&mut self) -> bool {
        while self.shrinker < self.knobs.len() {
            if self.knobs[self.shrinker].simplify() {
                self.prev = Some(self.shrinker);
                return true;
            }
            self.shrinker += 1;
        }
        false
    }

    fn complicate(&mut self) -> bool {
        match self.prev {
            Some(i) if self.knobs[i].complicate() => true,
            _ => {
                self.prev = None;
                false
            }
        }
    }
}

/// A seeded random stream for one purpose.
pub fn stream(seed: u64, purpose: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(purpose);
    r
}

/// A time drawn uniformly from `lo..=hi` (`lo` when the range is empty).
pub fn uniform(r: &mut ChaCha8Rng, (lo, hi): (Micros, Micros)) -> Micros {
    if hi <= lo {
        lo
    } else {
        r.random_range(lo..=hi)
    }
}

/// True with probability `permille` / 1000.
pub fn roll(r: &mut ChaCha8Rng, permille: u32) -> bool {
    permille > 0 && r.random_range(0..1000) < permille
}

/// Stream ids (one per purpose).
pub mod streams {
    /// Initial catalog.
    pub const INITIAL: u64 = 1;
    /// Scripted batches.
    pub const SCRIPT: u64 = 2;
    /// Clients.
    pub const CLIENTS: u64 = 3;
    /// Tool calls.
    pub const CALLS: u64 = 4;
    /// Authorization switches.
    pub const AUTH: u64 = 5;
    /// Which scripted batches are rebuilds.
    pub const REBUILD: u64 = 6;
    /// Which tool calls fail with an internal error.
    pub const CALL_FAIL: u64 = 7;
    /// Which called tools the application preloads.
    pub const KNOWN: u64 = 8;
    /// Which applications ask for approvals, and which called tools the users approve.
    pub const APPROVALS: u64 = 9;
    /// The environment's timing (batches, calls, cuts, crashes).
    pub const ENV: u64 = 10;
    /// The network (latency, reordering, duplication, loss).
    pub const NET: u64 = 11;
    /// (stack level) The run's network fault budgets.
    pub const STACK: u64 = 12;
    /// (stack level) One connection's network draws.
    pub const LINKS: u64 = 13;
    /// (stack level) How long a staged commit waits after its notifications went out.
    pub const COMMITS: u64 = 14;
    /// Which runs are one application connected to every server (same-name servers).
    pub const AGGREGATE: u64 = 15;
}

const POOL: usize = 6;
/// The item a rebuild batch registers and takes away again (outside the name pool).
const REBUILT: &str = "rebuilt";

fn pool_name(kind: Kind, i: usize) -> String {
    match kind {
        Kind::Tools => format!("t{i}"),
        Kind::Prompts => format!("p{i}"),
        Kind::Resources => format!("file:///r{i}"),
        Kind::ResourceTemplates => format!("file:///tpl{i}/{{x}}"),
    }
}

/// The pool's names, each made once per scenario and shared by every op that names it.
#[derive(Default)]
struct Pool([[Option<Name>; POOL]; Kind::ALL.len()]);

impl Pool {
    fn name(&mut self, kind: Kind, i: usize) -> Name {
        self.0[kind as usize][i]
            .get_or_insert_with(|| pool_name(kind, i).into())
            .clone()
    }
}

fn tracked(kinds: u32) -> Vec<Kind> {
    [Kind::Tools, Kind::Prompts, Kind::Resources]
        .into_iter()
        .take(kinds.clamp(1, 3) as usize)
        .collect()
}

fn scope(scoped: bool, r: &mut ChaCha8Rng) -> Scope {
    if scoped && r.random_ratio(1, 4) {
        Scope::Only(AuthCtx(1))
    } else {
        Scope::Public
    }
}

/// The scenario of a shape, with the given strategies. Fault budgets are the shape's: the
/// simulator never uses more.
pub fn scenario(shape: &Shape, strategies: Strategies, plan: &FaultPlan) -> Scenario {
    let era = if shape.era26 {
        Era::V2026_07_28
    } else {
        Era::V2025_11_25
    };
    let kinds = tracked(shape.kinds);
    let seed = shape.seed;
    let mut pool = Pool::default();

    let mut r = stream(seed, streams::INITIAL);
    let initial: Vec<Op> = (0..shape.initial)
        .map(|_| {
            let kind = kinds[r.random_range(0..kinds.len())];
            let name = pool.name(kind, r.random_range(0..POOL));
            Op::Add {
                kind,
                def: format!("{name}.0").into(),
                name,
                scope: scope(shape.scoped, &mut r),
            }
        })
        .collect();

    let mut r = stream(seed, streams::SCRIPT);
    let script: Vec<Vec<Op>> = (0..shape.batches)
        .map(|b| {
            let n = r.random_range(1..=shape.ops.max(1));
            (0..n)
                .map(|i| {
                    let kind = kinds[r.random_range(0..kinds.len())];
                    let name = pool.name(kind, r.random_range(0..POOL));
                    let roll = r.random_range(0..10);
                    if kind == Kind::Resources && roll == 9 {
                        return Op::SetContent {
                            uri: name,
                            text: format!("c{b}.{i}").into(),
                        };
                    }
                    match roll {
                        0..=3 => Op::Add {
                            kind,
                            def: format!("{name}.{}", b + 1).into(),
                            name,
                            scope: scope(shape.scoped, &mut r),
                        },
                        4..=6 => Op::Remove { kind, name },
                        _ => Op::Update {
                            kind,
                            def: format!("{name}.{}u", b + 1).into(),
                            name,
                        },
                    }
                })
                .collect()
        })
        .collect();
    // Rebuilds (drawn apart, so the other batches stay what the seed made them): a batch that
    // registers an item and takes it away again leaves every list as it was.
    let mut r = stream(seed, streams::REBUILD);
    let script: Vec<Vec<Op>> = script
        .into_iter()
        .map(|ops| {
            if r.random_ratio(plan.rebuild_permille, 1000) {
                vec![
                    Op::add(kinds[0], REBUILT, "rebuilt"),
                    Op::remove(kinds[0], REBUILT),
                ]
            } else {
                ops
            }
        })
        .collect();

    let mut r = stream(seed, streams::CLIENTS);
    let kind_set: KindSet = kinds.iter().copied().collect();
    let mut clients: Vec<ClientConfig> = (0..shape.clients)
        .map(|_| {
            let watch: Vec<Name> = if kind_set.contains(Kind::Resources) && r.random_ratio(1, 2) {
                vec![pool.name(Kind::Resources, r.random_range(0..POOL))]
            } else {
                Vec::new()
            };
            ClientConfig {
                strategy: strategies.client,
                era,
                kinds: kind_set,
                auth: AuthCtx(u8::from(shape.scoped && r.random_ratio(1, 3))),
                watch,
                limits: Limits::default(),
                pacing: Pacing::default(),
                calls_by_name: false,
                known: Vec::new(),
                ask_approval: false,
            }
        })
        .collect();

    let n = shape.clients.max(1);
    let mut r = stream(seed, streams::CALLS);
    let calls: Vec<(ClientId, Name)> = (0..shape.calls)
        .map(|_| {
            let c = r.random_range(0..n);
            (c, pool.name(Kind::Tools, r.random_range(0..POOL)))
        })
        .collect();
    // The application preloads half of the tools it calls ("known tools"): the router may call
    // them before the first list, and must let the server's list decide after it.
    let mut r = stream(seed, streams::KNOWN);
    for (c, name) in &calls {
        if let Some(client) = clients.get_mut(*c as usize)
            && !client.known.contains(name)
            && r.random_ratio(1, 2)
        {
            client.known.push(name.clone());
        }
    }

    // A quarter of the applications ask their users to approve tools with side effects (every
    // one, when the approval gate is the strategy under test), and a user approves most of the
    // tools the application will call (as listed at that moment).
    let mut r = stream(seed, streams::APPROVALS);
    let gated = strategies.client == ClientStrategy::ApprovalByName;
    for c in clients.iter_mut() {
        c.ask_approval = r.random_ratio(1, 4) || gated;
    }
    let approvals: Vec<(ClientId, Name)> = calls
        .iter()
        .filter(|(c, _)| clients.get(*c as usize).is_some_and(|c| c.ask_approval))
        .filter(|_| r.random_ratio(3, 4))
        .cloned()
        .collect();

    // Same-name servers: in a quarter of the runs with two to 16 clients (every such run when
    // the prefixing is the strategy under test), the clients are one application's connections
    // to as many servers, all reporting serverInfo.name "files"; the application asks no
    // approvals and also makes the scripted calls' number of calls through its combined listing.
    let mut r = stream(seed, streams::AGGREGATE);
    let together = (2..=MAX_MEMBERS).contains(&clients.len())
        && (r.random_ratio(1, 4) || strategies.client == ClientStrategy::PrefixFromServerInfo);
    let (approvals, aggregate) = if together {
        for c in clients.iter_mut() {
            c.ask_approval = false;
        }
        let members = (0..clients.len())
            .map(|i| Member {
                key: format!("s{i}"),
                server_name: "files".into(),
            })
            .collect();
        let calls = (calls.len().max(1)).min(usize::from(u8::MAX)) as u8;
        (Vec::new(), Some(Aggregate { members, calls }))
    } else {
        (approvals, None)
    };

    let mut r = stream(seed, streams::AUTH);
    let auth_changes: Vec<(ClientId, AuthCtx)> = (0..shape.auth_changes)
        .map(|_| (r.random_range(0..n), AuthCtx(r.random_range(0..=1))))
        .collect();

    let breaks = if plan.silent_drops { 0 } else { shape.drops };
    Scenario {
        name: format!("sim-{}-seed{}", strategies.label(), shape.seed),
        era,
        transport: if shape.http {
            Transport::Http
        } else {
            Transport::Stdio
        },
        server: ServerConfig {
            strategy: strategies.server,
            era,
            page_size: shape.page_size as u16,
            ttl_ms: shape.era26.then_some(5_000),
            ..ServerConfig::default()
        },
        initial,
        clients,
        script,
        auth_changes,
        calls,
        approvals,
        faults: Faults {
            duplicate: shape.dups,
            drop: if plan.silent_drops { shape.drops } else { 0 },
            disconnect: shape.disconnects + breaks + shape.crashes * shape.clients,
            call_error: if plan.call_fail_permille > 0 {
                shape.calls
            } else {
                0
            },
            list_error: 0,
        },
        cluster: (shape.nodes > 1).then(|| Cluster {
            nodes: shape.nodes.min(16) as u8,
            bus_duplicate: shape.bus_faults,
            bus_drop: shape.bus_faults,
            migrate: shape.migrations,
            ..Cluster::default()
        }),
        aggregate,
    }
}

/// The fields of a scenario the generator leaves at their defaults.
fn scenario_defaults() -> Scenario {
    Scenario {
        name: String::new(),
        era: Era::V2025_11_25,
        transport: Transport::Stdio,
        server: ServerConfig::default(),
        initial: Vec::new(),
        clients: Vec::new(),
        script: Vec::new(),
        auth_changes: Vec::new(),
        calls: Vec::new(),
        approvals: Vec::new(),
        faults: Faults::default(),
        cluster: None,
        aggregate: None,
    }
}

/// The most batches a machine-level burst uses: the world numbers batches with a `u8`, as the
/// trace format does, and counts the next one in a `u8` too, so a script stays below 256.
pub const MAX_BATCHES: usize = 250;

/// A scale scenario: `clients` reference-style clients of the tools list on one server, ten
/// initial tools, and a burst of `burst` mutations (adds and updates) applied back to back
/// once every client has listed. The mutations go in at most `max_batches` batches: one
/// mutation per batch when `burst <= max_batches`, else spread evenly (a batch of mutations is
/// committed, and announced, as one change).
pub fn burst(
    clients: u32,
    burst: u32,
    max_batches: usize,
    nodes: u8,
    strategies: Strategies,
    http: bool,
) -> Scenario {
    let era = Era::V2025_11_25;
    let initial: Vec<Op> = (0..10)
        .map(|i| Op::add(Kind::Tools, &format!("t{i}"), &format!("t{i}.0")))
        .collect();
    let batches = (burst as usize).min(max_batches.max(1));
    let mut script: Vec<Vec<Op>> = vec![Vec::new(); batches];
    for m in 0..burst {
        let name = format!("t{}", m % 20);
        script[m as usize * batches / burst as usize].push(Op::Add {
            kind: Kind::Tools,
            def: format!("{name}.{}", m + 1).into(),
            name: name.into(),
            scope: Scope::Public,
        });
    }
    Scenario {
        name: format!("burst-{clients}c-{burst}m-{nodes}n-{}", strategies.label()),
        era,
        transport: if http {
            Transport::Http
        } else {
            Transport::Stdio
        },
        server: ServerConfig {
            strategy: strategies.server,
            era,
            page_size: 0,
            ttl_ms: None,
            ..ServerConfig::default()
        },
        initial,
        clients: vec![ClientConfig::tools(strategies.client, era); clients as usize],
        script,
        cluster: (nodes > 1).then(|| Cluster {
            nodes,
            ..Cluster::default()
        }),
        ..scenario_defaults()
    }
}
