//! Profiling: while a profile records (torch.profiler with the PrivateUse1 activity), every
//! program launch, compile and copy is recorded as a span with wall-clock nanoseconds, and
//! each launch is awaited so that its span covers the program's execution, not only its
//! enqueue. The bridge's kineto plugin drains the spans into torch's trace.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use tpurs_pjrt::Buffer;

use crate::error::Result;

/// What a span measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum SpanKind {
    /// A program ran on the device (from launch until its outputs were ready).
    Program = 0,
    /// A program was compiled (or loaded from the disk cache).
    Compile = 1,
    /// Bytes moved host to device, device to host or between devices.
    Copy = 2,
}

/// One recorded span.
#[derive(Clone, Debug)]
pub struct Span {
    /// What it measured.
    pub kind: SpanKind,
    /// Short name ("mm", "fused 12 ops", "compile", "copy host to device").
    pub name: String,
    /// Details: the ops of a fused program, the seconds of a compile.
    pub detail: String,
    /// Device ordinal.
    pub device: usize,
    /// Bytes moved (copies), else 0.
    pub bytes: u64,
    /// Start, nanoseconds since the Unix epoch.
    pub start_ns: i64,
    /// End, nanoseconds since the Unix epoch.
    pub end_ns: i64,
}

/// The spans of the current recording, if one is on. Device activities (programs, copies)
/// and host activities (compiles) are switched on separately, as profiler configs ask.
#[derive(Default)]
pub(crate) struct Recorder {
    device: AtomicBool,
    host: AtomicBool,
    spans: Mutex<Vec<Span>>,
}

/// Wall-clock nanoseconds since the Unix epoch (the clock torch's profiler uses).
pub(crate) fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

impl Recorder {
    /// True while spans of `kind` are recorded (one relaxed load: the hot path asks on
    /// every launch).
    pub fn on(&self, kind: SpanKind) -> bool {
        match kind {
            SpanKind::Program | SpanKind::Copy => &self.device,
            SpanKind::Compile => &self.host,
        }
        .load(Ordering::Relaxed)
    }

    /// Starts a recording of device and/or host activities (dropping spans nobody took).
    pub fn start(&self, device: bool, host: bool) {
        self.lock().clear();
        self.device.store(device, Ordering::Relaxed);
        self.host.store(host, Ordering::Relaxed);
    }

    /// Stops recording; the spans stay until taken.
    pub fn stop(&self) {
        self.device.store(false, Ordering::Relaxed);
        self.host.store(false, Ordering::Relaxed);
    }

    /// The recorded spans, removed from the recorder.
    pub fn take(&self) -> Vec<Span> {
        std::mem::take(&mut *self.lock())
    }

    /// Records a span that started at `start_ns` and ends now.
    pub fn record(
        &self,
        kind: SpanKind,
        name: String,
        detail: String,
        device: usize,
        bytes: u64,
        start_ns: i64,
    ) {
        let span = Span {
            kind,
            name,
            detail,
            device,
            bytes,
            start_ns,
            end_ns: now_ns(),
        };
        self.lock().push(span);
    }

    /// Records a program span: waits for `outputs` first so the span covers the execution.
    pub fn record_program(
        &self,
        name: String,
        detail: String,
        device: usize,
        start_ns: i64,
        outputs: &[Buffer],
    ) -> Result<()> {
        for b in outputs {
            b.block_until_ready()?;
        }
        self.record(SpanKind::Program, name, detail, device, 0, start_ns);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Span>> {
        self.spans.lock().unwrap_or_else(|e| e.into_inner())
    }
}
