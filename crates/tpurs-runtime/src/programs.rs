//! Compile cache tiers 2 and 3 (TorchTPU's names): compiled programs serialized to disk so
//! that a new process starts warm. Tier 2 is a directory shared by the processes of one
//! node (`TORCH_TPU_TIER2_COMPILATION_CACHE`, e.g. under `/dev/shm`; off unless set); tier 3
//! a persistent directory (`TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT`, default
//! `~/.cache/tpurs/programs`; set it to an empty string to turn it off).
//!
//! Layout: `<root>/<binary fingerprint>/<key>.bin`. The key hashes the program text and
//! the compile options; the fingerprint hashes tpurs' version, the plugin's identity
//! (platform, version, API version, file size and time), the host's CPU features and the
//! plugin's own compiler flags (`XLA_FLAGS`, `LIBTPU_INIT_ARGS`), so an upgrade, another
//! machine or other flags never load a stale program. Corrupt serialized programs
//! can crash the plugin or compute wrong numbers, so every entry carries a SHA-256 of its
//! bytes, checked before the plugin sees them; a corrupt or truncated entry is recompiled
//! (one warning) and rewritten. Writes go to a temporary file renamed into place, and a
//! lock on the key (striped over 256 lock files per directory) makes a second process wait
//! for the first one's compile instead of compiling the same program again. A tier holds at
//! most `TPURS_COMPILATION_CACHE_MAX_BYTES` (2 GiB for tier 2, 10 GiB for tier 3): after a
//! write that exceeds it, the least recently used entries (loads refresh an entry's time),
//! stale fingerprints first, are deleted down to 90% of it. A process learns the tier's size
//! by scanning it at its first write and counts its own writes after that; it scans again
//! past the budget or after writing a tenth of it, so other processes' writes can take the
//! tier that far over before one of them evicts.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use sha2::{Digest, Sha256};
use tpurs_pjrt::{Client, CompileOptions, LoadedExecutable};

use crate::error::Result;
use crate::metrics::{bump, Metrics};

const MAGIC: &[u8; 8] = b"TPURSX1\n";
const HEADER: usize = MAGIC.len() + 32 + 8;

/// One cache directory.
struct Tier {
    /// 2 or 3.
    level: u8,
    /// The tier's root; entries live in `root/<fingerprint>/`.
    root: PathBuf,
    dir: PathBuf,
    /// Bytes the root may hold; least recently used entries go first beyond it.
    max_bytes: u64,
    /// What this process knows of the root's size (`None` before its first write): the
    /// root is scanned again only past the budget or after a tenth of it was written, not
    /// on every write (a scan reads every entry's metadata, and a cache holds thousands).
    usage: Mutex<Option<Usage>>,
}

/// The root's size at the last scan plus this process's writes since.
#[derive(Clone, Copy)]
struct Usage {
    bytes: u64,
    written_since_scan: u64,
}

/// The on-disk tiers of the compile cache.
pub(crate) struct ProgramStore {
    tiers: Vec<Tier>,
}

/// What a tier holds for a key.
enum Lookup {
    Hit(LoadedExecutable),
    Miss,
}

impl ProgramStore {
    /// The tiers the environment asks for, under `client`'s fingerprint.
    pub fn from_env(client: &Client, plugin_path: &str) -> ProgramStore {
        let fingerprint = fingerprint(client, plugin_path);
        let mut tiers = Vec::new();
        if let Some(dir) = std::env::var_os("TORCH_TPU_TIER2_COMPILATION_CACHE") {
            if !dir.is_empty() {
                tiers.push(Tier::new(2, PathBuf::from(dir), &fingerprint));
            }
        }
        let tier3 = match std::env::var_os("TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT") {
            Some(dir) if dir.is_empty() => None,
            Some(dir) => Some(PathBuf::from(dir)),
            None => default_root(),
        };
        if let Some(dir) = tier3 {
            tiers.push(Tier::new(3, dir, &fingerprint));
        }
        ProgramStore { tiers }
    }

    /// The executable of `mlir` from the first tier that has it, or from `compile` (then
    /// stored in every tier).
    pub fn get_or_compile(
        &self,
        client: &Client,
        metrics: &Metrics,
        mlir: &str,
        options: &CompileOptions,
        compile: impl FnOnce() -> Result<LoadedExecutable>,
    ) -> Result<LoadedExecutable> {
        if self.tiers.is_empty() {
            return compile();
        }
        let key = hex(&Sha256::new()
            .chain_update(mlir.as_bytes())
            .chain_update(options.encode())
            .finalize());
        if let Some(exe) = self.load(client, metrics, &key, false) {
            return Ok(exe);
        }
        // One process compiles a program at a time; the others wait and then load it.
        let _lock = self.tiers[0].lock(&key);
        if let Some(exe) = self.load(client, metrics, &key, true) {
            return Ok(exe);
        }
        let exe = compile()?;
        if let Ok(bytes) = exe.serialize() {
            for tier in &self.tiers {
                tier.store(&key, &bytes);
            }
        }
        Ok(exe)
    }

    /// Looks `key` up tier by tier, copying a hit into the faster tiers that missed.
    /// `recheck` is the second look after taking the lock (not counted again as a miss).
    fn load(
        &self,
        client: &Client,
        metrics: &Metrics,
        key: &str,
        recheck: bool,
    ) -> Option<LoadedExecutable> {
        for (i, tier) in self.tiers.iter().enumerate() {
            match tier.load(client, metrics, key) {
                Lookup::Hit(exe) => {
                    bump(tier.hits(metrics), 1);
                    tier.touch(key);
                    if let Ok(bytes) = read_entry(&tier.path(key)) {
                        self.tiers[..i].iter().for_each(|t| t.store(key, &bytes));
                    }
                    return Some(exe);
                }
                Lookup::Miss if !recheck => bump(tier.misses(metrics), 1),
                Lookup::Miss => {}
            }
        }
        None
    }
}

impl Tier {
    /// Tier `level` under `root`: at most `TPURS_COMPILATION_CACHE_MAX_BYTES` (default 2 GiB
    /// for tier 2, which usually lives in memory, and 10 GiB for tier 3).
    fn new(level: u8, root: PathBuf, fingerprint: &str) -> Tier {
        let default = if level == 2 { 2 << 30 } else { 10 << 30 };
        let max_bytes = std::env::var("TPURS_COMPILATION_CACHE_MAX_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default);
        Tier {
            level,
            dir: root.join(fingerprint),
            root,
            max_bytes,
            usage: Mutex::new(None),
        }
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.bin"))
    }

    fn hits<'m>(&self, m: &'m Metrics) -> &'m AtomicU64 {
        if self.level == 2 {
            &m.tier2_hits
        } else {
            &m.tier3_hits
        }
    }

    fn misses<'m>(&self, m: &'m Metrics) -> &'m AtomicU64 {
        if self.level == 2 {
            &m.tier2_misses
        } else {
            &m.tier3_misses
        }
    }

    fn load(&self, client: &Client, metrics: &Metrics, key: &str) -> Lookup {
        let path = self.path(key);
        if !path.exists() {
            return Lookup::Miss;
        }
        let bytes = match read_entry(&path) {
            Ok(b) => b,
            Err(why) => {
                reject(metrics, &path, &why);
                return Lookup::Miss;
            }
        };
        match client.deserialize(&bytes) {
            Ok(exe) => Lookup::Hit(exe),
            Err(e) => {
                reject(metrics, &path, &e.to_string());
                Lookup::Miss
            }
        }
    }

    /// Writes an entry atomically (best effort: a cache that cannot be written is skipped).
    fn store(&self, key: &str, bytes: &[u8]) {
        if fs::create_dir_all(&self.dir).is_err() {
            return;
        }
        let tmp = self.dir.join(format!(
            ".{key}.{}.{:?}.tmp",
            std::process::id(),
            std::thread::current().id()
        ));
        let digest = Sha256::digest(bytes);
        let written = File::create(&tmp).and_then(|mut f| {
            f.write_all(MAGIC)?;
            f.write_all(&digest)?;
            f.write_all(&(bytes.len() as u64).to_le_bytes())?;
            f.write_all(bytes)
        });
        if written.is_err() || fs::rename(&tmp, self.path(key)).is_err() {
            let _ = fs::remove_file(&tmp);
            return;
        }
        self.account(key, (HEADER + bytes.len()) as u64);
    }

    /// Adds a written entry to the known size, scanning the root (and evicting) on the
    /// first write, past the budget, or once a tenth of the budget was written since the
    /// last scan (other processes write to the same root).
    fn account(&self, key: &str, len: u64) {
        let mut usage = self.usage.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(u) = usage.as_mut() {
            u.bytes += len;
            u.written_since_scan += len;
            if u.bytes <= self.max_bytes && u.written_since_scan <= self.max_bytes / 10 {
                return;
            }
        }
        *usage = Some(Usage {
            bytes: self.evict(key),
            written_since_scan: 0,
        });
    }

    /// Marks an entry used (eviction goes by modification time).
    fn touch(&self, key: &str) {
        if let Ok(f) = File::options().write(true).open(self.path(key)) {
            let _ = f.set_modified(std::time::SystemTime::now());
        }
    }

    /// Deletes least recently used entries (of every fingerprint, so stale versions go
    /// first) until the root holds at most 90% of its budget; `keep` is never deleted.
    /// Returns the bytes the root holds after.
    fn evict(&self, keep: &str) -> u64 {
        let mut entries: Vec<(std::time::SystemTime, u64, PathBuf)> = fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|d| fs::read_dir(d.path()).ok())
            .flatten()
            .flatten()
            .filter_map(|e| {
                let path = e.path();
                let meta = e.metadata().ok()?;
                let is_entry = path.extension().is_some_and(|x| x == "bin");
                Some((meta.modified().ok()?, meta.len(), path)).filter(|_| is_entry)
            })
            .collect();
        let mut total: u64 = entries.iter().map(|e| e.1).sum();
        if total <= self.max_bytes {
            return total;
        }
        entries.sort();
        let kept = self.path(keep);
        for (_, len, path) in entries {
            if total <= self.max_bytes / 10 * 9 {
                break;
            }
            if path != kept && fs::remove_file(&path).is_ok() {
                total -= len;
            }
        }
        total
    }

    /// An exclusive lock covering `key`, held until the returned file is dropped: one of 256
    /// lock files chosen by the key's first byte, so locks do not pile up beside entries.
    fn lock(&self, key: &str) -> Option<File> {
        let dir = self.dir.join("locks");
        fs::create_dir_all(&dir).ok()?;
        let f = File::create(dir.join(format!("{}.lock", &key[..2]))).ok()?;
        f.lock().ok()?;
        Some(f)
    }
}

/// The verified payload of an entry.
fn read_entry(path: &Path) -> std::result::Result<Vec<u8>, String> {
    let data = fs::read(path).map_err(|e| e.to_string())?;
    if data.len() < HEADER || &data[..MAGIC.len()] != MAGIC {
        return Err("not a tpurs cache entry".into());
    }
    let digest = &data[MAGIC.len()..MAGIC.len() + 32];
    let mut len = [0u8; 8];
    len.copy_from_slice(&data[MAGIC.len() + 32..HEADER]);
    let payload = &data[HEADER..];
    if u64::from_le_bytes(len) != payload.len() as u64 {
        return Err("truncated".into());
    }
    if Sha256::digest(payload).as_slice() != digest {
        return Err("checksum mismatch".into());
    }
    Ok(payload.to_vec())
}

fn reject(metrics: &Metrics, path: &Path, why: &str) {
    bump(&metrics.cache_rejected, 1);
    eprintln!(
        "tpurs: compile cache entry {} is unusable ({why}); recompiling it",
        path.display()
    );
    let _ = fs::remove_file(path);
}

fn default_root() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("tpurs").join("programs"))
}

/// Environment variables the plugins read for their compiler flags (XLA's CPU and GPU
/// plugins, libtpu): a program compiled under other flags may run differently.
const PLUGIN_FLAG_VARS: [&str; 2] = ["XLA_FLAGS", "LIBTPU_INIT_ARGS"];

/// What must match for a serialized program to be loadable here.
fn fingerprint(client: &Client, plugin_path: &str) -> String {
    let mut h = Sha256::new();
    h.update(env!("CARGO_PKG_VERSION"));
    h.update(client.platform_name());
    h.update(client.platform_version());
    h.update(format!("{:?}", client.api_version()));
    h.update(plugin_path);
    if let Ok(meta) = fs::metadata(plugin_path) {
        h.update(meta.len().to_le_bytes());
        if let Ok(t) = meta.modified() {
            h.update(format!("{t:?}"));
        }
    }
    h.update(cpu_features());
    for var in PLUGIN_FLAG_VARS {
        h.update(var);
        h.update(std::env::var_os(var).unwrap_or_default().as_encoded_bytes());
    }
    hex(&h.finalize())[..16].to_string()
}

/// The host CPU's feature flags (XLA compiles for the host it runs on).
fn cpu_features() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("flags") || l.starts_with("Features"))
                .map(str::to_string)
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
