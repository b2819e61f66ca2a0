//! Builds StableHLO programs with the `Builder`, compiles and runs them on the XLA CPU PJRT
//! plugin and checks the numbers.
//!
//! The plugin is found via `TPURS_PJRT_PLUGIN` or the project's virtualenv; a missing plugin
//! is a test failure, not a skip.

use std::path::PathBuf;
use std::sync::OnceLock;

use half::bf16;
use tpurs_hlo::{
    Builder, CompareDir, ConvDims, DType, GatherDims, Literal, ScatterDims, TensorType, Value,
};
use tpurs_pjrt::{Client, CompileOptions, ElementType, Error};

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

// ---------------------------------------------------------------------------------------------
// Host arrays

/// A dense host array: raw little-endian bytes, element type and shape.
#[derive(Clone, Debug)]
struct Host {
    bytes: Vec<u8>,
    dtype: DType,
    dims: Vec<i64>,
}

impl Host {
    fn f32(v: &[f32], dims: &[i64]) -> Host {
        Host::new(
            v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            DType::F32,
            dims,
        )
    }
    fn i64(v: &[i64], dims: &[i64]) -> Host {
        Host::new(
            v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            DType::I64,
            dims,
        )
    }
    fn u64(v: &[u64], dims: &[i64]) -> Host {
        Host::new(
            v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            DType::U64,
            dims,
        )
    }
    fn bf16(v: &[f32], dims: &[i64]) -> Host {
        Host::new(
            v.iter()
                .flat_map(|x| bf16::from_f32(*x).to_bits().to_le_bytes())
                .collect(),
            DType::BF16,
            dims,
        )
    }
    fn bool(v: &[bool], dims: &[i64]) -> Host {
        Host::new(v.iter().map(|&b| b as u8).collect(), DType::Bool, dims)
    }
    fn new(bytes: Vec<u8>, dtype: DType, dims: &[i64]) -> Host {
        let n: i64 = dims.iter().product();
        assert_eq!(
            bytes.len(),
            n as usize * dtype.byte_size(),
            "host array size"
        );
        Host {
            bytes,
            dtype,
            dims: dims.to_vec(),
        }
    }
    fn ty(&self) -> TensorType {
        TensorType::new(self.dtype, self.dims.clone())
    }

    fn as_f32(&self) -> Vec<f32> {
        assert_eq!(self.dtype, DType::F32);
        self.bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    fn as_i64(&self) -> Vec<i64> {
        assert_eq!(self.dtype, DType::I64);
        self.bytes
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    fn as_u32(&self) -> Vec<u32> {
        assert_eq!(self.dtype, DType::U32);
        self.bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    fn as_u64(&self) -> Vec<u64> {
        assert_eq!(self.dtype, DType::U64);
        self.bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    fn as_i8(&self) -> Vec<i8> {
        assert_eq!(self.dtype, DType::I8);
        self.bytes.iter().map(|&b| b as i8).collect()
    }
    fn as_bf16_bits(&self) -> Vec<u16> {
        assert_eq!(self.dtype, DType::BF16);
        self.bytes
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    fn as_bf16(&self) -> Vec<f32> {
        self.as_bf16_bits()
            .into_iter()
            .map(|b| bf16::from_bits(b).to_f32())
            .collect()
    }
    fn as_bool(&self) -> Vec<bool> {
        assert_eq!(self.dtype, DType::Bool);
        self.bytes
            .iter()
            .map(|&b| {
                assert!(b <= 1, "bool byte {b}");
                b != 0
            })
            .collect()
    }
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

/// Finishes the program with `outs`, compiles it, runs it on `inputs` and returns the
/// outputs with the types the builder inferred (checked against what came back).
fn run(b: Builder, outs: &[Value], inputs: &[Host]) -> Vec<Host> {
    let out_tys: Vec<TensorType> = outs.iter().map(|v| v.ty.clone()).collect();
    let mlir = b.finish(outs);
    let c = client();
    let exe = c
        .compile(&mlir, &CompileOptions::default())
        .unwrap_or_else(|e| panic!("compile failed: {e}\n{mlir}"));
    let bufs: Vec<_> = inputs
        .iter()
        .map(|h| {
            c.buffer_from_host(&h.bytes, element_type(h.dtype), &h.dims, 0)
                .expect("upload")
        })
        .collect();
    let refs: Vec<_> = bufs.iter().collect();
    let results = exe
        .execute(&refs, 0)
        .unwrap_or_else(|e| panic!("execute failed: {e}\n{mlir}"));
    assert_eq!(results.len(), out_tys.len(), "number of outputs");
    results
        .iter()
        .zip(out_tys)
        .map(|(buf, ty)| {
            assert_eq!(buf.element_type(), element_type(ty.dtype), "output dtype");
            assert_eq!(buf.dims(), ty.shape, "output shape");
            Host::new(buf.to_host_vec().expect("to_host"), ty.dtype, &ty.shape)
        })
        .collect()
}

/// Runs a program with parameters of the inputs' types built by `f`.
fn run_with(inputs: &[Host], f: impl FnOnce(&mut Builder, &[Value]) -> Vec<Value>) -> Vec<Host> {
    let mut b = Builder::new();
    let params: Vec<Value> = inputs.iter().map(|h| b.param(h.ty())).collect();
    let outs = f(&mut b, &params);
    run(b, &outs, inputs)
}

fn iota_f32(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32).collect()
}

/// Row-major strides of `shape`.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

fn at(shape: &[usize], idx: &[usize]) -> usize {
    strides(shape).iter().zip(idx).map(|(s, i)| s * i).sum()
}

// ---------------------------------------------------------------------------------------------
// Elementwise

#[test]
fn elementwise_f32() {
    let a = Host::f32(&[1.0, -2.0, 3.5, 8.0], &[2, 2]);
    let b = Host::f32(&[0.5, 4.0, -1.0, 2.0], &[2, 2]);
    let out = run_with(&[a, b], |b, p| {
        vec![
            b.add(&p[0], &p[1]).unwrap(),
            b.mul(&p[0], &p[1]).unwrap(),
            b.div(&p[0], &p[1]).unwrap(),
            b.sub(&p[0], &p[1]).unwrap(),
            b.max(&p[0], &p[1]).unwrap(),
            b.neg(&p[0]),
        ]
    });
    assert_eq!(out[0].as_f32(), [1.5, 2.0, 2.5, 10.0]);
    assert_eq!(out[1].as_f32(), [0.5, -8.0, -3.5, 16.0]);
    assert_eq!(out[2].as_f32(), [2.0, -0.5, -3.5, 4.0]);
    assert_eq!(out[3].as_f32(), [0.5, -6.0, 4.5, 6.0]);
    assert_eq!(out[4].as_f32(), [1.0, 4.0, 3.5, 8.0]);
    assert_eq!(out[5].as_f32(), [-1.0, 2.0, -3.5, -8.0]);
}

#[test]
fn elementwise_i64() {
    let a = Host::i64(&[7, -7, 1 << 40, 5], &[4]);
    let b = Host::i64(&[2, 2, 3, -5], &[4]);
    let out = run_with(&[a, b], |b, p| {
        vec![
            b.add(&p[0], &p[1]).unwrap(),
            b.mul(&p[0], &p[1]).unwrap(),
            b.div(&p[0], &p[1]).unwrap(),
            b.rem(&p[0], &p[1]).unwrap(),
        ]
    });
    assert_eq!(out[0].as_i64(), [9, -5, (1 << 40) + 3, 0]);
    assert_eq!(out[1].as_i64(), [14, -14, 3 << 40, -25]);
    // Integer division truncates toward zero; the remainder has the dividend's sign.
    assert_eq!(out[2].as_i64(), [3, -3, (1 << 40) / 3, -1]);
    assert_eq!(out[3].as_i64(), [1, -1, (1 << 40) % 3, 0]);
}

#[test]
fn elementwise_bf16() {
    let a = Host::bf16(&[1.0, 2.5, -3.0, 256.0], &[4]);
    let b = Host::bf16(&[0.5, 0.5, 2.0, 1.0], &[4]);
    let out = run_with(&[a, b], |b, p| {
        vec![
            b.add(&p[0], &p[1]).unwrap(),
            b.mul(&p[0], &p[1]).unwrap(),
            b.div(&p[0], &p[1]).unwrap(),
        ]
    });
    // 256 + 1 = 257 is not representable in bf16 (8 mantissa bits): rounds to even, 256.
    assert_eq!(out[0].as_bf16(), [1.5, 3.0, -1.0, 256.0]);
    assert_eq!(out[1].as_bf16(), [0.5, 1.25, -6.0, 256.0]);
    assert_eq!(out[2].as_bf16(), [2.0, 5.0, -1.5, 256.0]);
}

#[test]
fn compare_and_select() {
    let a = Host::f32(&[1.0, 2.0, 3.0, f32::NAN], &[4]);
    let b = Host::f32(&[1.0, 3.0, 2.0, f32::NAN], &[4]);
    let out = run_with(&[a, b], |b, p| {
        let mut outs: Vec<Value> = [
            CompareDir::Eq,
            CompareDir::Ne,
            CompareDir::Lt,
            CompareDir::Le,
            CompareDir::Gt,
            CompareDir::Ge,
        ]
        .into_iter()
        .map(|d| b.compare(d, &p[0], &p[1]).unwrap())
        .collect();
        let lt = outs[2].clone();
        outs.push(b.select(&lt, &p[0], &p[1]).unwrap());
        outs
    });
    assert_eq!(out[0].as_bool(), [true, false, false, false]);
    assert_eq!(out[1].as_bool(), [false, true, true, true]);
    assert_eq!(out[2].as_bool(), [false, true, false, false]);
    assert_eq!(out[3].as_bool(), [true, true, false, false]);
    assert_eq!(out[4].as_bool(), [false, false, true, false]);
    assert_eq!(out[5].as_bool(), [true, false, true, false]);
    let sel = out[6].as_f32();
    assert_eq!(&sel[..3], [1.0, 2.0, 2.0]);
    assert!(sel[3].is_nan());
}

#[test]
fn compare_signed_unsigned_and_bool_select() {
    let a = Host::i64(&[-1, 5, 3], &[3]);
    let b = Host::i64(&[1, 5, -3], &[3]);
    let pred = Host::bool(&[true, false, true], &[3]);
    let out = run_with(&[a, b, pred], |b, p| {
        vec![
            b.compare(CompareDir::Lt, &p[0], &p[1]).unwrap(),
            b.select(&p[2], &p[0], &p[1]).unwrap(),
            b.not(&p[2]),
            b.and(&p[2], &p[2]).unwrap(),
        ]
    });
    assert_eq!(out[0].as_bool(), [true, false, false]);
    assert_eq!(out[1].as_i64(), [-1, 5, 3]);
    assert_eq!(out[2].as_bool(), [false, true, false]);
    assert_eq!(out[3].as_bool(), [true, false, true]);

    // A 0-d predicate selects whole tensors.
    let a = Host::f32(&[1.0, 2.0], &[2]);
    let b = Host::f32(&[3.0, 4.0], &[2]);
    let out = run_with(&[a, b, Host::bool(&[false], &[])], |b, p| {
        vec![b.select(&p[2], &p[0], &p[1]).unwrap()]
    });
    assert_eq!(out[0].as_f32(), [3.0, 4.0]);
}

/// `1 + 2^-8`: halfway between two neighbouring bf16 values.
const TIE: f32 = 1.0 + 1.0 / 256.0;

#[test]
fn convert_between_types() {
    let x = Host::f32(&[1.7, -1.7, 0.0, 3.0, TIE, -2.5], &[6]);
    let out = run_with(&[x], |b, p| {
        let i = b.convert(&p[0], DType::I64);
        let h = b.convert(&p[0], DType::BF16);
        let z = b.convert(&p[0], DType::Bool);
        let back = b.convert(&i, DType::F32);
        let from_bool = b.convert(&z, DType::F32);
        let same = b.convert(&p[0], DType::F32);
        vec![i, h, z, back, from_bool, same]
    });
    // Float to int truncates toward zero.
    assert_eq!(out[0].as_i64(), [1, -1, 0, 3, 1, -2]);
    // f32 -> bf16 rounds to nearest even: TIE = 1 + 2^-8 is a tie between 1 and
    // 1 + 2^-7 and goes to 1.
    let expect: Vec<u16> = [1.7, -1.7, 0.0, 3.0, TIE, -2.5]
        .iter()
        .map(|&v| bf16::from_f32(v).to_bits())
        .collect();
    assert_eq!(out[1].as_bf16_bits(), expect);
    assert_eq!(out[1].as_bf16()[4], 1.0);
    assert_eq!(out[2].as_bool(), [true, true, false, true, true, true]);
    assert_eq!(out[3].as_f32(), [1.0, -1.0, 0.0, 3.0, 1.0, -2.0]);
    assert_eq!(out[4].as_f32(), [1.0, 1.0, 0.0, 1.0, 1.0, 1.0]);
    assert_eq!(out[5].as_f32(), [1.7, -1.7, 0.0, 3.0, TIE, -2.5]);

    let big = Host::i64(&[i64::MAX, -3, 1 << 53], &[3]);
    let out = run_with(&[big], |b, p| {
        vec![
            b.convert(&p[0], DType::F32),
            b.convert(&p[0], DType::BF16),
            b.convert(&p[0], DType::Bool),
        ]
    });
    assert_eq!(
        out[0].as_f32(),
        [i64::MAX as f32, -3.0, (1u64 << 53) as f32]
    );
    assert_eq!(
        out[1].as_bf16(),
        [i64::MAX as f32, -3.0, (1u64 << 53) as f32]
    );
    assert_eq!(out[2].as_bool(), [true, true, true]);
}

// ---------------------------------------------------------------------------------------------
// Shape ops

#[test]
fn broadcast_reshape_transpose() {
    let x = Host::f32(&[1.0, 2.0, 3.0], &[3]);
    let m = Host::f32(&iota_f32(6), &[2, 3]);
    let out = run_with(&[x, m], |b, p| {
        let rows = b.broadcast_in_dim(&p[0], &[2, 3], &[1]).unwrap();
        let cols = b.broadcast_in_dim(&p[0], &[3, 2], &[0]).unwrap();
        let to = b.broadcast_to(&p[0], &[2, 1, 3]).unwrap();
        let r = b.reshape(&p[1], &[3, 2]).unwrap();
        let t = b.transpose(&p[1], &[1, 0]).unwrap();
        vec![rows, cols, to, r, t]
    });
    assert_eq!(out[0].as_f32(), [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    assert_eq!(out[1].as_f32(), [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]);
    assert_eq!(out[2].dims, [2, 1, 3]);
    assert_eq!(out[2].as_f32(), [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    assert_eq!(out[3].dims, [3, 2]);
    assert_eq!(out[3].as_f32(), iota_f32(6));
    assert_eq!(out[4].as_f32(), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);

    // A 3-d permutation against a hand loop.
    let src = iota_f32(24);
    let x = Host::f32(&src, &[2, 3, 4]);
    let out = run_with(&[x], |b, p| vec![b.transpose(&p[0], &[2, 0, 1]).unwrap()]);
    assert_eq!(out[0].dims, [4, 2, 3]);
    let mut expect = Vec::new();
    for k in 0..4 {
        for i in 0..2 {
            for j in 0..3 {
                expect.push(src[at(&[2, 3, 4], &[i, j, k])]);
            }
        }
    }
    assert_eq!(out[0].as_f32(), expect);
}

#[test]
fn builder_rejects_bad_shapes() {
    let mut b = Builder::new();
    let x = b.param(TensorType::new(DType::F32, [2, 3]));
    let y = b.param(TensorType::new(DType::F32, [3, 2]));
    let z = b.param(TensorType::new(DType::I64, [2, 3]));
    assert!(b.add(&x, &y).is_err());
    assert!(b.add(&x, &z).is_err());
    assert!(b.reshape(&x, &[4]).is_err());
    assert!(b.broadcast_in_dim(&x, &[2, 4], &[0, 1]).is_err());
    assert!(b.transpose(&x, &[0]).is_err());
    assert!(b.slice(&x, &[0, 0], &[3, 3], &[1, 1]).is_err());
    assert!(b.concatenate(&[&x, &z], 0).is_err());
    let err = b.add(&x, &y).unwrap_err().to_string();
    assert!(err.contains("stablehlo.add"), "{err}");
}

#[test]
fn slice_with_strides() {
    let x = Host::f32(&iota_f32(10), &[10]);
    let m = Host::f32(&iota_f32(20), &[4, 5]);
    let out = run_with(&[x, m], |b, p| {
        vec![
            b.slice(&p[0], &[1], &[9], &[3]).unwrap(),
            b.slice(&p[0], &[2], &[10], &[4]).unwrap(),
            b.slice(&p[1], &[1, 0], &[4, 5], &[2, 2]).unwrap(),
            b.slice_dim(&p[1], 1, 3, 5, 1).unwrap(),
        ]
    });
    assert_eq!(out[0].as_f32(), [1.0, 4.0, 7.0]);
    assert_eq!(out[1].as_f32(), [2.0, 6.0]);
    assert_eq!(out[2].dims, [2, 3]);
    assert_eq!(out[2].as_f32(), [5.0, 7.0, 9.0, 15.0, 17.0, 19.0]);
    assert_eq!(out[3].dims, [4, 2]);
    assert_eq!(
        out[3].as_f32(),
        [3.0, 4.0, 8.0, 9.0, 13.0, 14.0, 18.0, 19.0]
    );
}

#[test]
fn concatenate_dims() {
    let a = Host::i64(&[1, 2, 3, 4], &[2, 2]);
    let b = Host::i64(&[5, 6], &[1, 2]);
    let c = Host::i64(&[7, 8], &[2, 1]);
    let out = run_with(&[a, b, c], |b, p| {
        vec![
            b.concatenate(&[&p[0], &p[1]], 0).unwrap(),
            b.concatenate(&[&p[0], &p[2], &p[0]], 1).unwrap(),
        ]
    });
    assert_eq!(out[0].dims, [3, 2]);
    assert_eq!(out[0].as_i64(), [1, 2, 3, 4, 5, 6]);
    assert_eq!(out[1].dims, [2, 5]);
    assert_eq!(out[1].as_i64(), [1, 2, 7, 1, 2, 3, 4, 8, 3, 4]);
}

#[test]
fn pad_including_negative() {
    let x = Host::f32(&[1.0, 2.0, 3.0], &[3]);
    let m = Host::f32(&iota_f32(6), &[2, 3]);
    let out = run_with(&[x, m], |b, p| {
        let nine = b.constant(Literal::Float(9.0), DType::F32);
        vec![
            b.pad(&p[0], &nine, &[2], &[1], &[0]).unwrap(),
            // interior 1, then low 1 and a negative high edge that crops.
            b.pad(&p[0], &nine, &[1], &[-1], &[1]).unwrap(),
            // Negative low edge crops the front.
            b.pad(&p[0], &nine, &[-1], &[2], &[0]).unwrap(),
            b.pad(&p[1], &nine, &[0, 1], &[1, -1], &[0, 0]).unwrap(),
        ]
    });
    assert_eq!(out[0].as_f32(), [9.0, 9.0, 1.0, 2.0, 3.0, 9.0]);
    assert_eq!(out[1].as_f32(), [9.0, 1.0, 9.0, 2.0, 9.0]);
    assert_eq!(out[2].as_f32(), [2.0, 3.0, 9.0, 9.0]);
    assert_eq!(out[3].dims, [3, 3]);
    assert_eq!(
        out[3].as_f32(),
        [9.0, 0.0, 1.0, 9.0, 3.0, 4.0, 9.0, 9.0, 9.0]
    );
}

#[test]
fn reverse_and_iota() {
    let m = Host::f32(&iota_f32(6), &[2, 3]);
    let out = run_with(&[m], |b, p| {
        vec![
            b.reverse(&p[0], &[1]),
            b.reverse(&p[0], &[0, 1]),
            b.iota(&TensorType::new(DType::I64, [2, 3]), 1),
            b.iota(&TensorType::new(DType::I64, [2, 3]), 0),
            b.iota(&TensorType::new(DType::F32, [4]), 0),
        ]
    });
    assert_eq!(out[0].as_f32(), [2.0, 1.0, 0.0, 5.0, 4.0, 3.0]);
    assert_eq!(out[1].as_f32(), [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]);
    assert_eq!(out[2].as_i64(), [0, 1, 2, 0, 1, 2]);
    assert_eq!(out[3].as_i64(), [0, 0, 0, 1, 1, 1]);
    assert_eq!(out[4].as_f32(), [0.0, 1.0, 2.0, 3.0]);
}

// ---------------------------------------------------------------------------------------------
// Reductions

fn add_fn(b: &mut Builder, x: &Value, y: &Value) -> Value {
    b.add(x, y).unwrap()
}

fn max_fn(b: &mut Builder, x: &Value, y: &Value) -> Value {
    b.max(x, y).unwrap()
}

#[test]
fn reduce_sum_and_max() {
    let v = [3.0, -1.0, 4.0, 1.0, -5.0, 9.0];
    let m = Host::f32(&v, &[2, 3]);
    let out = run_with(&[m], |b, p| {
        let zero = b.constant(Literal::Float(0.0), DType::F32);
        let ninf = b.constant(Literal::Float(f64::NEG_INFINITY), DType::F32);
        vec![
            b.reduce(&p[0], &zero, &[1], add_fn),
            b.reduce(&p[0], &ninf, &[0], max_fn),
            b.reduce(&p[0], &zero, &[0, 1], add_fn),
        ]
    });
    assert_eq!(out[0].dims, [2]);
    assert_eq!(out[0].as_f32(), [6.0, 5.0]);
    assert_eq!(out[1].dims, [3]);
    assert_eq!(out[1].as_f32(), [3.0, -1.0, 9.0]);
    assert_eq!(out[2].dims, Vec::<i64>::new());
    assert_eq!(out[2].as_f32(), [11.0]);

    let ints = Host::i64(&[1, 2, 3, 4, 5, 6], &[3, 2]);
    let out = run_with(&[ints], |b, p| {
        let zero = b.constant(Literal::Int(0), DType::I64);
        vec![b.reduce(&p[0], &zero, &[0], add_fn)]
    });
    assert_eq!(out[0].as_i64(), [9, 12]);
}

#[test]
fn reduce_multi_argmax() {
    // Ties resolve to the first index, as torch.argmax does.
    let v = [1.0, 5.0, 5.0, 2.0, -3.0, -1.0, -2.0, -1.0];
    let m = Host::f32(&v, &[2, 4]);
    let out = run_with(&[m], |b, p| {
        let idx = b.iota(&TensorType::new(DType::I64, [2, 4]), 1);
        let ninf = b.constant(Literal::Float(f64::NEG_INFINITY), DType::F32);
        let zero = b.constant(Literal::Int(0), DType::I64);
        b.reduce_multi(&[&p[0], &idx], &[&ninf, &zero], &[1], |b, acc, new| {
            let gt = b.compare(CompareDir::Gt, &acc[0], &new[0]).unwrap();
            let eq = b.compare(CompareDir::Eq, &acc[0], &new[0]).unwrap();
            let lt_idx = b.compare(CompareDir::Lt, &acc[1], &new[1]).unwrap();
            let tie = b.and(&eq, &lt_idx).unwrap();
            let take_acc = b.or(&gt, &tie).unwrap();
            vec![
                b.select(&take_acc, &acc[0], &new[0]).unwrap(),
                b.select(&take_acc, &acc[1], &new[1]).unwrap(),
            ]
        })
    });
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].as_f32(), [5.0, -1.0]);
    assert_eq!(out[1].as_i64(), [1, 1]);
}

#[test]
fn reduce_window_max_pool() {
    let src: Vec<f32> = (0..16).map(|i| ((i * 7) % 16) as f32).collect();
    let x = Host::f32(&src, &[1, 1, 4, 4]);
    let out = run_with(&[x], |b, p| {
        let ninf = b.constant(Literal::Float(f64::NEG_INFINITY), DType::F32);
        vec![b.reduce_window(
            &p[0],
            &ninf,
            &[1, 1, 2, 2],
            &[1, 1, 2, 2],
            &[1, 1, 1, 1],
            &[(0, 0), (0, 0), (0, 0), (0, 0)],
            max_fn,
        )]
    });
    assert_eq!(out[0].dims, [1, 1, 2, 2]);
    let mut expect = Vec::new();
    for oy in 0..2 {
        for ox in 0..2 {
            let mut m = f32::NEG_INFINITY;
            for ky in 0..2 {
                for kx in 0..2 {
                    m = m.max(src[(oy * 2 + ky) * 4 + ox * 2 + kx]);
                }
            }
            expect.push(m);
        }
    }
    assert_eq!(out[0].as_f32(), expect);

    // Overlapping windows with padding (sum pool, 3 wide, stride 1, pad 1).
    let x = Host::f32(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let out = run_with(&[x], |b, p| {
        let zero = b.constant(Literal::Float(0.0), DType::F32);
        vec![b.reduce_window(&p[0], &zero, &[3], &[1], &[1], &[(1, 1)], add_fn)]
    });
    assert_eq!(out[0].as_f32(), [3.0, 6.0, 9.0, 7.0]);
}

// ---------------------------------------------------------------------------------------------
// Linear algebra

#[test]
fn dot_general_batched_matmul() {
    let (bn, m, k, n) = (2usize, 2usize, 3usize, 4usize);
    let lhs: Vec<f32> = (0..bn * m * k).map(|i| i as f32 - 5.0).collect();
    let rhs: Vec<f32> = (0..bn * k * n).map(|i| (i % 5) as f32 * 0.5).collect();
    let out = run_with(
        &[Host::f32(&lhs, &[2, 2, 3]), Host::f32(&rhs, &[2, 3, 4])],
        |b, p| {
            vec![b
                .dot_general(&p[0], &p[1], (&[0], &[0]), (&[2], &[1]))
                .unwrap()]
        },
    );
    assert_eq!(out[0].dims, [2, 2, 4]);
    let mut expect = vec![0f32; bn * m * n];
    for bi in 0..bn {
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0;
                for kk in 0..k {
                    s += lhs[(bi * m + i) * k + kk] * rhs[(bi * k + kk) * n + j];
                }
                expect[(bi * m + i) * n + j] = s;
            }
        }
    }
    assert_eq!(out[0].as_f32(), expect);

    // Plain matrix-vector product, contracting lhs dim 1 with rhs dim 0.
    let out = run_with(
        &[
            Host::f32(&[1.0, 2.0, 3.0, 4.0], &[2, 2]),
            Host::f32(&[10.0, 100.0], &[2]),
        ],
        |b, p| {
            vec![b
                .dot_general(&p[0], &p[1], (&[], &[]), (&[1], &[0]))
                .unwrap()]
        },
    );
    assert_eq!(out[0].as_f32(), [210.0, 430.0]);

    let mut b = Builder::new();
    let x = b.param(TensorType::new(DType::F32, [2, 3]));
    let y = b.param(TensorType::new(DType::F32, [2, 3]));
    assert!(b.dot_general(&x, &y, (&[], &[]), (&[1], &[0])).is_err());
}

#[test]
fn convolution_2d_against_loop() {
    let (c_in, h, w) = (2usize, 5usize, 4usize);
    let (c_out, kh, kw) = (3usize, 2usize, 3usize);
    let (sy, sx) = (2usize, 1usize);
    let (py, px) = (1usize, 1usize);
    let input: Vec<f32> = (0..c_in * h * w)
        .map(|i| ((i * 3) % 7) as f32 - 3.0)
        .collect();
    let kernel: Vec<f32> = (0..c_out * c_in * kh * kw)
        .map(|i| ((i * 5) % 11) as f32 * 0.25 - 1.0)
        .collect();
    let dims = ConvDims {
        strides: vec![sy as i64, sx as i64],
        padding: vec![(py as i64, py as i64), (px as i64, px as i64)],
        lhs_dilation: vec![1, 1],
        rhs_dilation: vec![1, 1],
        feature_group_count: 1,
        batch_group_count: 1,
    };
    let out = run_with(
        &[
            Host::f32(&input, &[1, c_in as i64, h as i64, w as i64]),
            Host::f32(&kernel, &[c_out as i64, c_in as i64, kh as i64, kw as i64]),
        ],
        |b, p| vec![b.convolution(&p[0], &p[1], &dims, p[0].dtype()).unwrap()],
    );
    let oh = (h + 2 * py - kh) / sy + 1;
    let ow = (w + 2 * px - kw) / sx + 1;
    assert_eq!(out[0].dims, [1, c_out as i64, oh as i64, ow as i64]);
    let mut expect = Vec::new();
    for o in 0..c_out {
        for y in 0..oh {
            for x in 0..ow {
                let mut s = 0.0f32;
                for c in 0..c_in {
                    for ky in 0..kh {
                        for kx in 0..kw {
                            let iy = (y * sy + ky) as i64 - py as i64;
                            let ix = (x * sx + kx) as i64 - px as i64;
                            if iy < 0 || ix < 0 || iy >= h as i64 || ix >= w as i64 {
                                continue;
                            }
                            s += input[(c * h + iy as usize) * w + ix as usize]
                                * kernel[((o * c_in + c) * kh + ky) * kw + kx];
                        }
                    }
                }
                expect.push(s);
            }
        }
    }
    let got = out[0].as_f32();
    for (i, (g, e)) in got.iter().zip(&expect).enumerate() {
        assert!((g - e).abs() < 1e-4, "element {i}: {g} vs {e}");
    }
}

// ---------------------------------------------------------------------------------------------
// Indexing

#[test]
fn gather_1d_index() {
    let x = Host::f32(&[10.0, 11.0, 12.0, 13.0, 14.0], &[5]);
    let idx = Host::i64(&[4, 0, 2, 2], &[4, 1]);
    let out = run_with(&[x, idx], |b, p| {
        vec![b.gather(
            &p[0],
            &p[1],
            &GatherDims {
                offset_dims: vec![],
                collapsed_slice_dims: vec![0],
                start_index_map: vec![0],
                index_vector_dim: 1,
                slice_sizes: vec![1],
            },
            &[4],
        )]
    });
    assert_eq!(out[0].as_f32(), [14.0, 10.0, 12.0, 12.0]);

    // Rows of a matrix (index_select along dim 0).
    let m = Host::f32(&iota_f32(12), &[4, 3]);
    let idx = Host::i64(&[3, 1], &[2, 1]);
    let out = run_with(&[m, idx], |b, p| {
        vec![b.gather(
            &p[0],
            &p[1],
            &GatherDims {
                offset_dims: vec![1],
                collapsed_slice_dims: vec![0],
                start_index_map: vec![0],
                index_vector_dim: 1,
                slice_sizes: vec![1, 3],
            },
            &[2, 3],
        )]
    });
    assert_eq!(out[0].as_f32(), [9.0, 10.0, 11.0, 3.0, 4.0, 5.0]);
}

#[test]
fn scatter_1d_index() {
    let x = Host::f32(&[1.0, 2.0, 3.0, 4.0, 5.0], &[5]);
    let idx = Host::i64(&[1, 3, 1], &[3, 1]);
    let upd = Host::f32(&[10.0, 20.0, 30.0], &[3]);
    let dims = ScatterDims {
        update_window_dims: vec![],
        inserted_window_dims: vec![0],
        scatter_dims_to_operand_dims: vec![0],
        index_vector_dim: 1,
    };
    let out = run_with(&[x.clone(), idx, upd.clone()], |b, p| {
        vec![b.scatter(&p[0], &p[1], &p[2], &dims, Some(add_fn))]
    });
    // Duplicate indices accumulate.
    assert_eq!(out[0].as_f32(), [1.0, 42.0, 3.0, 24.0, 5.0]);

    let idx = Host::i64(&[4, 0, 2], &[3, 1]);
    let out = run_with(&[x, idx, upd], |b, p| {
        vec![b.scatter(&p[0], &p[1], &p[2], &dims, None)]
    });
    assert_eq!(out[0].as_f32(), [20.0, 2.0, 30.0, 4.0, 10.0]);
}

#[test]
fn dynamic_slice_and_update() {
    let x = Host::f32(&iota_f32(12), &[3, 4]);
    let upd = Host::f32(&[-1.0, -2.0, -3.0, -4.0], &[2, 2]);
    let r = Host::i64(&[1], &[]);
    let c = Host::i64(&[3], &[]);
    let out = run_with(&[x, upd, r, c], |b, p| {
        let far = b.constant(Literal::Int(100), DType::I64);
        let neg = b.constant(Literal::Int(-5), DType::I64);
        vec![
            b.dynamic_slice(&p[0], &[p[2].clone(), p[2].clone()], &[2, 2]),
            // Start indices are clamped so the slice stays in range.
            b.dynamic_slice(&p[0], &[far.clone(), p[3].clone()], &[2, 2]),
            b.dynamic_update_slice(&p[0], &p[1], &[p[2].clone(), p[2].clone()]),
            b.dynamic_update_slice(&p[0], &p[1], &[neg, far]),
        ]
    });
    assert_eq!(out[0].as_f32(), [5.0, 6.0, 9.0, 10.0]);
    assert_eq!(out[1].as_f32(), [6.0, 7.0, 10.0, 11.0]);
    assert_eq!(
        out[2].as_f32(),
        [0.0, 1.0, 2.0, 3.0, 4.0, -1.0, -2.0, 7.0, 8.0, -3.0, -4.0, 11.0]
    );
    assert_eq!(
        out[3].as_f32(),
        [0.0, 1.0, -1.0, -2.0, 4.0, 5.0, -3.0, -4.0, 8.0, 9.0, 10.0, 11.0]
    );
}

// ---------------------------------------------------------------------------------------------
// Random bits, sort, constants

#[test]
fn rng_bit_generator_is_deterministic() {
    let gen = |state: &[u64]| {
        run_with(&[Host::u64(state, &[2])], |b, p| {
            let (next, bits) = b.rng_bit_generator(&p[0], &TensorType::new(DType::U32, [4, 8]));
            vec![next, bits]
        })
    };
    let a = gen(&[42, 7]);
    let b = gen(&[42, 7]);
    let c = gen(&[43, 7]);
    assert_eq!(a[0].dims, [2]);
    assert_eq!(a[1].dims, [4, 8]);
    assert_eq!(a[1].as_u32(), b[1].as_u32(), "same state, same bits");
    assert_eq!(a[0].as_u64(), b[0].as_u64(), "same state, same next state");
    assert_ne!(
        a[1].as_u32(),
        c[1].as_u32(),
        "different state, different bits"
    );
    assert_ne!(a[0].as_u64(), [42, 7], "the state advances");
    let bits = a[1].as_u32();
    let mut distinct = bits.clone();
    distinct.sort();
    distinct.dedup();
    assert!(distinct.len() > 28, "bits look random: {bits:?}");
    // Running from the advanced state gives new bits.
    let d = gen(&a[0].as_u64());
    assert_ne!(d[1].as_u32(), bits);
}

#[test]
fn sort_values_and_key_value() {
    let x = Host::f32(&[3.0, -1.0, 2.0, 0.5, 9.0, 8.0, 7.0, 9.0], &[2, 4]);
    let out = run_with(std::slice::from_ref(&x), |b, p| {
        b.sort(&[&p[0]], 1, |b, a| {
            b.compare(CompareDir::Lt, &a[0], &a[1]).unwrap()
        })
    });
    assert_eq!(out[0].as_f32(), [-1.0, 0.5, 2.0, 3.0, 7.0, 8.0, 9.0, 9.0]);

    // Sort with indices riding along (a stable argsort), descending.
    let out = run_with(&[x], |b, p| {
        let idx = b.iota(&TensorType::new(DType::I64, [2, 4]), 1);
        b.sort(&[&p[0], &idx], 1, |b, a| {
            b.compare(CompareDir::Gt, &a[0], &a[1]).unwrap()
        })
    });
    assert_eq!(out[0].as_f32(), [3.0, 2.0, 0.5, -1.0, 9.0, 9.0, 8.0, 7.0]);
    assert_eq!(out[1].as_i64(), [0, 2, 3, 1, 0, 3, 1, 2]);

    // Along dim 0 of integers.
    let m = Host::i64(&[5, 1, -2, 4], &[2, 2]);
    let out = run_with(&[m], |b, p| {
        b.sort(&[&p[0]], 0, |b, a| {
            b.compare(CompareDir::Lt, &a[0], &a[1]).unwrap()
        })
    });
    assert_eq!(out[0].as_i64(), [-2, 1, 5, 4]);
}

#[test]
fn literal_text() {
    assert_eq!(Literal::Float(f64::INFINITY).mlir(DType::F32), "0x7F800000");
    assert_eq!(
        Literal::Float(f64::NEG_INFINITY).mlir(DType::F32),
        "0xFF800000"
    );
    assert_eq!(Literal::Float(-1.5).mlir(DType::BF16), "0xBFC0");
    assert_eq!(
        Literal::Float(f64::NEG_INFINITY).mlir(DType::BF16),
        "0xFF80"
    );
    assert_eq!(Literal::Float(-0.0).mlir(DType::BF16), "0x8000");
    assert_eq!(Literal::Float(1.0).mlir(DType::F64), "0x3FF0000000000000");
    assert_eq!(Literal::Int(300).mlir(DType::I8), "44");
    assert_eq!(Literal::Int(-1).mlir(DType::U8), "255");
    assert_eq!(Literal::Float(2.9).mlir(DType::I64), "2");
    assert_eq!(Literal::Int(2).mlir(DType::Bool), "true");
    assert_eq!(Literal::Bool(false).mlir(DType::Bool), "false");
}

#[test]
fn constants_including_special_floats() {
    let mut b = Builder::new();
    let f32s: Vec<Value> = [
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -0.0,
        -2.75,
        1e-40, // f32 subnormal
    ]
    .into_iter()
    .map(|v| b.constant(Literal::Float(v), DType::F32))
    .collect();
    let bf16s: Vec<Value> = [-1.5, f64::NEG_INFINITY, f64::NAN, -3.0e38, 1.0 / 3.0]
        .into_iter()
        .map(|v| b.constant(Literal::Float(v), DType::BF16))
        .collect();
    let splat = b.splat(
        Literal::Float(f64::NEG_INFINITY),
        &TensorType::new(DType::BF16, [2, 3]),
    );
    let i8c = b.constant(Literal::Int(300), DType::I8);
    let i64c = b.splat(Literal::Int(i64::MIN), &TensorType::new(DType::I64, [2]));
    let t = b.constant(Literal::Bool(true), DType::Bool);
    let mut outs = f32s.clone();
    outs.extend(bf16s.iter().cloned());
    outs.extend([splat, i8c, i64c, t]);
    let out = run(b, &outs, &[]);

    let f: Vec<f32> = out[..6].iter().map(|h| h.as_f32()[0]).collect();
    assert_eq!(f[0], f32::INFINITY);
    assert_eq!(f[1], f32::NEG_INFINITY);
    assert!(f[2].is_nan());
    assert_eq!(f[3].to_bits(), (-0.0f32).to_bits());
    assert_eq!(f[4], -2.75);
    assert_eq!(f[5], 1e-40f32);

    let h: Vec<u16> = out[6..11].iter().map(|h| h.as_bf16_bits()[0]).collect();
    assert_eq!(h[0], 0xBFC0);
    assert_eq!(h[1], 0xFF80);
    assert!(bf16::from_bits(h[2]).is_nan());
    assert_eq!(h[3], bf16::from_f64(-3.0e38).to_bits());
    assert_eq!(h[4], bf16::from_f64(1.0 / 3.0).to_bits());
    assert_eq!(out[11].dims, [2, 3]);
    assert_eq!(out[11].as_bf16_bits(), [0xFF80; 6]);
    assert_eq!(out[12].as_i8(), [44]);
    assert_eq!(out[13].as_i64(), [i64::MIN, i64::MIN]);
    assert_eq!(out[14].as_bool(), [true]);
}

#[test]
fn vector_constants() {
    let mut b = Builder::new();
    let f = b.vector(
        &[
            Literal::Float(-2.5),
            Literal::Float(f64::NAN),
            Literal::Int(3),
        ],
        DType::F32,
    );
    let i = b.vector(&[Literal::Int(i64::MIN), Literal::Int(7)], DType::I64);
    let t = b.vector(&[Literal::Bool(false), Literal::Bool(true)], DType::Bool);
    let out = run(b, &[f, i, t], &[]);
    let v = out[0].as_f32();
    assert_eq!((v[0], v[2]), (-2.5, 3.0));
    assert!(v[1].is_nan());
    assert_eq!(out[1].as_i64(), [i64::MIN, 7]);
    assert_eq!(out[2].as_bool(), [false, true]);
}

#[test]
fn full_like_and_scalar_like() {
    let x = Host::bf16(&[1.0, 2.0, 3.0], &[3]);
    let out = run_with(&[x], |b, p| {
        let c = b.full_like(&p[0], Literal::Float(-0.5));
        let s = b.scalar_like(&p[0], Literal::Int(2));
        let s = b.broadcast_to(&s, &[3]).unwrap();
        let y = b.mul(&p[0], &s).unwrap();
        vec![c, b.add(&y, &p[0]).unwrap()]
    });
    assert_eq!(out[0].as_bf16(), [-0.5, -0.5, -0.5]);
    assert_eq!(out[1].as_bf16(), [3.0, 6.0, 9.0]);
}

// ---------------------------------------------------------------------------------------------
// Errors

#[test]
fn invalid_programs_return_err() {
    let c = client();
    let err = c
        .compile("module { this is not mlir }", &CompileOptions::default())
        .expect_err("garbage must not compile");
    match &err {
        Error::Plugin { message, .. } => assert!(!message.is_empty(), "{err}"),
        other => panic!("expected a plugin error, got {other:?}"),
    }

    // Well-formed text that the verifier rejects: a result type that does not match.
    let mut b = Builder::new();
    let x = b.param(TensorType::new(DType::F32, [4]));
    let y = b.emit1(
        "stablehlo.add",
        &[&x, &x],
        "",
        TensorType::new(DType::F32, [5]),
    );
    let mlir = b.finish(&[y]);
    let err = c
        .compile(&mlir, &CompileOptions::default())
        .expect_err("a mistyped add must not compile");
    match &err {
        Error::Plugin { message, .. } => {
            assert!(!message.is_empty(), "{err}");
            let text = err.to_string();
            assert!(text.contains(message.as_str()), "{text}");
        }
        other => panic!("expected a plugin error, got {other:?}"),
    }

    // A bad attribute: reshape-free transpose with an out-of-range permutation.
    let mut b = Builder::new();
    let x = b.param(TensorType::new(DType::F32, [2, 3]));
    let y = b.emit1(
        "stablehlo.transpose",
        &[&x],
        "permutation = array<i64: 0, 5>",
        TensorType::new(DType::F32, [3, 2]),
    );
    let mlir = b.finish(&[y]);
    assert!(matches!(
        c.compile(&mlir, &CompileOptions::default()),
        Err(Error::Plugin { .. })
    ));

    // The client keeps working after failed compiles.
    let out = run_with(&[Host::f32(&[1.0], &[1])], |b, p| {
        vec![b.add(&p[0], &p[0]).unwrap()]
    });
    assert_eq!(out[0].as_f32(), [2.0]);
}

#[test]
fn complex_remainder_is_refused_before_the_compiler() {
    // XLA's CPU compiler crashes on it; the builder refuses it with an error.
    let mut b = Builder::new();
    let z = b.param(TensorType::new(DType::C64, [2]));
    assert!(b.rem(&z, &z).is_err());
    let x = b.param(TensorType::new(DType::F32, [2]));
    assert!(b.rem(&x, &x).is_ok());
}
