//! Collectives across the devices of this process: one StableHLO collective compiled for
//! one replica per participating device and launched on all of them at once. The process
//! group ("tpu" backend, Python) gathers every rank's tensor and calls [`run`] once per
//! collective.

use std::sync::Arc;

use rustc_hash::FxHashMap;
use tpurs_hlo::{Builder, DType, TensorType, Value};
use tpurs_pjrt::{CompileOptions, LoadedExecutable};

use crate::defer::ready;
use crate::error::{invalid, ErrorKind, Result};
use crate::metrics::bump;
use crate::profile::{now_ns, SpanKind};
use crate::runtime::Runtime;
use crate::storage::{Flat, Storage};
use crate::transfer::zeros;

/// How values are combined (`torch.distributed.ReduceOp` less AVG and PREMUL_SUM, which
/// the process group builds from SUM).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum (logical or for bool).
    Sum,
    /// Product (logical and for bool).
    Product,
    /// Maximum (logical or for bool).
    Max,
    /// Minimum (logical and for bool).
    Min,
}

/// A collective over the flat contents of one storage per rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Collective {
    /// Every rank gets the reduction of all inputs.
    AllReduce(ReduceOp),
    /// Every rank gets all inputs concatenated in rank order.
    AllGather,
    /// Rank r gets chunk r of the reduction of all inputs.
    ReduceScatter(ReduceOp),
    /// Rank r gets chunk r of every input, concatenated in rank order.
    AllToAll,
}

impl Collective {
    /// The torch.distributed name.
    pub fn name(self) -> &'static str {
        match self {
            Collective::AllReduce(_) => "all_reduce",
            Collective::AllGather => "all_gather",
            Collective::ReduceScatter(_) => "reduce_scatter",
            Collective::AllToAll => "all_to_all",
        }
    }
}

/// Compiled collective programs, by module text and device list.
pub(crate) type CollectiveCache = FxHashMap<(String, Vec<usize>), Arc<LoadedExecutable>>;

/// Runs `op` with rank r reading `inputs[r]` and writing `outputs[r]` (storages of the
/// element type `dtype` on distinct devices, `numel` elements in each input).
pub fn run(
    rt: &Runtime,
    op: Collective,
    dtype: DType,
    numel: i64,
    inputs: &[Arc<Storage>],
    outputs: &[Arc<Storage>],
) -> Result<()> {
    let n = inputs.len();
    let devices = check_ranks(inputs, outputs)?;
    let out_numel = output_numel(op, numel, n as i64)?;
    for (r, s) in outputs.iter().enumerate() {
        if s.nbytes < out_numel as usize * dtype.byte_size() {
            return invalid(
                ErrorKind::Value,
                format!("output of rank {r} holds fewer than {out_numel} elements"),
            );
        }
    }
    let mut flats = Vec::with_capacity(n);
    for (r, s) in inputs.iter().enumerate() {
        let flat = match ready(rt, s)? {
            Some(f) => f,
            None => zeros(rt, s.device, dtype, numel)?,
        };
        if flat.dtype != dtype || flat.numel != numel {
            return invalid(
                ErrorKind::Runtime,
                format!("input of rank {r} is not a dense {numel}-element tensor of {dtype:?}"),
            );
        }
        flats.push(flat);
    }
    let exe = executable(rt, &module(op, dtype, numel, n), &devices)?;
    let args: Vec<Vec<&tpurs_pjrt::Buffer>> = flats.iter().map(|f| vec![&*f.buffer]).collect();
    let start = rt.profile.on(SpanKind::Program).then(now_ns);
    let results = exe.execute_replicated(&args, &devices)?;
    bump(&rt.metrics.op_launches, 1);
    if let Some(start) = start {
        for (bufs, &d) in results.iter().zip(&devices) {
            let detail = format!("{n} devices, {numel} elements of {dtype:?}");
            rt.profile
                .record_program(op.name().into(), detail, d, start, bufs)?;
        }
    }
    bump(&rt.metrics.collectives, 1);
    for ((out, mut bufs), &d) in outputs.iter().zip(results).zip(&devices) {
        let buffer = Arc::new(bufs.remove(0));
        *rt.last_output[d].lock().unwrap_or_else(|e| e.into_inner()) = Some(buffer.clone());
        out.set(Flat::new(buffer, dtype, out_numel));
    }
    Ok(())
}

/// The devices of the ranks, checked to be distinct and equal for input and output.
fn check_ranks(inputs: &[Arc<Storage>], outputs: &[Arc<Storage>]) -> Result<Vec<usize>> {
    if inputs.is_empty() || inputs.len() != outputs.len() {
        return invalid(
            ErrorKind::Value,
            format!(
                "a collective needs one input and one output per rank, got {} and {}",
                inputs.len(),
                outputs.len()
            ),
        );
    }
    let devices: Vec<usize> = inputs.iter().map(|s| s.device).collect();
    for (r, (i, o)) in inputs.iter().zip(outputs).enumerate() {
        if i.device != o.device {
            return invalid(
                ErrorKind::Value,
                format!(
                    "rank {r}: input on tpu:{} but output on tpu:{}",
                    i.device, o.device
                ),
            );
        }
        if devices[..r].contains(&i.device) {
            return invalid(
                ErrorKind::Value,
                format!("two ranks share tpu:{}: one device per rank", i.device),
            );
        }
    }
    Ok(devices)
}

fn output_numel(op: Collective, numel: i64, n: i64) -> Result<i64> {
    let divisible = |what: &str| {
        if numel % n != 0 {
            invalid(
                ErrorKind::Value,
                format!("{what} of {numel} elements cannot be split evenly over {n} ranks"),
            )
        } else {
            Ok(())
        }
    };
    Ok(match op {
        Collective::AllReduce(_) => numel,
        Collective::AllGather => numel * n,
        Collective::ReduceScatter(_) => {
            divisible("reduce_scatter input")?;
            numel / n
        }
        Collective::AllToAll => {
            divisible("all_to_all input")?;
            numel
        }
    })
}

/// The module of `op` for `n` replicas: one parameter, one result.
fn module(op: Collective, dtype: DType, numel: i64, n: usize) -> String {
    let groups = format!(
        "replica_groups = dense<[[{}]]> : tensor<1x{n}xi64>",
        (0..n).map(|r| r.to_string()).collect::<Vec<_>>().join(", ")
    );
    let n = n as i64;
    let mut b = Builder::new();
    let x = b.param(TensorType::new(dtype, vec![numel]));
    let out = match op {
        Collective::AllReduce(r) => {
            let region = combiner(&mut b, r, dtype);
            let ty = TensorType::new(dtype, vec![numel]);
            b.emit("stablehlo.all_reduce", &[&x], &groups, &[region], &[ty])
                .remove(0)
        }
        Collective::AllGather => b.emit1(
            "stablehlo.all_gather",
            &[&x],
            &format!("all_gather_dim = 0 : i64, {groups}"),
            TensorType::new(dtype, vec![numel * n]),
        ),
        Collective::ReduceScatter(r) => {
            let region = combiner(&mut b, r, dtype);
            let ty = TensorType::new(dtype, vec![numel / n]);
            let attrs = format!("scatter_dimension = 0 : i64, {groups}");
            b.emit("stablehlo.reduce_scatter", &[&x], &attrs, &[region], &[ty])
                .remove(0)
        }
        Collective::AllToAll => b.emit1(
            "stablehlo.all_to_all",
            &[&x],
            &format!(
                "split_dimension = 0 : i64, concat_dimension = 0 : i64, split_count = {n} : i64, {groups}"
            ),
            TensorType::new(dtype, vec![numel]),
        ),
    };
    b.finish(&[out])
}

/// The scalar region combining two values.
fn combiner(b: &mut Builder, op: ReduceOp, dtype: DType) -> String {
    let name = match (op, dtype) {
        (ReduceOp::Sum | ReduceOp::Max, DType::Bool) => "stablehlo.or",
        (ReduceOp::Product | ReduceOp::Min, DType::Bool) => "stablehlo.and",
        (ReduceOp::Sum, _) => "stablehlo.add",
        (ReduceOp::Product, _) => "stablehlo.multiply",
        (ReduceOp::Max, _) => "stablehlo.maximum",
        (ReduceOp::Min, _) => "stablehlo.minimum",
    };
    let ty = TensorType::scalar(dtype);
    b.region(&[ty.clone(), ty.clone()], |b, a: &[Value]| {
        vec![b.emit1(name, &[&a[0], &a[1]], "", ty)]
    })
}

/// The executable of `mlir` with replica r on `devices[r]`, compiled once.
fn executable(rt: &Runtime, mlir: &str, devices: &[usize]) -> Result<Arc<LoadedExecutable>> {
    let key = (mlir.to_string(), devices.to_vec());
    let mut cache = rt.collectives.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(exe) = cache.get(&key) {
        bump(&rt.metrics.cache_hits, 1);
        return Ok(exe.clone());
    }
    bump(&rt.metrics.cache_misses, 1);
    let mut assignment = Vec::with_capacity(devices.len());
    for &d in devices {
        let info = rt.client.device_info(d).ok_or_else(|| {
            crate::Error::Invalid(ErrorKind::Runtime, format!("no device tpu:{d}"))
        })?;
        assignment.push(vec![info.id as i64]);
    }
    let options = CompileOptions {
        num_replicas: devices.len() as i64,
        portable: false,
        device_assignment: Some(assignment),
        ..CompileOptions::default()
    };
    // Not through the disk tiers: a program for several devices is cheap to compile and its
    // device assignment must not depend on how a cached copy was deserialized.
    let start = std::time::Instant::now();
    let exe = Arc::new(rt.client.compile(mlir, &options)?);
    bump(&rt.metrics.compile_ns, start.elapsed().as_nanos() as u64);
    bump(&rt.metrics.compiles, 1);
    cache.insert(key, exe.clone());
    Ok(exe)
}
