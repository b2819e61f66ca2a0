//! ATen lowering rules: one table mapping PyTorch op names to small Rust functions that
//! emit StableHLO through `tpurs_hlo::Builder`.
//!
//! This crate knows PyTorch's semantics (type promotion, broadcasting, strides) but nothing
//! about PJRT buffers or torch's C++ types: the runtime describes each call with plain
//! metadata ([`OpCall`]) and gets back a program plus where its parameters come from and
//! where its results go ([`Lowered`]).

mod call;
pub mod dtype;
mod error;
mod rules;
mod table;
mod view;

pub use call::{lower, lower_into, LoweredOp, ParamProvider};
pub use call::{
    Arg, Ctx, Lowered, OpCall, Out, OutputSpec, ParamSource, ResultSink, ReturnSpec, ScalarMeta,
    StorageMeta, TensorMeta, WriteTarget,
};
pub use error::{Error, Result};
pub use table::{lookup, op_entry, op_names, OpEntry, OpId};
pub use view::is_contiguous;
