//! Lowers op calls over strided views of flat storages, runs the programs on the XLA CPU
//! PJRT plugin and checks the numbers against index arithmetic done by hand.
//!
//! The plugin is found via `TPURS_PJRT_PLUGIN` or the project's virtualenv; a missing plugin
//! is a test failure, not a skip.

use std::path::PathBuf;
use std::sync::OnceLock;

use tpurs_hlo::{DType, Literal, Precision, TensorType};
use tpurs_ops::{
    lookup, Arg, EagerArg, Error, Lowered, OpCall, OutputSpec, ParamSource, ResultSink, ReturnSpec,
    ScalarMeta, StorageMeta, TensorMeta, WriteTarget,
};
use tpurs_pjrt::{Client, CompileOptions, ElementType};

const DEFAULT_PLUGIN: &str =
    "/work/main/.venv/lib/python3.11/site-packages/fastatomstruct_xla_cpu/libpjrt_cpu.so";

fn plugin_path() -> PathBuf {
    let p = std::env::var_os("TPURS_PJRT_PLUGIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_PLUGIN));
    assert!(
        p.exists(),
        "PJRT CPU plugin not found at {} (set TPURS_PJRT_PLUGIN to the path of libpjrt_cpu.so)",
        p.display()
    );
    p
}

/// One client per process, shared by all tests.
fn client() -> &'static Client {
    static CLIENT: OnceLock<Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        Client::load(&plugin_path(), &[])
            .unwrap_or_else(|e| panic!("creating the CPU client failed: {e}"))
    })
}

fn element_type(d: DType) -> ElementType {
    match d {
        DType::Bool => ElementType::Pred,
        DType::U8 => ElementType::U8,
        DType::I8 => ElementType::S8,
        DType::I16 => ElementType::S16,
        DType::I32 => ElementType::S32,
        DType::I64 => ElementType::S64,
        DType::U16 => ElementType::U16,
        DType::U32 => ElementType::U32,
        DType::U64 => ElementType::U64,
        DType::F16 => ElementType::F16,
        DType::BF16 => ElementType::BF16,
        DType::F32 => ElementType::F32,
        DType::F64 => ElementType::F64,
        DType::C32 | DType::C64 => ElementType::C64,
        DType::C128 => ElementType::C128,
        DType::F8E5M2 => ElementType::F8E5M2,
        DType::F8E4M3FN => ElementType::F8E4M3FN,
        DType::F8E5M2FNUZ => ElementType::F8E5M2FNUZ,
        DType::F8E4M3FNUZ => ElementType::F8E4M3FNUZ,
    }
}

/// Raw host bytes of one program parameter or output, with its type.
#[derive(Clone, Debug)]
struct Host {
    bytes: Vec<u8>,
    dtype: DType,
    dims: Vec<i64>,
}

fn f32_host(v: &[f32], dims: &[i64]) -> Host {
    Host {
        bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        dtype: DType::F32,
        dims: dims.to_vec(),
    }
}

fn i64_host(v: &[i64], dims: &[i64]) -> Host {
    Host {
        bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        dtype: DType::I64,
        dims: dims.to_vec(),
    }
}

fn f64_host(v: f64) -> Host {
    Host {
        bytes: v.to_le_bytes().to_vec(),
        dtype: DType::F64,
        dims: vec![],
    }
}

fn to_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn to_i32(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn to_i64(b: &[u8]) -> Vec<i64> {
    b.chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// A lowered call with the storage offsets its views start at (program parameters when
/// nonzero, supplied by [`run`]).
struct Program {
    lowered: Lowered,
    offsets: Vec<(ParamSource, i64)>,
}

impl std::ops::Deref for Program {
    type Target = Lowered;
    fn deref(&self) -> &Lowered {
        &self.lowered
    }
}

fn lower(call: &OpCall) -> Result<Program, Error> {
    let lowered = tpurs_ops::lower(call)?;
    let offsets = lowered
        .params
        .iter()
        .filter_map(|&p| match p {
            ParamSource::Offset(arg, item) => match call.args[arg].item(item) {
                Arg::Tensor(m) => Some((p, m.offset)),
                _ => panic!("offset parameter {p:?} names a non-tensor"),
            },
            _ => None,
        })
        .collect();
    Ok(Program { lowered, offsets })
}

/// Compiles and runs a lowered call; `input` supplies the host value of each parameter
/// other than view offsets.
fn run(program: &Program, input: impl Fn(ParamSource) -> Host) -> Vec<Vec<u8>> {
    let lowered = &program.lowered;
    let c = client();
    let exe = c
        .compile(&lowered.mlir, &CompileOptions::default())
        .unwrap_or_else(|e| panic!("compile failed: {e}\n{}", lowered.mlir));
    let bufs: Vec<_> = lowered
        .params
        .iter()
        .map(|&src| {
            let h = match program.offsets.iter().find(|(p, _)| *p == src) {
                Some(&(_, offset)) => i64_host(&[offset], &[]),
                None => input(src),
            };
            c.buffer_from_host(&h.bytes, element_type(h.dtype), &h.dims, 0)
                .unwrap_or_else(|e| panic!("upload {src:?}: {e}"))
        })
        .collect();
    let refs: Vec<_> = bufs.iter().collect();
    let outs = exe
        .execute(&refs, 0)
        .unwrap_or_else(|e| panic!("execute failed: {e}\n{}", lowered.mlir));
    assert_eq!(outs.len(), lowered.outputs.len(), "number of outputs");
    outs.iter().map(|b| b.to_host_vec().unwrap()).collect()
}

/// A strided view.
#[derive(Clone, Debug)]
struct View {
    name: &'static str,
    sizes: Vec<i64>,
    strides: Vec<i64>,
    offset: i64,
}

fn view(name: &'static str, sizes: &[i64], strides: &[i64], offset: i64) -> View {
    View {
        name,
        sizes: sizes.to_vec(),
        strides: strides.to_vec(),
        offset,
    }
}

impl View {
    fn meta(&self, dtype: DType, slot: usize) -> TensorMeta {
        TensorMeta {
            dtype,
            sizes: self.sizes.clone(),
            strides: self.strides.clone(),
            offset: self.offset,
            slot,
        }
    }

    fn numel(&self) -> i64 {
        self.sizes.iter().product()
    }

    /// Storage index of every element, in row-major order of the view:
    /// `offset + sum(i_k * stride_k)`.
    fn indices(&self) -> Vec<usize> {
        let n = self.numel();
        let mut out = Vec::with_capacity(n as usize);
        for linear in 0..n {
            let mut rest = linear;
            let mut idx = self.offset;
            for d in (0..self.sizes.len()).rev() {
                let i = rest % self.sizes[d];
                rest /= self.sizes[d];
                idx += i * self.strides[d];
            }
            out.push(idx as usize);
        }
        out
    }

    /// Whether two elements of the view share a storage location.
    fn overlaps(&self) -> bool {
        let mut idx = self.indices();
        idx.sort();
        idx.windows(2).any(|w| w[0] == w[1])
    }
}

const N: i64 = 24;

/// Views of a 24-element storage, each with a note of the 4x6 / 2x3x4 tensor it comes from.
fn views() -> Vec<View> {
    vec![
        view("contiguous", &[4, 6], &[6, 1], 0),
        view("contiguous with offset", &[2, 3], &[3, 1], 5),
        view("flat tail", &[7], &[1], 17),
        view("transpose of 4x6", &[6, 4], &[1, 6], 0),
        view("transpose of 2x3x4 (2,0,1)", &[4, 2, 3], &[1, 12, 4], 0),
        view("slice rows 1..4, cols ::2", &[3, 3], &[6, 2], 6),
        view("slice with step 3", &[8], &[3], 0),
        view("slice ending at the storage end", &[2, 2], &[12, 1], 10),
        view("select column 2", &[4], &[6], 2),
        view("select row 1", &[6], &[1], 6),
        view("select, 0-d", &[], &[], 7),
        view("size-1 dims with odd strides", &[1, 3, 1], &[100, 2, 55], 3),
        view("expand rows", &[3, 4], &[0, 1], 2),
        view("expand columns", &[2, 3], &[1, 0], 4),
        view("expand of a 0-d", &[2, 2], &[0, 0], 9),
        view("diagonal of 4x6", &[4], &[7], 0),
        view("diagonal offset 1", &[4], &[7], 1),
        view("interleaved strides", &[2, 3, 4], &[1, 8, 2], 0),
        view("non-box strides", &[3, 3], &[5, 2], 1),
        view("unfold size 4 step 2", &[5, 4], &[2, 1], 1),
        view("as_strided overlap 2-d", &[3, 2, 3], &[4, 1, 3], 0),
        view("empty", &[0, 3], &[3, 1], 0),
    ]
}

fn storage_f32() -> Vec<f32> {
    (0..N).map(|i| 100.0 + i as f32 * 1.5).collect()
}

fn storage_i64() -> Vec<i64> {
    (0..N).map(|i| (i * 37 % 24) - 11 + (i << 40)).collect()
}

fn clone_call(meta: TensorMeta, storage: StorageMeta) -> OpCall {
    OpCall {
        op: lookup("clone").expect("clone is registered"),
        args: vec![Arg::Tensor(meta)],
        storages: vec![storage],
        writes: vec![],
        returns: vec![ReturnSpec::Fresh],
        default_float: DType::F32,
        precision: Precision::Highest,
    }
}

#[test]
fn clone_reads_views_f32() {
    let data = storage_f32();
    for v in views() {
        let storage = StorageMeta {
            numel: N,
            dtype: DType::F32,
        };
        let call = clone_call(v.meta(DType::F32, 0), storage);
        let lowered = lower(&call).unwrap_or_else(|e| panic!("{}: lower failed: {e}", v.name));
        // A nonzero offset is a parameter, so one program serves every offset.
        let offset = (v.offset != 0).then_some(ParamSource::Offset(0, None));
        let expect: Vec<_> = [Some(ParamSource::Storage(0)), offset]
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(lowered.params, expect, "{}", v.name);
        assert_eq!(
            lowered.outputs,
            [OutputSpec::Fresh(TensorType::new(
                DType::F32,
                v.sizes.clone()
            ))],
            "{}",
            v.name
        );
        assert_eq!(lowered.results, [ResultSink::Fresh(0)], "{}", v.name);
        let out = run(&lowered, |_| f32_host(&data, &[N]));
        let expect: Vec<f32> = v.indices().iter().map(|&i| data[i]).collect();
        assert_eq!(to_f32(&out[0]), expect, "view {}: {v:?}", v.name);
    }
}

#[test]
fn clone_reads_views_i64() {
    let data = storage_i64();
    for v in views() {
        let storage = StorageMeta {
            numel: N,
            dtype: DType::I64,
        };
        let lowered = lower(&clone_call(v.meta(DType::I64, 0), storage))
            .unwrap_or_else(|e| panic!("{}: lower failed: {e}", v.name));
        let out = run(&lowered, |_| i64_host(&data, &[N]));
        let expect: Vec<i64> = v.indices().iter().map(|&i| data[i]).collect();
        assert_eq!(to_i64(&out[0]), expect, "view {}: {v:?}", v.name);
    }
}

#[test]
fn clone_reinterprets_storage_dtype() {
    // An f32 storage viewed as i32 (same width): the bits come through unchanged.
    let data = storage_f32();
    let v = view("transpose", &[6, 4], &[1, 6], 0);
    let lowered = lower(&clone_call(
        v.meta(DType::I32, 0),
        StorageMeta {
            numel: N,
            dtype: DType::F32,
        },
    ))
    .unwrap();
    let out = run(&lowered, |_| f32_host(&data, &[N]));
    let expect: Vec<i32> = v
        .indices()
        .iter()
        .map(|&i| data[i].to_bits() as i32)
        .collect();
    assert_eq!(to_i32(&out[0]), expect);

    // An i64 storage viewed as f32 (narrower): like torch's `view(torch.float32)` on a
    // little-endian machine, element 2k is the low half of i64 element k.
    let wide: Vec<i64> = (0..6)
        .map(|i| {
            let lo = (1.0f32 + i as f32).to_bits() as i64;
            let hi = (-10.0f32 - i as f32).to_bits() as i64;
            (hi << 32) | lo
        })
        .collect();
    let v = view("every other float", &[6], &[2], 1);
    let lowered = lower(&clone_call(
        v.meta(DType::F32, 0),
        StorageMeta {
            numel: 6,
            dtype: DType::I64,
        },
    ))
    .unwrap();
    let out = run(&lowered, |_| i64_host(&wide, &[6]));
    let halves: Vec<f32> = wide
        .iter()
        .flat_map(|w| {
            let b = w.to_le_bytes();
            to_f32(&b)
        })
        .collect();
    let expect: Vec<f32> = v.indices().iter().map(|&i| halves[i]).collect();
    assert_eq!(to_f32(&out[0]), expect);
    assert_eq!(expect, [-10.0, -11.0, -12.0, -13.0, -14.0, -15.0]);
}

fn copy_call(dst: TensorMeta, dst_storage: StorageMeta, src: TensorMeta, src_numel: i64) -> OpCall {
    let src_dtype = src.dtype;
    OpCall {
        op: lookup("tpurs::copy_").expect("tpurs::copy_ is registered"),
        args: vec![Arg::Tensor(dst), Arg::Tensor(src)],
        storages: vec![
            dst_storage,
            StorageMeta {
                numel: src_numel,
                dtype: src_dtype,
            },
        ],
        writes: vec![WriteTarget {
            arg: 0,
            item: None,
            is_out: false,
        }],
        returns: vec![ReturnSpec::Alias(0)],
        default_float: DType::F32,
        precision: Precision::Highest,
    }
}

fn dense(sizes: &[i64], dtype: DType, slot: usize) -> TensorMeta {
    let mut strides = vec![1; sizes.len()];
    for i in (0..sizes.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * sizes[i + 1];
    }
    TensorMeta {
        dtype,
        sizes: sizes.to_vec(),
        strides,
        offset: 0,
        slot,
    }
}

/// The source values written through view `v`: constant along broadcast (stride-0) dims so
/// that the result is well defined.
fn source_for(v: &View) -> Vec<f32> {
    let n = v.numel();
    (0..n)
        .map(|linear| {
            let mut rest = linear;
            let mut key = 0i64;
            let mut scale = 1i64;
            for d in (0..v.sizes.len()).rev() {
                let i = rest % v.sizes[d];
                rest /= v.sizes[d];
                if v.strides[d] != 0 {
                    key += i * scale;
                }
                scale *= v.sizes[d];
            }
            -1.0 - key as f32 * 0.25
        })
        .collect()
}

#[test]
fn copy_writes_views() {
    let data = storage_f32();
    for v in views() {
        let stride0 = v
            .sizes
            .iter()
            .zip(&v.strides)
            .any(|(&n, &s)| n > 1 && s == 0);
        if v.overlaps() && !stride0 {
            continue;
        }
        let src = source_for(&v);
        let call = copy_call(
            v.meta(DType::F32, 0),
            StorageMeta {
                numel: N,
                dtype: DType::F32,
            },
            dense(&v.sizes, DType::F32, 1),
            v.numel(),
        );
        let lowered = lower(&call).unwrap_or_else(|e| panic!("{}: lower failed: {e}", v.name));
        assert_eq!(lowered.results, [ResultSink::Alias(0)], "{}", v.name);
        let storage_out = lowered
            .outputs
            .iter()
            .position(|o| *o == OutputSpec::Storage(0))
            .unwrap_or_else(|| panic!("{}: no storage output in {:?}", v.name, lowered.outputs));
        assert_eq!(lowered.outputs.len(), 1, "{}", v.name);
        let out = run(&lowered, |p| match p {
            ParamSource::Storage(0) => f32_host(&data, &[N]),
            ParamSource::Storage(1) => f32_host(&src, &[v.numel()]),
            other => panic!("unexpected parameter {other:?}"),
        });
        let mut expect = data.clone();
        for (k, &i) in v.indices().iter().enumerate() {
            expect[i] = src[k];
        }
        assert_eq!(to_f32(&out[storage_out]), expect, "view {}: {v:?}", v.name);
    }
}

#[test]
fn copy_converts_and_broadcasts_the_source() {
    // An i64 source of shape [3] broadcast into a transposed f32 view of shape [4, 3].
    let data = storage_f32();
    let v = view("transpose", &[4, 3], &[1, 4], 0);
    let src = [7i64, -8, 9];
    let call = copy_call(
        v.meta(DType::F32, 0),
        StorageMeta {
            numel: N,
            dtype: DType::F32,
        },
        dense(&[3], DType::I64, 1),
        3,
    );
    let lowered = lower(&call).unwrap();
    let out = run(&lowered, |p| match p {
        ParamSource::Storage(0) => f32_host(&data, &[N]),
        ParamSource::Storage(1) => i64_host(&src, &[3]),
        other => panic!("unexpected parameter {other:?}"),
    });
    let mut expect = data.clone();
    for (k, &i) in v.indices().iter().enumerate() {
        expect[i] = src[k % 3] as f32;
    }
    assert_eq!(to_f32(&out[0]), expect);
}

#[test]
fn copy_covering_the_whole_storage() {
    // A dense view of the whole storage does not need the old contents.
    let v = view("whole", &[4, 6], &[6, 1], 0);
    let src: Vec<f32> = (0..N).map(|i| -(i as f32)).collect();
    let call = copy_call(
        v.meta(DType::F32, 0),
        StorageMeta {
            numel: N,
            dtype: DType::F32,
        },
        dense(&v.sizes, DType::F32, 1),
        N,
    );
    let lowered = lower(&call).unwrap();
    assert_eq!(lowered.params, [ParamSource::Storage(1)]);
    assert_eq!(lowered.outputs, [OutputSpec::Storage(0)]);
    let out = run(&lowered, |p| match p {
        ParamSource::Storage(1) => f32_host(&src, &[N]),
        other => panic!("unexpected parameter {other:?}"),
    });
    assert_eq!(to_f32(&out[0]), src);
}

#[test]
fn copy_into_i64_storage_views() {
    let data = storage_i64();
    for v in views() {
        if v.overlaps() {
            continue;
        }
        let src: Vec<i64> = (0..v.numel()).map(|i| -1000 - i).collect();
        let call = copy_call(
            v.meta(DType::I64, 0),
            StorageMeta {
                numel: N,
                dtype: DType::I64,
            },
            dense(&v.sizes, DType::I64, 1),
            v.numel(),
        );
        let lowered = lower(&call).unwrap_or_else(|e| panic!("{}: lower failed: {e}", v.name));
        let out = run(&lowered, |p| match p {
            ParamSource::Storage(0) => i64_host(&data, &[N]),
            ParamSource::Storage(1) => i64_host(&src, &[v.numel()]),
            other => panic!("unexpected parameter {other:?}"),
        });
        let mut expect = data.clone();
        for (k, &i) in v.indices().iter().enumerate() {
            expect[i] = src[k];
        }
        assert_eq!(to_i64(&out[0]), expect, "view {}: {v:?}", v.name);
    }
}

// ---------------------------------------------------------------------------------------------
// add.Tensor

fn add_call(a: TensorMeta, a_numel: i64, b: TensorMeta, b_numel: i64, alpha: EagerArg) -> OpCall {
    let storages = vec![
        StorageMeta {
            numel: a_numel,
            dtype: a.dtype,
        },
        StorageMeta {
            numel: b_numel,
            dtype: b.dtype,
        },
    ];
    OpCall {
        op: lookup("add.Tensor").expect("add.Tensor is registered"),
        args: vec![Arg::Tensor(a), Arg::Tensor(b), alpha],
        storages,
        writes: vec![],
        returns: vec![ReturnSpec::Fresh],
        default_float: DType::F32,
        precision: Precision::Highest,
    }
}

#[test]
fn add_tensor_broadcasts() {
    // [2, 1, 3] + [4, 1] -> [2, 4, 3]
    let a: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..4).map(|i| 10.0 * (i + 1) as f32).collect();
    let alpha = Arg::Scalar(ScalarMeta {
        dtype: DType::F64,
        wrapped: true,
        value: Literal::Float(2.0),
    });
    for (alpha, factor) in [(Arg::None, 1.0f32), (alpha, 2.0)] {
        let with_alpha = matches!(alpha, Arg::Scalar(_));
        let call = add_call(
            dense(&[2, 1, 3], DType::F32, 0),
            6,
            dense(&[4, 1], DType::F32, 1),
            4,
            alpha,
        );
        let lowered = lower(&call).unwrap();
        assert_eq!(
            lowered.outputs,
            [OutputSpec::Fresh(TensorType::new(DType::F32, [2, 4, 3]))]
        );
        if with_alpha {
            assert!(lowered.params.contains(&ParamSource::Scalar(2, None)));
        }
        let out = run(&lowered, |p| match p {
            ParamSource::Storage(0) => f32_host(&a, &[6]),
            ParamSource::Storage(1) => f32_host(&b, &[4]),
            ParamSource::Scalar(2, None) => f64_host(2.0),
            other => panic!("unexpected parameter {other:?}"),
        });
        let mut expect = Vec::new();
        for i in 0..2 {
            for bj in &b {
                for k in 0..3 {
                    expect.push(a[i * 3 + k] + factor * bj);
                }
            }
        }
        assert_eq!(to_f32(&out[0]), expect, "alpha {factor}");
    }
}

#[test]
fn add_tensor_promotes_and_reads_views() {
    // i64 [3] (a strided view) + f32 [2, 3] (a transposed view) -> f32 [2, 3].
    let a_storage: Vec<i64> = (0..9).map(|i| i * 100).collect();
    let b_storage: Vec<f32> = (0..6).map(|i| i as f32 + 0.5).collect();
    let a = TensorMeta {
        dtype: DType::I64,
        sizes: vec![3],
        strides: vec![3],
        offset: 1,
        slot: 0,
    };
    let b = TensorMeta {
        dtype: DType::F32,
        sizes: vec![2, 3],
        strides: vec![1, 2],
        offset: 0,
        slot: 1,
    };
    let lowered = lower(&add_call(a, 9, b, 6, Arg::None)).unwrap();
    assert_eq!(
        lowered.outputs,
        [OutputSpec::Fresh(TensorType::new(DType::F32, [2, 3]))]
    );
    let out = run(&lowered, |p| match p {
        ParamSource::Storage(0) => i64_host(&a_storage, &[9]),
        ParamSource::Storage(1) => f32_host(&b_storage, &[6]),
        other => panic!("unexpected parameter {other:?}"),
    });
    let mut expect = Vec::new();
    for i in 0..2 {
        for j in 0..3 {
            expect.push(a_storage[1 + 3 * j] as f32 + b_storage[i + 2 * j]);
        }
    }
    assert_eq!(to_f32(&out[0]), expect);

    // Two i64 tensors with an integer alpha stay i64.
    let x: Vec<i64> = vec![1, 2, 3];
    let y: Vec<i64> = vec![1 << 40, -5, 7];
    let alpha = Arg::Scalar(ScalarMeta {
        dtype: DType::I64,
        wrapped: true,
        value: Literal::Int(3),
    });
    let lowered = lower(&add_call(
        dense(&[3], DType::I64, 0),
        3,
        dense(&[3], DType::I64, 1),
        3,
        alpha,
    ))
    .unwrap();
    assert_eq!(
        lowered.outputs,
        [OutputSpec::Fresh(TensorType::new(DType::I64, [3]))]
    );
    let out = run(&lowered, |p| match p {
        ParamSource::Storage(0) => i64_host(&x, &[3]),
        ParamSource::Storage(1) => i64_host(&y, &[3]),
        ParamSource::Scalar(2, None) => i64_host(&[3], &[]),
        other => panic!("unexpected parameter {other:?}"),
    });
    assert_eq!(to_i64(&out[0]), [1 + (3 << 40), 2 - 15, 3 + 21]);
}

#[test]
fn add_tensor_shape_mismatch_is_a_runtime_error() {
    let call = add_call(
        dense(&[2, 3], DType::F32, 0),
        6,
        dense(&[4], DType::F32, 1),
        4,
        Arg::None,
    );
    match lower(&call) {
        Err(Error::Runtime(msg)) => {
            assert!(msg.contains("must match the size"), "{msg}");
            assert!(msg.contains("(3)") && msg.contains("(4)"), "{msg}");
        }
        Err(other) => panic!("expected Error::Runtime, got {other:?}"),
        Ok(l) => panic!("expected an error, got a program:\n{}", l.mlir),
    }
}

#[test]
fn copy_through_a_reinterpreted_dtype() {
    // Write the high f32 halves of an i64 storage (`storage.view(torch.float32)[1::2]`).
    let wide: Vec<i64> = (0..6).map(|i| i * 0x1_0000_0001).collect();
    let v = view("high halves", &[6], &[2], 1);
    let src: Vec<f32> = (0..6).map(|i| 0.5 + i as f32).collect();
    let call = copy_call(
        v.meta(DType::F32, 0),
        StorageMeta {
            numel: 6,
            dtype: DType::I64,
        },
        dense(&[6], DType::F32, 1),
        6,
    );
    let lowered = lower(&call).unwrap();
    assert_eq!(lowered.outputs, [OutputSpec::Storage(0)]);
    let out = run(&lowered, |p| match p {
        ParamSource::Storage(0) => i64_host(&wide, &[6]),
        ParamSource::Storage(1) => f32_host(&src, &[6]),
        other => panic!("unexpected parameter {other:?}"),
    });
    let expect: Vec<i64> = wide
        .iter()
        .zip(&src)
        .map(|(w, s)| ((s.to_bits() as i64) << 32) | (w & 0xFFFF_FFFF))
        .collect();
    assert_eq!(to_i64(&out[0]), expect);
}

#[test]
fn copy_within_one_storage_reads_the_old_values() {
    // x[1:].copy_(x[:-1]) and a transposed self-copy: the source is read before the write.
    let data = storage_f32();
    for (dst, src) in [
        (view("dst", &[23], &[1], 1), view("src", &[23], &[1], 0)),
        (
            view("dst", &[4, 4], &[4, 1], 0),
            view("src", &[4, 4], &[1, 4], 8),
        ),
        (
            view("dst", &[3, 2], &[6, 3], 2),
            view("src", &[3, 2], &[1, 5], 4),
        ),
    ] {
        let call = OpCall {
            op: lookup("tpurs::copy_").unwrap(),
            args: vec![
                Arg::Tensor(dst.meta(DType::F32, 0)),
                Arg::Tensor(src.meta(DType::F32, 0)),
            ],
            storages: vec![StorageMeta {
                numel: N,
                dtype: DType::F32,
            }],
            writes: vec![WriteTarget {
                arg: 0,
                item: None,
                is_out: false,
            }],
            returns: vec![ReturnSpec::Alias(0)],
            default_float: DType::F32,
            precision: Precision::Highest,
        };
        let lowered = lower(&call).unwrap();
        assert!(lowered
            .params
            .iter()
            .all(|p| matches!(p, ParamSource::Storage(0) | ParamSource::Offset(..))));
        let out = run(&lowered, |_| f32_host(&data, &[N]));
        let mut expect = data.clone();
        for (d, s) in dst.indices().into_iter().zip(src.indices()) {
            expect[d] = data[s];
        }
        assert_eq!(to_f32(&out[0]), expect, "{dst:?} <- {src:?}");
    }
}

#[test]
fn bool_storage_views() {
    let data: Vec<bool> = (0..N).map(|i| i % 3 == 0 || i % 5 == 0).collect();
    let host = Host {
        bytes: data.iter().map(|&b| b as u8).collect(),
        dtype: DType::Bool,
        dims: vec![N],
    };
    let storage = StorageMeta {
        numel: N,
        dtype: DType::Bool,
    };
    for v in views() {
        let lowered = lower(&clone_call(v.meta(DType::Bool, 0), storage.clone()))
            .unwrap_or_else(|e| panic!("{}: lower failed: {e}", v.name));
        let out = run(&lowered, |_| host.clone());
        let expect: Vec<u8> = v.indices().iter().map(|&i| data[i] as u8).collect();
        assert_eq!(out[0], expect, "view {}: {v:?}", v.name);
    }
    // Write `true` through a strided view.
    let v = view("slice with step 3", &[8], &[3], 1);
    let lowered = lower(&copy_call(
        v.meta(DType::Bool, 0),
        storage,
        dense(&[8], DType::Bool, 1),
        8,
    ))
    .unwrap();
    let src = Host {
        bytes: vec![1, 0, 1, 0, 1, 0, 1, 0],
        dtype: DType::Bool,
        dims: vec![8],
    };
    let out = run(&lowered, |p| match p {
        ParamSource::Storage(0) => host.clone(),
        ParamSource::Storage(1) => src.clone(),
        other => panic!("unexpected parameter {other:?}"),
    });
    let mut expect: Vec<u8> = data.iter().map(|&b| b as u8).collect();
    for (k, i) in v.indices().into_iter().enumerate() {
        expect[i] = src.bytes[k];
    }
    assert_eq!(out[0], expect);
}
