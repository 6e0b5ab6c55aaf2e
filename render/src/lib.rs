//! listsync-render: turns what listsync's instruments wrote (the model checker's, the
//! simulator's, the harness's and the benches' JSON, and counterexample traces) into the pages
//! under `reports/` that people read: Markdown tables, sequence diagrams of every counterexample
//! (SVG), and bench plots (SVG). `listsync report` drives it; nothing here runs an instrument.
//!
//! * [`diagram`]: a trace as a sequence diagram;
//! * [`pages`]: every page under `reports/`, regenerated from the tools' outputs;
//! * [`model_check`], [`sim`], [`conformance`], [`bench_page`]: the Markdown pages
//!   ([`bench_refresh`]: the refresh-contention frontier; [`bench_cluster`]: the cluster
//!   bench's section of the bench page; [`bench_sim`]: the simulator's);
//! * [`bench`]: the bench figures file the benches write and the report reads;
//! * [`plot`]: the bench plots;
//! * [`mutants`]: the mutation report (a cargo-mutants run, imported);
//! * [`properties`]: the page every property and scenario header links to;
//! * [`hosts`]: the verdict table of the hosts page (`listsync host --report`);
//! * [`junit`]: JUnit XML of a command's run, for CI (`--junit FILE`);
//! * [`md`], [`svg`]: helpers.

pub mod bench;
pub mod bench_cluster;
pub mod bench_page;
pub mod bench_refresh;
pub mod bench_sim;
pub mod conformance;
pub mod conformance_suite;
pub mod diagram;
pub mod hosts;
pub mod junit;
pub mod md;
pub mod model_check;
pub mod mutants;
pub mod pages;
pub mod plot;
pub mod properties;
pub mod reduction_table;
pub mod sim;
pub mod strategy_table;
pub mod svg;
pub mod timings;
