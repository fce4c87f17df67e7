//! A result's extras: the figures its benchmark recorded (a JSON object
//! the family alone reads) beside the keys the harness and the reports
//! write and read, which are typed fields here. On disk and in JSON they
//! stay one object with the same names (`compared_on`, `counter`, ...), in
//! the same order, so stored runs read back as before; a value of the
//! wrong type (a run written by hand) stays in the family's object.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

type Object = Map<String, Value>;

/// One cache level a result's machine has: its number and size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CacheLevel {
    pub(crate) level: u64,
    /// As written (an integer from the machine, a float from a test).
    pub(crate) bytes: serde_json::Number,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Extras {
    /// The parameter whose values are compared with each other as
    /// configurations are (`cmd` for `cmd.run`).
    pub(crate) compared_on: Option<String>,
    /// The event a derived counter result counts (`report::counters`).
    pub(crate) counter: Option<String>,
    /// Per event, why the counters could not be read.
    pub(crate) counters_unavailable: Option<Object>,
    /// The command line a result ran (`cmd.run`).
    pub(crate) command: Option<String>,
    /// The caches of the machine that ran it, and the bytes the point
    /// works on: the reports' cache-regime bands.
    pub(crate) caches: Option<Vec<CacheLevel>>,
    pub(crate) working_set_bytes: Option<serde_json::Number>,
    /// How long the harness waited for a quiet machine, and how often in vain.
    pub(crate) quiet_waited_s: Option<f64>,
    pub(crate) quiet_in_vain: Option<u64>,
    /// What the kernel settings read back as (`thp=never`).
    pub(crate) kernel_settings_read_back: Option<Vec<String>>,
    /// The rest: what the benchmark's family recorded, for it alone to read.
    pub(crate) family: Object,
}

/// Move key `k` out of `m` into `slot` when it holds a `T`.
fn take<T: serde::de::DeserializeOwned>(m: &mut Object, k: &str, slot: &mut Option<T>) {
    if let Some(v) = m.get(k) {
        if let Ok(t) = serde_json::from_value(v.clone()) {
            *slot = Some(t);
            m.remove(k);
        }
    }
}

fn put<T: Serialize>(m: &mut Object, k: &str, v: &Option<T>) {
    if let Some(v) = v {
        if let Ok(v) = serde_json::to_value(v) {
            m.insert(k.to_string(), v);
        }
    }
}

impl Extras {
    /// The JSON edge: typed keys out of the object, the rest the family's.
    pub(crate) fn from_map(mut m: Object) -> Extras {
        let mut e = Extras::default();
        take(&mut m, "compared_on", &mut e.compared_on);
        take(&mut m, "counter", &mut e.counter);
        take(&mut m, "counters_unavailable", &mut e.counters_unavailable);
        take(&mut m, "command", &mut e.command);
        take(&mut m, "caches", &mut e.caches);
        take(&mut m, "working_set_bytes", &mut e.working_set_bytes);
        take(&mut m, "quiet_waited_s", &mut e.quiet_waited_s);
        take(&mut m, "quiet_in_vain", &mut e.quiet_in_vain);
        take(&mut m, "kernel_settings_read_back", &mut e.kernel_settings_read_back);
        e.family = m;
        e
    }

    /// The one JSON object, every key by its name.
    pub(crate) fn to_map(&self) -> Object {
        let mut m = self.family.clone();
        put(&mut m, "compared_on", &self.compared_on);
        put(&mut m, "counter", &self.counter);
        put(&mut m, "counters_unavailable", &self.counters_unavailable);
        put(&mut m, "command", &self.command);
        put(&mut m, "caches", &self.caches);
        put(&mut m, "working_set_bytes", &self.working_set_bytes);
        put(&mut m, "quiet_waited_s", &self.quiet_waited_s);
        put(&mut m, "quiet_in_vain", &self.quiet_in_vain);
        put(&mut m, "kernel_settings_read_back", &self.kernel_settings_read_back);
        m
    }

    /// A family's figure.
    pub(crate) fn get(&self, k: &str) -> Option<&Value> {
        self.family.get(k)
    }

    /// A raw figure's value per sample (`NAME_samples`, [`put_part`]), as
    /// stored: `None` when there is none or it is not all numbers.
    pub(crate) fn part_samples(&self, name: &str) -> Option<Vec<f64>> {
        let a = self.family.get(&part_key(name))?.as_array()?;
        a.iter().map(Value::as_f64).collect()
    }

    /// Add a figure by name (a typed key lands in its field); tests forge
    /// stored extras with it.
    #[cfg(test)]
    pub(crate) fn insert(&mut self, k: String, v: Value) {
        let mut m = self.to_map();
        m.insert(k, v);
        *self = Extras::from_map(m);
    }
}

/// Where a raw figure's per-sample values are kept among a result's extras.
pub(crate) fn part_key(name: &str) -> String {
    format!("{name}_samples")
}

/// Keep a raw figure beside the samples a derived figure was computed from
/// (`harness::result`): its median under `NAME`, its values under
/// [`part_key`]; `Extras::part_samples` reads them back.
pub(crate) fn put_part(family: &mut Object, name: &str, median: Option<f64>, all: &[f64]) {
    if let Some(m) = median {
        family.insert(name.to_string(), m.into());
    }
    family.insert(part_key(name), all.to_vec().into());
}

impl From<Object> for Extras {
    fn from(m: Object) -> Extras {
        Extras::from_map(m)
    }
}

impl Serialize for Extras {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_map().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Extras {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Extras, D::Error> {
        Object::deserialize(d).map(Extras::from_map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_is_the_same_object_and_typed_keys_are_fields() {
        let text = r#"{"caches":[{"bytes":32768,"level":1}],"compared_on":"cmd","counter":"cycles","quiet_in_vain":2,"quiet_waited_s":0.5,"regime":"L1","working_set_bytes":4096}"#;
        let e: Extras = serde_json::from_str(text).unwrap();
        assert_eq!(e.compared_on.as_deref(), Some("cmd"));
        assert_eq!(e.caches.as_ref().unwrap()[0], CacheLevel { level: 1, bytes: 32768.into() });
        assert_eq!(e.quiet_in_vain, Some(2));
        assert_eq!(e.get("regime"), Some(&Value::from("L1")));
        assert!(e.get("compared_on").is_none(), "a typed key is not the family's");
        assert_eq!(serde_json::to_string(&e).unwrap(), text, "byte for byte");
    }

    #[test]
    fn a_value_of_the_wrong_type_stays_in_the_object() {
        let e: Extras = serde_json::from_str(r#"{"compared_on":3}"#).unwrap();
        assert_eq!(e.compared_on, None);
        assert_eq!(serde_json::to_string(&e).unwrap(), r#"{"compared_on":3}"#);
    }
}
