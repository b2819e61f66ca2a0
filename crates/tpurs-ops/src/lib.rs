//! ATen lowering rules: one table mapping PyTorch op names to small Rust functions that
//! emit StableHLO through `tpurs_hlo::Builder`.
//!
//! This crate knows PyTorch's semantics (type promotion, broadcasting, strides) but nothing
//! about PJRT buffers or torch's C++ types. Rules see typed values through the rule API
//! ([`Ctx`]); two drivers feed them: the eager driver ([`lower`], [`lower_into`]) turns one
//! call over strided views of storages into a program, and the graph driver
//! ([`graph::register_graph`]) turns a list of ATen nodes into one program.

pub mod checks;
mod ctx;
pub mod dtype;
mod eager;
mod error;
pub mod external;
pub mod graph;
mod rules;
mod table;
mod view;

pub use ctx::{Arg, Ctx, Inputs, Out, ScalarMeta, TensorArg, WriteTarget};
pub use eager::{lower, lower_into, LoweredOp, ParamProvider};
pub use eager::{
    EagerArg, Lowered, OpCall, OutputSpec, ParamSource, ResultSink, ReturnSpec, StorageMeta,
    TensorMeta,
};
pub use error::{Error, Result};
pub use table::{lookup, op_entry, op_names, OpEntry, OpId};
pub use view::is_contiguous;
