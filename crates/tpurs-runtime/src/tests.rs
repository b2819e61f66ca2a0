//! Runtimes are values: two in one process, each with its own client, devices, compile
//! cache, counters, memory statistics and eager mode.

use std::sync::Arc;

use crate::abi::{CArg, ScalarRef, StorageRef, TensorRef, TpursWrite};
use crate::launch::{run, CallDesc};
use crate::storage::Storage;
use crate::transfer::{copy_from_host, copy_to_host};
use crate::{EagerMode, Runtime};
use tpurs_hlo::Precision;

const FLOAT: i32 = 6;
const LONG: i32 = 4;

fn runtime(cpu_devices: i64) -> Runtime {
    let plugin = std::env::var("TPURS_PJRT_PLUGIN").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../.venv/lib/python3.11/site-packages/fastatomstruct_xla_cpu/libpjrt_cpu.so"
        )
        .into()
    });
    Runtime::new(&plugin, Some(cpu_devices))
        .unwrap_or_else(|e| panic!("creating a runtime on {plugin} failed: {e}"))
}

/// A dense 1-d f32 tensor over all of `storage`.
fn tensor<'a>(storage: &'a Arc<Storage>, len: &'a [i64; 1]) -> TensorRef<'a> {
    TensorRef {
        dtype: FLOAT,
        device: storage.device as i32,
        sizes: len,
        strides: &[1],
        offset: 0,
        storage: StorageRef::of(storage),
    }
}

fn upload(rt: &Runtime, device: usize, values: &[f32]) -> Arc<Storage> {
    let storage = Arc::new(rt.new_storage(device, values.len() * 4));
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let len = [values.len() as i64];
    copy_from_host(rt, &tensor(&storage, &len), &bytes).unwrap();
    storage
}

fn download(rt: &Runtime, storage: &Arc<Storage>) -> Vec<f32> {
    let mut bytes = vec![0u8; storage.nbytes];
    let len = [storage.nbytes as i64 / 4];
    copy_to_host(rt, &tensor(storage, &len), &mut bytes).unwrap();
    bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// `a.add_(b)`.
fn add_in_place(rt: &Runtime, a: &Arc<Storage>, b: &Arc<Storage>) {
    let len = [a.nbytes as i64 / 4];
    let one = ScalarRef {
        dtype: LONG,
        wrapped: true,
        i: 1,
        f: 1.0,
        im: 0.0,
    };
    let call = CallDesc {
        op: tpurs_ops::lookup("add_.Tensor").expect("add_.Tensor has a rule"),
        args: &[
            CArg::Tensor(tensor(a, &len)),
            CArg::Tensor(tensor(b, &len)),
            CArg::Scalar(one),
        ],
        writes: &[TpursWrite {
            arg: 0,
            item: -1,
            is_out: 0,
        }],
        returns: &[0],
        default_dtype: FLOAT,
        precision: Precision::Highest,
    };
    run(rt, &call).unwrap();
}

#[test]
fn two_runtimes_keep_their_own_state() {
    let one = runtime(1);
    let two = runtime(2);
    assert_eq!((one.device_count(), two.device_count()), (1, 2));
    two.set_eager_mode(EagerMode::DeferAndFuse).unwrap();
    assert_eq!(one.eager_mode(), EagerMode::DeferNever);

    let a = upload(&one, 0, &[1.0, 2.0, 3.0]);
    let b = upload(&one, 0, &[10.0, 20.0, 30.0]);
    add_in_place(&one, &a, &b);
    assert_eq!(download(&one, &a), [11.0, 22.0, 33.0]);

    // On the second runtime's second device, deferred until the read.
    let c = upload(&two, 1, &[1.0, 1.0]);
    let d = upload(&two, 1, &[2.0, 5.0]);
    add_in_place(&two, &c, &d);
    add_in_place(&two, &c, &d);
    assert_eq!(two.metrics().op_launches, 0, "fused eager defers both adds");
    assert_eq!(download(&two, &c), [5.0, 11.0]);

    let (m1, m2) = (one.metrics(), two.metrics());
    assert_eq!(m1.op_launches, 1);
    assert_eq!(m2.op_launches, 1, "one fused program for two adds");
    assert_eq!(m1.bytes_to_device, 24);
    assert_eq!(m2.bytes_to_device, 16);
    assert_eq!(one.memory(0).allocated(), 24);
    assert_eq!(two.memory(0).allocated(), 0);
    assert_eq!(two.memory(1).allocated(), 16);
    assert_eq!(two.memory(1).count().current, 2);
    assert_eq!((one.cache_len(), two.cache_len()), (1, 2));

    drop((a, b, c, d));
    assert_eq!(one.memory(0).allocated(), 0);
    assert_eq!(two.memory(1).allocated(), 0);
    assert_eq!(two.memory(1).peak(), 16);
    assert_eq!(two.memory(1).bytes().freed, 16);
    two.memory(1).reset_accumulated();
    assert_eq!(two.memory(1).bytes().allocated, 0);
    one.reset_metrics();
    assert_eq!(one.metrics().op_launches, 0);
    assert_eq!(two.metrics().op_launches, 1);
}

#[test]
fn an_invalid_device_is_an_error() {
    let rt = runtime(1);
    let err = rt.check_device(3).unwrap_err();
    assert!(err.to_string().contains("Invalid device tpu:3"), "{err}");
}
