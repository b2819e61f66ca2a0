//! Functions written outside tpurs (a JAX export, hand-written StableHLO) called as one op,
//! `tpurs::stablehlo(int id, Tensor[] inputs) -> Tensor[]`. The function's text is added to
//! the program beside `@main` and called there, so it fuses with the ops around it in fused
//! eager and in compiled graphs, and the program caches serve it like any other op.

use std::sync::{Arc, RwLock};

use tpurs_hlo::TensorType;

use crate::ctx::{Ctx, Out};
use crate::error::{Error, Result};
use crate::table::Registry;

/// A registered function: its name in the program, its `func.func` text (private, every
/// symbol it defines prefixed so that two functions never clash) and its signature.
#[derive(Debug)]
pub struct External {
    /// The symbol to call.
    pub callee: String,
    /// The definitions to add to the program (the callee and what it calls).
    pub text: String,
    /// Parameter types, in order.
    pub params: Vec<TensorType>,
    /// Result types, in order.
    pub results: Vec<TensorType>,
}

fn externals() -> &'static RwLock<Vec<Arc<External>>> {
    static EXTERNALS: RwLock<Vec<Arc<External>>> = RwLock::new(Vec::new());
    &EXTERNALS
}

/// Stores `external` and returns the id `tpurs::stablehlo` calls it by.
pub fn register_external(external: External) -> i64 {
    let mut all = externals().write().unwrap_or_else(|e| e.into_inner());
    all.push(Arc::new(external));
    all.len() as i64 - 1
}

fn external_by_id(id: i64) -> Result<Arc<External>> {
    let all = externals().read().unwrap_or_else(|e| e.into_inner());
    usize::try_from(id)
        .ok()
        .and_then(|i| all.get(i).cloned())
        .ok_or_else(|| Error::Runtime(format!("tpurs: no StableHLO function with id {id}")))
}

/// `tpurs::stablehlo(int id, Tensor[] inputs) -> Tensor[]`: calls a registered function on
/// inputs of exactly its parameter types.
fn call_external(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let f = external_by_id(ctx.int(0)?)?;
    let inputs = ctx.tensors(1)?;
    if inputs.len() != f.params.len() {
        return Err(Error::Value(format!(
            "tpurs.stablehlo: {} takes {} inputs, got {}",
            f.callee,
            f.params.len(),
            inputs.len()
        )));
    }
    for (i, (v, ty)) in inputs.iter().zip(&f.params).enumerate() {
        if v.ty != *ty {
            return Err(Error::Value(format!(
                "tpurs.stablehlo: input {i} of {} is {} where the function takes {ty}",
                f.callee, v.ty
            )));
        }
    }
    let refs: Vec<_> = inputs.iter().collect();
    let outs = ctx.b.call(&f.callee, &f.text, &refs, &f.results);
    Ok(outs.into_iter().map(Some).collect())
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["tpurs::stablehlo"], call_external);
}
