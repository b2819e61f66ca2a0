//! The graph driver: a list of ATen nodes over symbolic values (an FX graph after
//! aot_autograd) becomes one StableHLO function, each node lowered by the same table rule
//! the eager driver uses.
//!
//! A registered graph runs as one table op, `tpurs::graph(int id, Tensor[] inputs) ->
//! Tensor[]`: the eager driver reads the inputs through their views, this driver lowers the
//! nodes between them, and the runtime's plan cache, fused batches and launch serve it like
//! any other op, so one call is one program launch with no per-node work.

use std::sync::{Arc, RwLock};

use tpurs_hlo::{Builder, DType, Precision, Value};

use crate::checks::Check;
use crate::ctx::{Arg, Ctx, Inputs, Out, ScalarMeta, TensorArg, WriteTarget};
use crate::error::{runtime, Error, Result};
use crate::table::{op_entry, OpId, Registry};

/// What a tensor argument of a node names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeRef {
    /// A value of the graph (inputs first, then node results in order).
    Value(usize),
    /// The `k`-th fresh output of this node, passed as an `out=` argument.
    Out(usize),
}

/// A node argument.
pub type NodeArg = Arg<NodeRef>;

/// One ATen call of a graph. A functional op whose rule is registered only for its `out=`
/// or in-place variant calls that variant: `writes` names the arguments it writes (the
/// `Out` placeholders typed by `outs`, or `self`), and the written values are the node's
/// results.
#[derive(Clone, Debug)]
pub struct Node {
    /// The op.
    pub op: OpId,
    /// Arguments in the op's schema order, defaults filled in.
    pub args: Vec<NodeArg>,
    /// How many values the node defines: the rule's results, a `Tensor[]` return flattened.
    pub num_results: usize,
    /// The arguments the variant writes (empty for a functional rule).
    pub writes: Vec<WriteTarget>,
    /// Types of the `Out` placeholders.
    pub outs: Vec<TensorArg>,
}

/// A graph: typed inputs, nodes, and the values it returns.
#[derive(Clone, Debug)]
pub struct Graph {
    /// Types of the graph inputs.
    pub inputs: Vec<TensorArg>,
    /// Nodes in execution order.
    pub nodes: Vec<Node>,
    /// The values returned, by index.
    pub outputs: Vec<usize>,
    /// The values eager PyTorch holds in a non-contiguous layout (see
    /// [`Inputs::is_contiguous`]).
    pub strided: Vec<usize>,
    /// `torch.get_default_dtype()` when the graph was traced.
    pub default_float: DType,
    /// `torch.get_float32_matmul_precision()` when the graph was traced.
    pub precision: Precision,
}

fn graphs() -> &'static RwLock<Vec<Arc<Graph>>> {
    static GRAPHS: RwLock<Vec<Arc<Graph>>> = RwLock::new(Vec::new());
    &GRAPHS
}

/// Checks `graph` by lowering it once, stores it and returns its id and the program text
/// of the graph on its own (for dumps).
pub fn register_graph(graph: Graph) -> Result<(i64, String)> {
    let mut b = Builder::new();
    let inputs: Vec<Value> = graph.inputs.iter().map(|t| b.param(t.ty())).collect();
    let mut rng = None;
    let mut fresh_rng = FreshRng;
    let (b, outs, _) = lower_graph(b, &graph, inputs, &mut fresh_rng, &mut rng)?;
    let mlir = b.finish(&outs);
    let mut all = graphs().write().unwrap_or_else(|e| e.into_inner());
    all.push(Arc::new(graph));
    Ok((all.len() as i64 - 1, mlir))
}

fn graph_by_id(id: i64) -> Result<Arc<Graph>> {
    let all = graphs().read().unwrap_or_else(|e| e.into_inner());
    usize::try_from(id)
        .ok()
        .and_then(|i| all.get(i).cloned())
        .ok_or_else(|| Error::Runtime(format!("tpurs: no compiled graph with id {id}")))
}

/// Generator state for a graph lowered on its own (registration check).
struct FreshRng;

impl Inputs for FreshRng {
    fn tensor(&mut self, _: &mut Builder, arg: usize, _: Option<usize>) -> Result<Value> {
        runtime(format!("graph input {arg} read outside a graph"))
    }

    fn scalar(&mut self, b: &mut Builder, _: usize, _: Option<usize>, s: &ScalarMeta) -> Value {
        b.constant(s.value, s.dtype)
    }

    fn rng_state(&mut self, b: &mut Builder) -> Value {
        b.param(tpurs_hlo::TensorType::new(DType::U64, [2]))
    }
}

/// Feeds one node's rule from the values computed so far.
struct NodeInputs<'a> {
    args: &'a [NodeArg],
    env: &'a [Option<Value>],
    strided: &'a [usize],
    outer: &'a mut dyn Inputs,
}

impl Inputs for NodeInputs<'_> {
    fn tensor(&mut self, _: &mut Builder, arg: usize, item: Option<usize>) -> Result<Value> {
        match self.args.get(arg).map(|a| a.item(item)) {
            Some(Arg::Tensor(NodeRef::Value(v))) => self.env[*v]
                .clone()
                .ok_or_else(|| Error::Runtime(format!("graph value {v} is undefined"))),
            Some(Arg::Tensor(NodeRef::Out(k))) => {
                runtime(format!("graph node reads its output {k} before writing it"))
            }
            _ => runtime(format!("graph node argument {arg} is not a tensor")),
        }
    }

    // Numbers in a graph are constants of the traced program.
    fn scalar(&mut self, b: &mut Builder, _: usize, _: Option<usize>, s: &ScalarMeta) -> Value {
        b.constant(s.value, s.dtype)
    }

    fn rng_state(&mut self, b: &mut Builder) -> Value {
        self.outer.rng_state(b)
    }

    fn is_contiguous(&self, arg: usize) -> bool {
        match self.args.get(arg) {
            Some(Arg::Tensor(NodeRef::Value(v))) => !self.strided.contains(v),
            _ => true,
        }
    }
}

/// What lowering a graph gives: the builder, the graph's outputs and the nodes' device-side
/// checks.
type LoweredGraph = (Builder, Vec<Value>, Vec<(Value, Check)>);

/// Lowers the nodes of `graph` into `b` over `inputs`; random ops continue the generator
/// state `rng` (drawn from `outer` at first use).
fn lower_graph(
    mut b: Builder,
    graph: &Graph,
    inputs: Vec<Value>,
    outer: &mut dyn Inputs,
    rng: &mut Option<Value>,
) -> Result<LoweredGraph> {
    b.set_precision(graph.precision);
    if inputs.len() != graph.inputs.len() {
        return runtime(format!(
            "tpurs graph: expected {} inputs, got {}",
            graph.inputs.len(),
            inputs.len()
        ));
    }
    for (i, (v, t)) in inputs.iter().zip(&graph.inputs).enumerate() {
        if v.dtype() != t.dtype || v.shape() != t.sizes.as_slice() {
            return runtime(format!(
                "tpurs graph: input {i} is {:?}{:?}, the graph was compiled for {:?}{:?}",
                v.dtype(),
                v.shape(),
                t.dtype,
                t.sizes
            ));
        }
    }
    let mut env: Vec<Option<Value>> = inputs.into_iter().map(Some).collect();
    let mut checks = Vec::new();
    for node in &graph.nodes {
        let entry = op_entry(node.op);
        let types = |r: &NodeRef| -> TensorArg {
            let ty = match *r {
                NodeRef::Value(v) => env.get(v).and_then(|x| x.as_ref()).map(|x| TensorArg {
                    dtype: x.dtype(),
                    sizes: x.shape().to_vec(),
                }),
                NodeRef::Out(k) => node.outs.get(k).cloned(),
            };
            ty.unwrap_or(TensorArg {
                dtype: DType::F32,
                sizes: vec![],
            })
        };
        check_refs(&node.args, env.len(), node.outs.len(), entry.name)?;
        let args: Vec<Arg> = node.args.iter().map(|a| a.map_tensors(&types)).collect();
        // Host numbers carry no imaginary part here: a complex one is refused by every rule.
        if args.iter().any(|a| has_complex(a, true))
            || (!entry.complex && args.iter().any(|a| has_complex(a, false)))
        {
            return Err(crate::Error::Uncovered(format!(
                "tpurs: {} has no lowering for complex values",
                entry.name
            )));
        }
        let mut feed = NodeInputs {
            args: &node.args,
            env: &env,
            strided: &graph.strided,
            outer: &mut *outer,
        };
        let ctx = Ctx::new(
            b,
            entry.name,
            &args,
            &node.writes,
            graph.default_float,
            &mut feed,
        )
        .with_rng(rng.take());
        let (results, ctx) = run_rule(ctx, entry.rule)?;
        let done = ctx.finish();
        let (mut next, written) = (done.b, done.written);
        *rng = done.rng;
        // A node's arguments are not the graph call's, so the host cannot answer its checks.
        checks.extend(
            done.checks
                .into_iter()
                .map(|(v, c)| (v, Check { host: None, ..c })),
        );
        let results = if node.writes.is_empty() {
            results
        } else {
            written_results(&mut next, node, &args, results, written)?
        };
        b = next;
        if results.len() != node.num_results {
            return runtime(format!(
                "tpurs graph: {} gave {} results, the graph expects {}",
                entry.name,
                results.len(),
                node.num_results
            ));
        }
        env.extend(results);
    }
    let outs = graph
        .outputs
        .iter()
        .map(|&v| {
            env.get(v)
                .cloned()
                .flatten()
                .ok_or_else(|| Error::Runtime(format!("tpurs graph: output {v} is undefined")))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((b, outs, checks))
}

fn run_rule<'a>(mut ctx: Ctx<'a>, rule: crate::table::Rule) -> Result<(Vec<Out>, Ctx<'a>)> {
    let results = rule(&mut ctx)?;
    Ok((results, ctx))
}

/// The values an `out=` or in-place variant wrote: its results, converted to the written
/// arguments' types (the functional op's results).
fn written_results(
    b: &mut Builder,
    node: &Node,
    args: &[Arg],
    results: Vec<Out>,
    written: Vec<Option<Value>>,
) -> Result<Vec<Out>> {
    let mut results = results.into_iter();
    node.writes
        .iter()
        .zip(written)
        .map(|(w, v)| {
            let returned = results.next().flatten();
            let Some(v) = v.or(returned) else {
                return runtime("tpurs graph: a variant did not write its output");
            };
            let Arg::Tensor(t) = args[w.arg].item(w.item) else {
                return runtime("tpurs graph: a written argument is not a tensor");
            };
            if v.shape() != t.sizes.as_slice() {
                return runtime(format!(
                    "tpurs graph: output of shape {:?} where the graph expects {:?}",
                    v.shape(),
                    t.sizes
                ));
            }
            Ok(Some(b.convert(&v, t.dtype)))
        })
        .collect()
}

/// Every tensor argument names a value defined before the node (or one of its outputs).
fn check_refs(args: &[NodeArg], defined: usize, outs: usize, name: &str) -> Result<()> {
    for a in args {
        match a {
            Arg::Tensor(NodeRef::Value(v)) if *v >= defined => {
                return runtime(format!(
                    "tpurs graph: {name} reads value {v} before it is defined"
                ))
            }
            Arg::Tensor(NodeRef::Out(k)) if *k >= outs => {
                return runtime(format!("tpurs graph: {name} has no output {k}"))
            }
            Arg::List(items) => check_refs(items, defined, outs, name)?,
            _ => {}
        }
    }
    Ok(())
}

/// `tpurs::graph(int id, Tensor[] inputs) -> Tensor[]`: runs a registered graph. Its
/// nodes' device-side checks become the op's, read like any eager op's.
fn run_graph(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let graph = graph_by_id(ctx.int(0)?)?;
    let inputs = ctx.tensors(1)?;
    let b = std::mem::take(&mut ctx.b);
    let mut rng = ctx.rng.take();
    let (b, outs, checks) = lower_graph(b, &graph, inputs, ctx.inputs(), &mut rng)?;
    ctx.b = b;
    ctx.rng = rng;
    ctx.checks.extend(checks);
    Ok(outs.into_iter().map(Some).collect())
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["tpurs::graph"], run_graph);
}

/// True when an argument holds a complex host number (`scalars`), or else a complex tensor
/// or dtype.
fn has_complex(a: &Arg, scalars: bool) -> bool {
    match a {
        Arg::Scalar(s) => scalars && s.dtype.is_complex(),
        Arg::Tensor(t) => !scalars && t.dtype.is_complex(),
        Arg::Dtype(d) => !scalars && d.is_complex(),
        Arg::List(items) => items.iter().any(|i| has_complex(i, scalars)),
        _ => false,
    }
}
