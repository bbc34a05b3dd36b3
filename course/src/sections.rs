//! The named sections of a system message: an insertion-ordered map.
//!
//! Order is behaviour. The rendered prompt follows it, and a prompt whose bytes
//! move loses the provider's prompt cache. So updating a name keeps its
//! position, deleting then re-adding appends it, and serde keeps the order of
//! the JSON document (unlike `BTreeMap` or a default `serde_json::Map`).

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Section name → text; `None` (JSON `null`) asks a later replay to delete it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Sections(Ordered<String, Option<String>>);

/// The ordered map behind [`Sections`], generic so the replay can work on
/// borrowed names and texts and allocate only its final result.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Ordered<K, V> {
    entries: Vec<(K, V)>,
}

impl<K, V> Default for Ordered<K, V> {
    fn default() -> Self {
        Ordered {
            entries: Vec::new(),
        }
    }
}

impl<K: AsRef<str>, V> Ordered<K, V> {
    /// Sets `name`, keeping its position if present, appending it otherwise.
    /// Returns the previous value.
    pub(crate) fn insert(&mut self, name: K, value: V) -> Option<V> {
        match self.position(name.as_ref()) {
            Some(index) => Some(std::mem::replace(&mut self.entries[index].1, value)),
            None => {
                self.entries.push((name, value));
                None
            }
        }
    }

    /// Removes `name`, keeping the order of the others. Returns its value.
    pub(crate) fn remove(&mut self, name: &str) -> Option<V> {
        let index = self.position(name)?;
        Some(self.entries.remove(index).1)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn into_entries(self) -> impl Iterator<Item = (K, V)> {
        self.entries.into_iter()
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.entries
            .iter()
            .position(|(known, _)| known.as_ref() == name)
    }
}

impl Sections {
    /// No sections.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many names are present.
    pub fn len(&self) -> usize {
        self.0.entries.len()
    }

    /// True when no name is present.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of `name`: `None` if absent, `Some(None)` if present as `null`.
    pub fn get(&self, name: &str) -> Option<Option<&str>> {
        self.0
            .position(name)
            .map(|index| self.0.entries[index].1.as_deref())
    }

    /// Sets `name`, keeping its position if present, appending it otherwise.
    /// Returns the previous value.
    pub fn insert(
        &mut self,
        name: impl Into<String>,
        value: Option<String>,
    ) -> Option<Option<String>> {
        self.0.insert(name.into(), value)
    }

    /// Removes `name`, keeping the order of the others. Returns its value.
    pub fn remove(&mut self, name: &str) -> Option<Option<String>> {
        self.0.remove(name)
    }

    /// Names and values, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.0
            .entries
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_deref()))
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, Option<V>)> for Sections {
    fn from_iter<I: IntoIterator<Item = (K, Option<V>)>>(entries: I) -> Self {
        let mut sections = Sections::new();
        for (name, value) in entries {
            sections.insert(name, value.map(Into::into));
        }
        sections
    }
}

impl<K: Into<String>, V: Into<String>, const N: usize> From<[(K, Option<V>); N]> for Sections {
    fn from(entries: [(K, Option<V>); N]) -> Self {
        entries.into_iter().collect()
    }
}

impl Serialize for Sections {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (name, value) in self.iter() {
            map.serialize_entry(name, &value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Sections {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(SectionsVisitor)
    }
}

struct SectionsVisitor;

impl<'de> Visitor<'de> for SectionsVisitor {
    type Value = Sections;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of section names to strings or null")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Sections, A::Error> {
        let mut sections = Sections::new();
        while let Some((name, value)) = map.next_entry::<String, Option<String>>()? {
            sections.insert(name, value);
        }
        Ok(sections)
    }
}
