//! End-to-end tests against the XLA CPU PJRT plugin.
//!
//! The plugin is found via `TPURS_PJRT_PLUGIN` or the project's virtualenv;
//! a missing plugin is a test failure, not a skip.

use std::path::PathBuf;
use std::sync::OnceLock;

use tpurs_pjrt::{
    Buffer, Client, CompileOptions, ElementType, Error, LoadedExecutable, NamedValue,
};

const DEFAULT_PLUGIN: &str =
    "/work/main/.venv/lib/python3.11/site-packages/fastatomstruct_xla_cpu/libpjrt_cpu.so";

const ADD4: &str =
    "module { func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> { \
    %0 = stablehlo.add %a, %b : tensor<4xf32>  return %0 : tensor<4xf32> } }";

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
        Client::load(&plugin_path(), &[NamedValue::int64("cpu_device_count", 2)])
            .unwrap_or_else(|e| panic!("creating the CPU client failed: {e}"))
    })
}

fn add4() -> &'static LoadedExecutable {
    static EXE: OnceLock<LoadedExecutable> = OnceLock::new();
    EXE.get_or_init(|| {
        client()
            .compile(ADD4, &CompileOptions::default())
            .expect("compile add")
    })
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn to_f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn upload_f32(v: &[f32], dims: &[i64], device: usize) -> Buffer {
    client()
        .buffer_from_host(&f32s(v), ElementType::F32, dims, device)
        .expect("upload")
}

fn read_f32(b: &Buffer) -> Vec<f32> {
    to_f32s(&b.to_host_vec().expect("to_host"))
}

#[test]
fn client_basics() {
    let c = client();
    assert_eq!(c.device_count(), 2);
    assert_eq!(c.platform_name(), "cpu");
    let (major, minor) = c.api_version();
    assert_eq!(major, 0);
    assert!(minor >= 81, "plugin API 0.{minor}");
    for i in 0..2 {
        assert!(!c.device_kind(i).is_empty());
        assert!(!c.device_description(i).is_empty());
        assert_eq!(c.device_info(i).unwrap().process_index, 0);
    }
    assert_ne!(c.devices()[0].id, c.devices()[1].id);
    assert!(c.device_info(2).is_none());
    assert_eq!(c.device_kind(2), "");
    // Optional on CPU; must not crash either way.
    let _ = c.device_memory_stats(0);
    assert!(c.device_memory_stats(5).is_none());
    eprintln!(
        "platform {} {} api {major}.{minor} devices {:?} attrs {:?}",
        c.platform_name(),
        c.platform_version(),
        c.devices(),
        c.plugin_attributes()
    );
}

#[test]
fn add_on_both_devices() {
    let exe = add4();
    assert_eq!(exe.num_outputs(), 1);
    assert_eq!(
        exe.output_signature(),
        Some(vec![(ElementType::F32, vec![4])])
    );
    for dev in 0..2 {
        let a = upload_f32(&[1.0, 2.0, 3.0, 4.0], &[4], dev);
        let b = upload_f32(&[10.0, 20.0, 30.0, 40.0], &[4], dev);
        let out = exe.execute(&[&a, &b], dev).expect("execute");
        assert_eq!(out.len(), 1);
        let o = &out[0];
        assert_eq!(o.device_ordinal(), dev);
        assert_eq!(o.dims(), vec![4]);
        assert_eq!(o.element_type(), ElementType::F32);
        assert_eq!(o.query_metadata().unwrap(), (ElementType::F32, vec![4]));
        assert_eq!(read_f32(o), vec![11.0, 22.0, 33.0, 44.0]);
        assert!(o.is_ready().unwrap());
        assert!(o.on_device_size().unwrap() >= 16);
        assert!(!o.is_deleted().unwrap());
    }
}

#[test]
fn chained_execute_without_waiting() {
    let exe = add4();
    let one = upload_f32(&[1.0, 1.0, 1.0, 1.0], &[4], 1);
    let mut acc = upload_f32(&[0.0, 1.0, 2.0, 3.0], &[4], 1);
    for _ in 0..100 {
        acc = exe.execute(&[&acc, &one], 1).unwrap().pop().unwrap();
    }
    acc.block_until_ready().unwrap();
    assert_eq!(read_f32(&acc), vec![100.0, 101.0, 102.0, 103.0]);
}

#[test]
fn bad_mlir_returns_plugin_error() {
    let err = client()
        .compile("module { this is not mlir }", &CompileOptions::default())
        .expect_err("bad MLIR must fail");
    match &err {
        Error::Plugin { call, message, .. } => {
            assert_eq!(*call, "PJRT_Client_Compile");
            assert!(!message.is_empty());
        }
        other => panic!("expected a plugin error, got {other:?}"),
    }
    eprintln!("bad MLIR: {err}");
    // Type error in otherwise well-formed MLIR.
    let err = client()
        .compile(
            "module { func.func @main(%a: tensor<4xf32>) -> tensor<4xi32> { return %a : tensor<4xf32> } }",
            &CompileOptions::default(),
        )
        .expect_err("ill-typed MLIR must fail");
    assert!(matches!(err, Error::Plugin { .. }), "{err:?}");
    // Empty program is rejected before reaching the plugin.
    assert!(matches!(
        client().compile("  ", &CompileOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    // The process is still healthy.
    let a = upload_f32(&[1.0; 4], &[4], 0);
    assert_eq!(
        read_f32(&add4().execute(&[&a, &a], 0).unwrap()[0]),
        vec![2.0; 4]
    );
}

#[test]
fn invalid_arguments_are_errors() {
    let c = client();
    // Upload size mismatch.
    let e = c
        .buffer_from_host(&[0u8; 12], ElementType::F32, &[4], 0)
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    // Negative dimension.
    assert!(c.buffer_from_host(&[], ElementType::F32, &[-1], 0).is_err());
    // Bad device ordinal.
    assert!(matches!(
        c.buffer_from_host(&f32s(&[0.0; 4]), ElementType::F32, &[4], 2),
        Err(Error::InvalidArgument(_))
    ));
    let a = upload_f32(&[1.0; 4], &[4], 0);
    // Download into a wrong-sized slice.
    let mut small = [0u8; 8];
    assert!(matches!(
        a.to_host(&mut small),
        Err(Error::InvalidArgument(_))
    ));
    // Execute on a bad device / with the wrong number of arguments / shape.
    assert!(matches!(
        add4().execute(&[&a, &a], 7),
        Err(Error::InvalidArgument(_))
    ));
    let e = add4().execute(&[&a], 0).unwrap_err();
    eprintln!("wrong arity: {e}");
    assert!(matches!(e, Error::Plugin { .. }), "{e:?}");
    let wrong_shape = upload_f32(&[1.0; 6], &[2, 3], 0);
    let e = add4().execute(&[&a, &wrong_shape], 0).unwrap_err();
    eprintln!("wrong shape: {e}");
    assert!(matches!(e, Error::Plugin { .. }), "{e:?}");
    // copy_to_device to an invalid ordinal.
    assert!(matches!(
        a.copy_to_device(9),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn too_many_replicas_is_rejected_before_the_plugin() {
    let opts = CompileOptions {
        num_replicas: 4,
        portable: false,
        ..Default::default()
    };
    assert!(matches!(
        client().compile(ADD4, &opts),
        Err(Error::InvalidArgument(_))
    ));
    let opts = CompileOptions {
        num_replicas: 2,
        ..Default::default()
    };
    // Portable with 2 replicas is contradictory.
    assert!(matches!(
        client().compile(ADD4, &opts),
        Err(Error::InvalidArgument(_))
    ));
    let opts = CompileOptions {
        portable: false,
        device_assignment: Some(vec![vec![12345]]),
        ..Default::default()
    };
    assert!(matches!(
        client().compile(ADD4, &opts),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn non_portable_with_explicit_assignment() {
    let c = client();
    let id1 = i64::from(c.devices()[1].id);
    let opts = CompileOptions {
        portable: false,
        device_assignment: Some(vec![vec![id1]]),
        ..Default::default()
    };
    let exe = c.compile(ADD4, &opts).expect("compile pinned to device 1");
    let a = upload_f32(&[1.0, 2.0, 3.0, 4.0], &[4], 1);
    let out = exe
        .execute(&[&a, &a], 1)
        .expect("execute on its own device");
    assert_eq!(read_f32(&out[0]), vec![2.0, 4.0, 6.0, 8.0]);
}

#[test]
fn load_nonexistent_path_fails() {
    let p = PathBuf::from("/nonexistent/dir/libpjrt_nothing.so");
    match Client::load(&p, &[]) {
        Err(Error::Load { path, msg }) => {
            assert_eq!(path, p);
            assert!(!msg.is_empty());
            let shown = Error::Load { path, msg }.to_string();
            assert!(
                shown.contains("/nonexistent/dir/libpjrt_nothing.so"),
                "{shown}"
            );
        }
        other => panic!("expected Error::Load, got {other:?}"),
    }
}

#[test]
fn load_non_plugin_library_fails_cleanly() {
    // A real shared library without GetPjrtApi.
    let libc = [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.exists());
    if let Some(p) = libc {
        match Client::load(&p, &[]) {
            Err(Error::MissingSymbol { symbol, .. }) => assert_eq!(symbol, "GetPjrtApi"),
            other => panic!("expected MissingSymbol, got {other:?}"),
        }
    }
}

#[test]
fn copy_between_devices() {
    let a = upload_f32(&[5.0, 6.0, 7.0, 8.0], &[4], 0);
    let b = a.copy_to_device(1).expect("copy 0->1");
    assert_eq!(b.device_ordinal(), 1);
    assert_eq!(b.dims(), vec![4]);
    assert_eq!(read_f32(&b), vec![5.0, 6.0, 7.0, 8.0]);
    // The copy is usable by computations on device 1.
    let out = add4().execute(&[&b, &b], 1).unwrap();
    assert_eq!(read_f32(&out[0]), vec![10.0, 12.0, 14.0, 16.0]);
    // And back, chained without waiting.
    let back = out[0].copy_to_device(0).unwrap();
    assert_eq!(read_f32(&back), vec![10.0, 12.0, 14.0, 16.0]);
}

fn round_trip(ty: ElementType, bytes: &[u8], dims: &[i64]) {
    let c = client();
    for dev in 0..2 {
        let b = c.buffer_from_host(bytes, ty, dims, dev).unwrap();
        assert_eq!(b.element_type(), ty);
        assert_eq!(b.query_metadata().unwrap(), (ty, dims.to_vec()));
        assert_eq!(b.to_host_vec().unwrap(), bytes, "{ty:?} round trip");
    }
}

#[test]
fn round_trips() {
    // bf16: 1.0, -2.0, 0.5, 3.140625
    let bf16: Vec<u8> = [0x3f80u16, 0xc000, 0x3f00, 0x4049]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    round_trip(ElementType::BF16, &bf16, &[2, 2]);
    let i64s: Vec<u8> = [i64::MIN, -1, 0, i64::MAX, 42, 7]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    round_trip(ElementType::S64, &i64s, &[3, 2]);
    round_trip(ElementType::Pred, &[1, 0, 0, 1, 1], &[5]);
    round_trip(ElementType::U8, &[0, 255, 7], &[3]);
    round_trip(ElementType::F64, &2.5f64.to_le_bytes(), &[]);
    round_trip(ElementType::F32, &[], &[0, 3]);
}

#[test]
fn typed_computations() {
    let c = client();
    // bf16 multiply, i64 add and pred xor, as one program with 3 outputs.
    let mlir = "module { func.func @main(%a: tensor<2xbf16>, %b: tensor<2xi64>, %p: tensor<3xi1>) \
        -> (tensor<2xbf16>, tensor<2xi64>, tensor<3xi1>) { \
        %0 = stablehlo.multiply %a, %a : tensor<2xbf16> \
        %1 = stablehlo.add %b, %b : tensor<2xi64> \
        %2 = stablehlo.not %p : tensor<3xi1> \
        return %0, %1, %2 : tensor<2xbf16>, tensor<2xi64>, tensor<3xi1> } }";
    let exe = c
        .compile(mlir, &CompileOptions::default())
        .expect("compile");
    assert_eq!(exe.num_outputs(), 3);
    let a = c
        .buffer_from_host(&[0x00, 0x40, 0x40, 0xc0], ElementType::BF16, &[2], 1) // 2.0, -3.0
        .unwrap();
    let big = 1i64 << 40;
    let b: Vec<u8> = [big, -5].iter().flat_map(|x| x.to_le_bytes()).collect();
    let b = c.buffer_from_host(&b, ElementType::S64, &[2], 1).unwrap();
    let p = c
        .buffer_from_host(&[1, 0, 1], ElementType::Pred, &[3], 1)
        .unwrap();
    let out = exe.execute(&[&a, &b, &p], 1).unwrap();
    assert_eq!(out.len(), 3);
    // 4.0 = 0x4080, 9.0 = 0x4110
    assert_eq!(out[0].to_host_vec().unwrap(), [0x80, 0x40, 0x10, 0x41]);
    assert_eq!(out[0].element_type(), ElementType::BF16);
    let sums: Vec<i64> = out[1]
        .to_host_vec()
        .unwrap()
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(sums, vec![2 * big, -10]);
    assert_eq!(out[2].element_type(), ElementType::Pred);
    assert_eq!(out[2].to_host_vec().unwrap(), [0, 1, 0]);
}

#[test]
fn concurrent_launches_from_threads() {
    let exe = add4();
    std::thread::scope(|s| {
        for t in 0..4 {
            s.spawn(move || {
                let dev = t % 2;
                let one = upload_f32(&[1.0; 4], &[4], dev);
                let mut acc = upload_f32(&[t as f32; 4], &[4], dev);
                for _ in 0..50 {
                    acc = exe.execute(&[&acc, &one], dev).unwrap().pop().unwrap();
                }
                assert_eq!(read_f32(&acc), vec![t as f32 + 50.0; 4]);
            });
        }
    });
}

#[test]
fn env_option_override_compiles() {
    let opts = CompileOptions {
        env_overrides: vec![(
            "xla_cpu_enable_fast_math".into(),
            tpurs_pjrt::OverrideValue::Bool(false),
        )],
        ..Default::default()
    };
    let exe = client()
        .compile(ADD4, &opts)
        .expect("compile with override");
    let a = upload_f32(&[1.0; 4], &[4], 0);
    assert_eq!(
        read_f32(&exe.execute(&[&a, &a], 0).unwrap()[0]),
        vec![2.0; 4]
    );
}

/// Launch-overhead measurement; run with
/// `cargo test --release -p tpurs-pjrt --test cpu_plugin -- --ignored --nocapture`.
#[test]
#[ignore]
fn bench_execute() {
    use std::time::Instant;
    let exe = add4();
    let one = upload_f32(&[1.0; 4], &[4], 0);
    let mut acc = upload_f32(&[0.0; 4], &[4], 0);
    for _ in 0..1000 {
        acc = exe.execute(&[&acc, &one], 0).unwrap().pop().unwrap();
    }
    acc.block_until_ready().unwrap();

    const N: usize = 10_000;
    let t = Instant::now();
    for _ in 0..N {
        acc = exe.execute(&[&acc, &one], 0).unwrap().pop().unwrap();
    }
    let launch = t.elapsed();
    acc.block_until_ready().unwrap();
    let total = t.elapsed();
    assert_eq!(read_f32(&acc), vec![(N + 1000) as f32; 4]);
    println!(
        "chained execute (no await): {:.2} us/launch; incl. final drain {:.2} us/launch",
        launch.as_secs_f64() * 1e6 / N as f64,
        total.as_secs_f64() * 1e6 / N as f64
    );

    let a = upload_f32(&[1.0, 2.0, 3.0, 4.0], &[4], 0);
    let mut host = [0u8; 16];
    let t = Instant::now();
    for _ in 0..N {
        let out = exe.execute(&[&a, &one], 0).unwrap();
        out[0].to_host(&mut host).unwrap();
    }
    println!(
        "execute + to_host: {:.2} us/iter",
        t.elapsed().as_secs_f64() * 1e6 / N as f64
    );
    assert_eq!(to_f32s(&host), vec![2.0, 3.0, 4.0, 5.0]);

    let t = Instant::now();
    for _ in 0..N {
        let out = exe.execute(&[&a, &one], 0).unwrap();
        out[0].block_until_ready().unwrap();
    }
    println!(
        "execute + block_until_ready: {:.2} us/iter",
        t.elapsed().as_secs_f64() * 1e6 / N as f64
    );

    let data = f32s(&[1.0; 4]);
    let t = Instant::now();
    for _ in 0..N {
        let b = client()
            .buffer_from_host(&data, ElementType::F32, &[4], 0)
            .unwrap();
        drop(b);
    }
    println!(
        "buffer_from_host (16 B) + drop: {:.2} us/iter",
        t.elapsed().as_secs_f64() * 1e6 / N as f64
    );
}

#[test]
fn serialized_executable_loads_and_gives_the_same_results() {
    let bytes = add4().serialize().expect("serialize");
    assert!(!bytes.is_empty());
    let loaded = client().deserialize(&bytes).expect("deserialize");
    let a = upload_f32(&[1.0, 2.0, 3.0, 4.0], &[4], 0);
    let b = upload_f32(&[10.0, 20.0, 30.0, 40.0], &[4], 0);
    let out = loaded.execute(&[&a, &b], 0).expect("execute");
    assert_eq!(read_f32(&out[0]), vec![11.0, 22.0, 33.0, 44.0]);
    assert!(client().deserialize(&[]).is_err());
    assert!(client().deserialize(&bytes[..bytes.len() / 2]).is_err());
}

/// A sum over a vector sharded in two: the SPMD partitioner splits the program over two
/// partitions, each device gets its half and both get the replicated total.
const SHARDED_SUM: &str = r#"
module @sharded_sum attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%x: tensor<8xf32> {mhlo.sharding = "{devices=[2]0,1}"})
      -> (tensor<f32> {mhlo.sharding = "{replicated}"}) {
    %zero = stablehlo.constant dense<0.0> : tensor<f32>
    %sum = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [0]
      : (tensor<8xf32>, tensor<f32>) -> tensor<f32>
    return %sum : tensor<f32>
  }
}"#;

#[test]
fn spmd_program_runs_partitioned_over_two_devices() {
    let c = client();
    let ids: Vec<i64> = c.devices()[..2].iter().map(|d| i64::from(d.id)).collect();
    let opts = CompileOptions {
        num_partitions: 2,
        use_spmd_partitioning: true,
        portable: false,
        device_assignment: Some(vec![ids]),
        ..Default::default()
    };
    let exe = c.compile(SHARDED_SUM, &opts).expect("compile SPMD over 2");
    let halves = [
        upload_f32(&[1.0, 2.0, 3.0, 4.0], &[4], 0),
        upload_f32(&[10.0, 20.0, 30.0, 40.0], &[4], 1),
    ];
    let outs = exe
        .execute_replicated(&[vec![&halves[0]], vec![&halves[1]]], &[0, 1])
        .expect("execute both partitions");
    for (d, out) in outs.iter().enumerate() {
        assert_eq!(read_f32(&out[0]), vec![110.0], "partition {d}");
    }
}

/// Host memory that says when it is released.
struct Owned {
    bytes: Vec<u8>,
    released: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for Owned {
    fn drop(&mut self) {
        self.released
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn async_upload_holds_the_host_bytes_until_done() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use tpurs_pjrt::HostBytes;
    let c = client();
    let values: Vec<f32> = (0..262_144).map(|i| i as f32).collect();
    let released = std::sync::Arc::new(AtomicBool::new(false));
    let owned = Box::new(Owned {
        bytes: f32s(&values),
        released: released.clone(),
    });
    let (ptr, len) = (owned.bytes.as_ptr(), owned.bytes.len());
    // SAFETY: `owned` keeps the bytes alive and nothing writes them.
    let bytes = unsafe { HostBytes::new(ptr, len, owned) };
    let (buffer, pending) = c
        .buffer_from_host_async(bytes, ElementType::F32, &[262_144], 0)
        .unwrap();
    // 1 MiB is over the plugin's limit for copying during the call.
    let pending = pending.expect("the plugin reads the bytes after the call");
    assert!(!released.load(Ordering::SeqCst));
    assert_eq!(read_f32(&buffer), values);
    pending.wait().unwrap();
    assert!(released.load(Ordering::SeqCst));

    // A wrong size is refused and the bytes released at once.
    let released = std::sync::Arc::new(AtomicBool::new(false));
    let owned = Box::new(Owned {
        bytes: vec![0; 12],
        released: released.clone(),
    });
    let (ptr, len) = (owned.bytes.as_ptr(), owned.bytes.len());
    // SAFETY: as above.
    let bytes = unsafe { HostBytes::new(ptr, len, owned) };
    assert!(c
        .buffer_from_host_async(bytes, ElementType::F32, &[4], 0)
        .is_err());
    assert!(released.load(Ordering::SeqCst));
}

#[test]
fn aliased_arguments_are_donated_unless_kept() {
    const ADD_INTO_A: &str =
        "module { func.func @main(%a: tensor<4xf32> {tf.aliasing_output = 0 : i32}, \
        %b: tensor<4xf32>) -> tensor<4xf32> { \
        %0 = stablehlo.add %a, %b : tensor<4xf32>  return %0 : tensor<4xf32> } }";
    let c = client();
    let exe = c
        .compile(ADD_INTO_A, &CompileOptions::default())
        .expect("compile");
    let b = upload_f32(&[10.0, 20.0, 30.0, 40.0], &[4], 0);

    let a = upload_f32(&[1.0, 2.0, 3.0, 4.0], &[4], 0);
    let out = exe.execute_donating(&[&a, &b], 0, &[0]).expect("execute");
    assert_eq!(read_f32(&out[0]), vec![11.0, 22.0, 33.0, 44.0]);
    assert!(!a.is_deleted().unwrap(), "a kept argument stays valid");
    assert_eq!(read_f32(&a), vec![1.0, 2.0, 3.0, 4.0]);

    let out = exe.execute_donating(&[&a, &b], 0, &[]).expect("execute");
    assert_eq!(read_f32(&out[0]), vec![11.0, 22.0, 33.0, 44.0]);
    assert!(a.is_deleted().unwrap(), "a donated argument is gone");
    assert!(
        !b.is_deleted().unwrap(),
        "an argument the program does not alias stays"
    );
}
