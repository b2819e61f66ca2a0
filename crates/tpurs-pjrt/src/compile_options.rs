//! `xla.CompileOptionsProto` encoder (a tiny hand-written protobuf writer, so
//! that no protobuf dependency is needed).
//!
//! Only the fields we use are encoded. Proto3 rules apply: scalar fields equal
//! to their default (0 / false / empty) are omitted.
//!
//! Field numbers (xla/pjrt/proto/compile_options.proto, xla/xla_data.proto):
//! - `CompileOptionsProto`: 3 `executable_build_options`,
//!   4 `compile_portable_executable`, 7 `env_option_overrides`
//!   (`map<string, OptionOverrideProto>`).
//! - `ExecutableBuildOptionsProto`: 1 `device_ordinal`, 4 `num_replicas`,
//!   5 `num_partitions`, 6 `use_spmd_partitioning`, 9 `device_assignment`.
//! - `DeviceAssignmentProto`: 1 `replica_count`, 2 `computation_count`,
//!   3 repeated `ComputationDevice { repeated int64 replica_device_ids = 1 }`.
//! - `OptionOverrideProto`: oneof 1 string, 2 bool, 3 int64, 4 double.

/// Value of one `env_option_overrides` entry (`xla.OptionOverrideProto`).
#[derive(Debug, Clone, PartialEq)]
pub enum OverrideValue {
    /// `string_field = 1`.
    Str(String),
    /// `bool_field = 2`.
    Bool(bool),
    /// `int_field = 3`.
    Int(i64),
    /// `double_field = 4`.
    Double(f64),
}

/// Options for [`crate::Client::compile`], serialized as a
/// `CompileOptionsProto`.
///
/// The default is one replica, one partition, portable. Portable executables
/// can be launched on any addressable device (the device is chosen at execute
/// time); they require `num_replicas == num_partitions == 1` and no device
/// assignment.
#[derive(Debug, Clone, PartialEq)]
pub struct CompileOptions {
    /// `ExecutableBuildOptionsProto.num_replicas`.
    pub num_replicas: i64,
    /// `ExecutableBuildOptionsProto.num_partitions`.
    pub num_partitions: i64,
    /// `CompileOptionsProto.compile_portable_executable`.
    pub portable: bool,
    /// `ExecutableBuildOptionsProto.use_spmd_partitioning`.
    pub use_spmd_partitioning: bool,
    /// Static device assignment: `device_assignment[replica][partition]` is a
    /// device id (as reported by [`crate::DeviceInfo::id`]). `None` lets the
    /// plugin choose its default assignment.
    pub device_assignment: Option<Vec<Vec<i64>>>,
    /// `CompileOptionsProto.env_option_overrides` (e.g. XLA debug flags such
    /// as `xla_cpu_enable_fast_math`).
    pub env_overrides: Vec<(String, OverrideValue)>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            num_replicas: 1,
            num_partitions: 1,
            portable: true,
            use_spmd_partitioning: false,
            device_assignment: None,
            env_overrides: Vec::new(),
        }
    }
}

impl CompileOptions {
    /// Serializes to `CompileOptionsProto` bytes (never empty: the build
    /// options sub-message is always present).
    pub fn encode(&self) -> Vec<u8> {
        let mut build = Vec::new();
        put_int64(&mut build, 4, self.num_replicas);
        put_int64(&mut build, 5, self.num_partitions);
        put_bool(&mut build, 6, self.use_spmd_partitioning);
        if let Some(da) = &self.device_assignment {
            put_bytes(&mut build, 9, &encode_device_assignment(da));
        }

        let mut out = Vec::new();
        // Always emitted (even if empty) so the serialized options are never
        // empty: the plugin aborts on empty compile options.
        put_bytes(&mut out, 3, &build);
        put_bool(&mut out, 4, self.portable);
        for (key, value) in &self.env_overrides {
            let mut v = Vec::new();
            match value {
                OverrideValue::Str(s) => put_bytes(&mut v, 1, s.as_bytes()),
                OverrideValue::Bool(b) => {
                    // oneof members are emitted even when they hold the
                    // default value (presence matters).
                    put_tag(&mut v, 2, WIRE_VARINT);
                    put_varint(&mut v, *b as u64);
                }
                OverrideValue::Int(i) => {
                    put_tag(&mut v, 3, WIRE_VARINT);
                    put_varint(&mut v, *i as u64);
                }
                OverrideValue::Double(d) => {
                    put_tag(&mut v, 4, WIRE_FIXED64);
                    v.extend_from_slice(&d.to_le_bytes());
                }
            }
            let mut entry = Vec::new();
            // Map entries always carry key and value.
            put_bytes(&mut entry, 1, key.as_bytes());
            put_bytes(&mut entry, 2, &v);
            put_bytes(&mut out, 7, &entry);
        }
        out
    }
}

fn encode_device_assignment(da: &[Vec<i64>]) -> Vec<u8> {
    let replicas = da.len();
    let computations = da.first().map_or(0, Vec::len);
    let mut out = Vec::new();
    put_int64(&mut out, 1, replicas as i64);
    put_int64(&mut out, 2, computations as i64);
    // DeviceAssignmentProto is computation-major: one ComputationDevice per
    // partition, listing the device of every replica.
    for c in 0..computations {
        let mut packed = Vec::new();
        for row in da {
            put_varint(&mut packed, row.get(c).copied().unwrap_or(0) as u64);
        }
        let mut cd = Vec::new();
        put_bytes(&mut cd, 1, &packed);
        put_bytes(&mut out, 3, &cd);
    }
    out
}

const WIRE_VARINT: u8 = 0;
const WIRE_FIXED64: u8 = 1;
const WIRE_LEN: u8 = 2;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_tag(out: &mut Vec<u8>, field: u32, wire: u8) {
    put_varint(out, (u64::from(field) << 3) | u64::from(wire));
}

/// int64/int32 field (negative values use the 10-byte two's complement form,
/// as protobuf does for both int32 and int64). Omitted when zero.
fn put_int64(out: &mut Vec<u8>, field: u32, v: i64) {
    if v != 0 {
        put_tag(out, field, WIRE_VARINT);
        put_varint(out, v as u64);
    }
}

/// bool field, omitted when false.
fn put_bool(out: &mut Vec<u8>, field: u32, v: bool) {
    if v {
        put_tag(out, field, WIRE_VARINT);
        put_varint(out, 1);
    }
}

/// Length-delimited field (bytes, string, sub-message, packed repeated).
fn put_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_tag(out, field, WIRE_LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_non_portable() {
        let o = CompileOptions {
            portable: false,
            ..Default::default()
        };
        assert_eq!(o.encode(), [0x1a, 0x04, 0x20, 0x01, 0x28, 0x01]);
    }

    #[test]
    fn default_is_portable() {
        assert_eq!(
            CompileOptions::default().encode(),
            [0x1a, 0x04, 0x20, 0x01, 0x28, 0x01, 0x20, 0x01]
        );
    }

    #[test]
    fn varints() {
        let mut v = Vec::new();
        put_varint(&mut v, 300);
        assert_eq!(v, [0xac, 0x02]);
        let mut v = Vec::new();
        put_int64(&mut v, 1, -1);
        assert_eq!(v.len(), 11);
        assert_eq!(v[0], 0x08);
        assert_eq!(&v[1..10], &[0xff; 9]);
        assert_eq!(v[10], 0x01);
    }

    #[test]
    fn device_assignment_and_spmd() {
        let o = CompileOptions {
            num_replicas: 2,
            num_partitions: 1,
            portable: false,
            use_spmd_partitioning: true,
            device_assignment: Some(vec![vec![0], vec![1]]),
            env_overrides: vec![],
        };
        // DeviceAssignmentProto{replica_count 2, computation_count 1,
        // computation_devices [{replica_device_ids [0, 1]}]}
        let da = [0x08, 0x02, 0x10, 0x01, 0x1a, 0x04, 0x0a, 0x02, 0x00, 0x01];
        let mut build = vec![0x20, 0x02, 0x28, 0x01, 0x30, 0x01, 0x4a, da.len() as u8];
        build.extend_from_slice(&da);
        let mut want = vec![0x1a, build.len() as u8];
        want.extend_from_slice(&build);
        assert_eq!(o.encode(), want);
    }

    #[test]
    fn device_assignment_is_computation_major() {
        // 1 replica x 2 partitions on devices 3 and 5.
        let enc = encode_device_assignment(&[vec![3, 5]]);
        assert_eq!(
            enc,
            [0x08, 0x01, 0x10, 0x02, 0x1a, 0x03, 0x0a, 0x01, 0x03, 0x1a, 0x03, 0x0a, 0x01, 0x05]
        );
    }

    #[test]
    fn env_overrides() {
        let o = CompileOptions {
            env_overrides: vec![
                ("a".into(), OverrideValue::Bool(false)),
                ("b".into(), OverrideValue::Int(7)),
                ("c".into(), OverrideValue::Str("x".into())),
                ("d".into(), OverrideValue::Double(1.0)),
            ],
            ..Default::default()
        };
        let mut want = vec![0x1a, 0x04, 0x20, 0x01, 0x28, 0x01, 0x20, 0x01];
        // {key "a", value {bool_field false}}
        want.extend_from_slice(&[0x3a, 0x07, 0x0a, 0x01, b'a', 0x12, 0x02, 0x10, 0x00]);
        // {key "b", value {int_field 7}}
        want.extend_from_slice(&[0x3a, 0x07, 0x0a, 0x01, b'b', 0x12, 0x02, 0x18, 0x07]);
        // {key "c", value {string_field "x"}}
        want.extend_from_slice(&[0x3a, 0x08, 0x0a, 0x01, b'c', 0x12, 0x03, 0x0a, 0x01, b'x']);
        // {key "d", value {double_field 1.0}}
        want.extend_from_slice(&[0x3a, 0x0e, 0x0a, 0x01, b'd', 0x12, 0x09, 0x21]);
        want.extend_from_slice(&1.0f64.to_le_bytes());
        assert_eq!(o.encode(), want);
    }
}
