//! Control flow: loops and two-way branches whose regions read values defined outside.

use crate::builder::{Builder, Value};
use crate::types::TensorType;

impl Builder {
    /// `stablehlo.while`: runs `body` on the loop values while `cond` (a `tensor<i1>` of
    /// them) holds; returns the final values. Both regions may read values defined outside.
    pub fn while_loop(
        &mut self,
        init: &[&Value],
        cond: impl FnOnce(&mut Builder, &[Value]) -> Value,
        body: impl FnOnce(&mut Builder, &[Value]) -> Vec<Value>,
    ) -> Vec<Value> {
        let tys: Vec<TensorType> = init.iter().map(|v| v.ty.clone()).collect();
        let cond = self.region(&tys, |b, args| vec![cond(b, args)]);
        let body = self.region(&tys, body);
        let mut out = self.emit("stablehlo.while", init, "", &[cond, body], &tys);
        if tys.len() == 1 {
            // A one-value loop names its result without `#0`.
            out.truncate(1);
        }
        out
    }

    /// `stablehlo.if`: the values `then` builds where the 0-d boolean `pred` holds, else those
    /// `otherwise` builds (same types); only the branch taken runs.
    pub fn if_else(
        &mut self,
        pred: &Value,
        then: impl FnOnce(&mut Builder) -> Vec<Value>,
        otherwise: impl FnOnce(&mut Builder) -> Vec<Value>,
    ) -> Vec<Value> {
        let mut tys = Vec::new();
        let then = self.region(&[], |b, _| {
            let out = then(b);
            tys = out.iter().map(|v| v.ty.clone()).collect();
            out
        });
        let otherwise = self.region(&[], |b, _| otherwise(b));
        let mut out = self.emit("stablehlo.if", &[pred], "", &[then, otherwise], &tys);
        if tys.len() == 1 {
            out.truncate(1);
        }
        out
    }
}
