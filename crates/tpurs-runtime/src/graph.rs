//! Graphs from the `torch.compile` backend: registered once per compile, then run as the
//! table op `tpurs::graph` through the same plan cache and launch as eager ops.

use crate::error::Result;
use crate::metrics::{bump, metrics};

/// Registers a graph for `tpurs::graph` and counts it as a graph compile; returns its id
/// and its program text.
pub fn register_graph(graph: tpurs_ops::graph::Graph) -> Result<(i64, String)> {
    let registered = tpurs_ops::graph::register_graph(graph)?;
    bump(&metrics().graph_compiles, 1);
    Ok(registered)
}
