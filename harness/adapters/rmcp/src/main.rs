//! `listsync-rmcp-adapter`: the rmcp adapter as a program of its own (the harness runs the same
//! code as `listsync adapter rmcp`).

fn main() {
    std::process::exit(listsync_rmcp_adapter::run());
}
