//! Decodes the graphs `tpurs.compile` describes (ATen nodes of an FX graph) into the graph
//! driver's types.
//!
//! A node argument arrives as `None` or a `(tag, payload)` pair: `("t", value)` a tensor
//! value of the graph, `("o", k)` the node's `k`-th output passed as an `out=` argument, `("s", (dtype, number))` a number, `("i" | "f" | "b" | "str" | "dt",
//! x)` an int, float, bool, string or dtype code, `("il" | "fl" | "bl", [..])` lists of those,
//! and `("l", [args])` a tensor list.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tpurs_hlo::{DType, Literal, Precision};
use tpurs_ops::dtype::from_scalar_type;
use tpurs_ops::graph::{Graph, Node, NodeArg, NodeRef};
use tpurs_ops::{Arg, ScalarMeta, TensorArg, WriteTarget};

pub(crate) fn dtype(code: i32) -> PyResult<DType> {
    from_scalar_type(code)
        .ok_or_else(|| PyValueError::new_err(format!("tpurs: unsupported dtype code {code}")))
}

fn decode(a: &Bound<'_, PyAny>) -> PyResult<NodeArg> {
    if a.is_none() {
        return Ok(Arg::None);
    }
    let (tag, payload): (String, Bound<'_, PyAny>) = a.extract()?;
    Ok(match tag.as_str() {
        "t" => Arg::Tensor(NodeRef::Value(payload.extract()?)),
        "o" => Arg::Tensor(NodeRef::Out(payload.extract()?)),
        "s" => {
            let (code, value): (i32, Bound<'_, PyAny>) = payload.extract()?;
            let dtype = dtype(code)?;
            let value = if dtype.is_float() {
                Literal::Float(value.extract()?)
            } else if dtype == DType::Bool {
                Literal::Bool(value.extract()?)
            } else {
                Literal::Int(value.extract()?)
            };
            Arg::Scalar(ScalarMeta {
                dtype,
                wrapped: true,
                value,
            })
        }
        "i" => Arg::Int(payload.extract()?),
        "f" => Arg::Float(payload.extract()?),
        "b" => Arg::Bool(payload.extract()?),
        "str" => Arg::Str(payload.extract()?),
        "dt" => Arg::Dtype(dtype(payload.extract()?)?),
        "il" => Arg::IntList(payload.extract()?),
        "fl" => Arg::FloatList(payload.extract()?),
        "bl" => Arg::BoolList(payload.extract()?),
        "l" => {
            let items: Vec<Bound<'_, PyAny>> = payload.extract()?;
            Arg::List(items.iter().map(decode).collect::<PyResult<_>>()?)
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "tpurs: unknown graph argument tag {other:?}"
            )))
        }
    })
}

fn tensor_types(types: Vec<(i32, Vec<i64>)>) -> PyResult<Vec<TensorArg>> {
    types
        .into_iter()
        .map(|(code, sizes)| {
            Ok(TensorArg {
                dtype: dtype(code)?,
                sizes,
            })
        })
        .collect()
}

/// A node as Python describes it: op name, arguments, number of results, written
/// arguments `(arg, item or -1, is_out)` and the types of its `out=` placeholders.
pub(crate) type NodeDesc<'py> = (
    String,
    Vec<Bound<'py, PyAny>>,
    usize,
    Vec<(usize, i64, bool)>,
    Vec<(i32, Vec<i64>)>,
);

/// Builds a graph from its Python description.
pub(crate) fn decode_graph(
    inputs: Vec<(i32, Vec<i64>)>,
    nodes: Vec<NodeDesc<'_>>,
    outputs: Vec<usize>,
    strided: Vec<usize>,
    default_dtype: i32,
    precision: &str,
) -> PyResult<Graph> {
    let inputs = tensor_types(inputs)?;
    let nodes = nodes
        .into_iter()
        .map(|(name, args, num_results, writes, outs)| {
            let op = tpurs_ops::lookup(&name).ok_or_else(|| {
                PyValueError::new_err(format!("tpurs: no lowering rule for {name}"))
            })?;
            Ok(Node {
                op,
                args: args.iter().map(decode).collect::<PyResult<_>>()?,
                num_results,
                writes: writes
                    .into_iter()
                    .map(|(arg, item, is_out)| WriteTarget {
                        arg,
                        item: usize::try_from(item).ok(),
                        is_out,
                    })
                    .collect(),
                outs: tensor_types(outs)?,
            })
        })
        .collect::<PyResult<_>>()?;
    Ok(Graph {
        inputs,
        nodes,
        outputs,
        strided,
        default_float: dtype(default_dtype)?,
        precision: match precision {
            "highest" => Precision::Highest,
            "high" => Precision::High,
            "medium" => Precision::Default,
            other => {
                return Err(PyValueError::new_err(format!(
                    "tpurs: unknown float32 matmul precision {other:?}"
                )))
            }
        },
    })
}
