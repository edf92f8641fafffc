//! The facets file (format 2.5): each filter's values with the documents that have them, and
//! each sort key's value of each document that has one; from 2.8, also the partitions (code
//! files) holding chunks of each value's documents, so a filtered meaning search reads only
//! partitions that may hold chunks of pages that pass. A query fetches it only when it filters,
//! sorts or asks for filter counts; an index whose pages have none has no facets file.
//!
//! Layout (`docs/FORMAT.md`): `SXfc` (or, with partitions, `SXfp`), then the filters — their
//! count, and each filter's name, its values' count, and each value with its documents (count,
//! then number deltas, increasing) — then the sort keys: their count, and each key's name, its
//! entries' count and each entry's document delta (increasing) and value; then (`SXfp` only) the
//! partition count and, for each filter value in the order above, its partitions (count, then
//! deltas, increasing). Names and values are length-prefixed UTF-8.

use std::collections::{BTreeMap, HashSet};

use crate::codec::{put_string, put_varint, ByteReader, DecodeError};
use crate::filters::{Filter, SortOrder};

use super::files::DocumentInfo;

/// First bytes of a facets file.
pub const FACETS_MAGIC: &[u8; 4] = b"SXfc";
/// First bytes of a facets file that lists each filter value's partitions (2.8).
pub const PARTITIONED_FACETS_MAGIC: &[u8; 4] = b"SXfp";

/// One sort key's values: the documents that have one, in order, and how they compare.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SortColumn {
    /// (document, value), documents increasing.
    pub values: Vec<(u32, String)>,
    /// Every value is a number: they compare as numbers, else as text.
    pub numeric: bool,
}

impl SortColumn {
    fn new(values: Vec<(u32, String)>) -> Self {
        let numeric = values.iter().all(|(_, v)| number(v).is_some());
        Self { values, numeric }
    }

    /// Document `doc`'s value.
    pub fn value(&self, doc: u32) -> Option<&str> {
        let i = self.values.binary_search_by_key(&doc, |(d, _)| *d).ok()?;
        Some(&self.values[i].1)
    }

    /// How two values compare under this key.
    fn compare(&self, a: &str, b: &str) -> std::cmp::Ordering {
        match (self.numeric, number(a), number(b)) {
            (true, Some(x), Some(y)) => x.total_cmp(&y),
            _ => a.cmp(b),
        }
    }
}

fn number(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|n| n.is_finite())
}

/// The documents a query's filters let through.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Passing {
    /// Only these (`None`: any document not excluded).
    pub required: Option<HashSet<u32>>,
    /// Never these.
    pub excluded: HashSet<u32>,
}

impl Passing {
    /// Whether document `doc` passes.
    pub fn allows(&self, doc: u32) -> bool {
        !self.excluded.contains(&doc) && self.required.as_ref().is_none_or(|r| r.contains(&doc))
    }
}

/// Every document's filter values and sort values.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Facets {
    /// How many documents the index has.
    pub documents: u32,
    /// Filter name → value → the documents that have it (increasing).
    pub filters: BTreeMap<String, BTreeMap<String, Vec<u32>>>,
    /// Sort key → its values.
    pub sort: BTreeMap<String, SortColumn>,
    /// (2.8) For every filter value, the partitions (code files) holding chunks of its documents;
    /// `None` in a file from before.
    pub partitions: Option<ValuePartitions>,
}

/// Which partitions (code files) hold chunks of each filter value's documents.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ValuePartitions {
    /// How many partitions the index has.
    pub count: u32,
    /// Filter name → value → its partitions, increasing (the same names and values as
    /// [`Facets::filters`]).
    pub of: BTreeMap<String, BTreeMap<String, Vec<u32>>>,
}

impl Facets {
    /// The facets of an index's documents (numbered in order), or `None` when no document has a
    /// filter or sort value.
    pub fn of_documents(documents: &[DocumentInfo]) -> Option<Self> {
        let mut facets = Facets {
            documents: documents.len() as u32,
            ..Facets::default()
        };
        let mut sort: BTreeMap<String, Vec<(u32, String)>> = BTreeMap::new();
        for (n, d) in documents.iter().enumerate() {
            let n = n as u32;
            for (name, values) in &d.filters {
                let by_value = facets.filters.entry(name.clone()).or_default();
                for v in values {
                    let docs = by_value.entry(v.clone()).or_default();
                    if docs.last() != Some(&n) {
                        docs.push(n);
                    }
                }
            }
            for (key, value) in &d.sort {
                sort.entry(key.clone()).or_default().push((n, value.clone()));
            }
        }
        facets.sort = sort.into_iter().map(|(k, v)| (k, SortColumn::new(v))).collect();
        (!facets.filters.is_empty() || !facets.sort.is_empty()).then_some(facets)
    }

    /// Lists, for every filter value, the partitions holding chunks of its documents: from the
    /// chunks in partition order (`order[i]` is the chunk at position `i`; partition `p` holds
    /// positions `p · per_partition …`) and each chunk's document.
    pub fn list_partitions(&mut self, order: &[u32], per_partition: usize, document_of: &[u32]) {
        let per_partition = per_partition.max(1);
        let mut of_document: Vec<Vec<u32>> = vec![Vec::new(); self.documents as usize];
        for (position, &chunk) in order.iter().enumerate() {
            let p = (position / per_partition) as u32;
            let list = document_of
                .get(chunk as usize)
                .and_then(|&d| of_document.get_mut(d as usize));
            if let Some(list) = list.filter(|l| l.last() != Some(&p)) {
                list.push(p);
            }
        }
        let count = order.len().div_ceil(per_partition) as u32;
        let of = self
            .filters
            .iter()
            .map(|(name, values)| {
                let lists = values
                    .iter()
                    .map(|(value, docs)| {
                        let mut hit = vec![false; count as usize];
                        for &d in docs {
                            for &p in of_document.get(d as usize).map_or(&[][..], Vec::as_slice) {
                                hit[p as usize] = true;
                            }
                        }
                        (value.clone(), (0..count).filter(|&p| hit[p as usize]).collect())
                    })
                    .collect();
                (name.clone(), lists)
            })
            .collect();
        self.partitions = Some(ValuePartitions { count, of });
    }

    /// The partitions that may hold chunks of pages passing `filters`, increasing: for each
    /// filter, those of any of its `any` values and of each of its `all` values, and of every
    /// filter; `None` when the file lists no partitions or no filter requires a value (`none`
    /// lists alone exclude pages, not partitions).
    pub fn passing_partitions(&self, filters: &BTreeMap<String, Filter>) -> Option<Vec<u32>> {
        let lists = self.partitions.as_ref()?;
        let count = lists.count as usize;
        let empty = Vec::new();
        let mut allowed: Option<Vec<bool>> = None;
        let mut keep = |this: Vec<bool>| match allowed.as_mut() {
            None => allowed = Some(this),
            Some(a) => a.iter_mut().zip(this).for_each(|(a, t)| *a &= t),
        };
        for (name, filter) in filters {
            let by_value = lists.of.get(name);
            // The partitions of any of `values`.
            let of_any = |values: &[String]| {
                let mut hit = vec![false; count];
                for &p in values
                    .iter()
                    .flat_map(|v| by_value.and_then(|b| b.get(v)).unwrap_or(&empty))
                {
                    hit[p as usize] = true;
                }
                hit
            };
            if !filter.any.is_empty() {
                keep(of_any(&filter.any));
            }
            for v in &filter.all {
                keep(of_any(std::slice::from_ref(v)));
            }
        }
        let allowed = allowed?;
        Some((0..lists.count).filter(|&p| allowed[p as usize]).collect())
    }

    /// The bytes of the file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let magic = match self.partitions {
            Some(_) => PARTITIONED_FACETS_MAGIC,
            None => FACETS_MAGIC,
        };
        let mut out = magic.to_vec();
        put_varint(&mut out, u64::from(self.documents));
        put_varint(&mut out, self.filters.len() as u64);
        for (name, values) in &self.filters {
            put_string(&mut out, name);
            put_varint(&mut out, values.len() as u64);
            for (value, docs) in values {
                put_string(&mut out, value);
                put_deltas(&mut out, docs.iter().copied());
            }
        }
        put_varint(&mut out, self.sort.len() as u64);
        for (key, column) in &self.sort {
            put_string(&mut out, key);
            put_varint(&mut out, column.values.len() as u64);
            let mut previous = None;
            for (doc, value) in &column.values {
                put_varint(&mut out, u64::from(delta(previous, *doc)));
                previous = Some(*doc);
                put_string(&mut out, value);
            }
        }
        if let Some(partitions) = &self.partitions {
            put_varint(&mut out, u64::from(partitions.count));
            for (name, values) in &self.filters {
                for value in values.keys() {
                    let list = partitions.of.get(name).and_then(|v| v.get(value));
                    put_deltas(&mut out, list.map_or(&[][..], Vec::as_slice).iter().copied());
                }
            }
        }
        out
    }

    /// Reads a facets file of an index of `documents` documents and `partitions` partitions: every
    /// count bounded by the bytes behind it, documents and partitions increasing and below their
    /// counts, names and values UTF-8 and sorted. Both kinds of file are read (`SXfp` with each
    /// filter value's partitions, `SXfc` without); which one the index must have is the store's
    /// check.
    pub fn from_bytes(bytes: &[u8], documents: usize, partitions: usize) -> Result<Self, DecodeError> {
        let mut r = ByteReader::new(bytes);
        let offset = r.offset();
        let partitioned = match r.take(4)? {
            m if m == PARTITIONED_FACETS_MAGIC => true,
            m if m == FACETS_MAGIC => false,
            _ => {
                return Err(DecodeError::Invalid {
                    what: "facets magic",
                    offset,
                })
            }
        };
        let count = expect_count(&mut r, "facets document count", documents)?;
        let mut facets = Facets {
            documents: count,
            ..Facets::default()
        };
        let names = r.count("filter count", 2)?;
        for _ in 0..names {
            let name = sorted_after(&mut r, facets.filters.keys().next_back(), "filter name")?;
            let n = r.count("filter value count", 2)?;
            let mut values: BTreeMap<String, Vec<u32>> = BTreeMap::new();
            for _ in 0..n {
                let value = sorted_after(&mut r, values.keys().next_back(), "filter value")?;
                let docs = read_deltas(&mut r, count)?;
                values.insert(value, docs);
            }
            facets.filters.insert(name, values);
        }
        let keys = r.count("sort key count", 2)?;
        for _ in 0..keys {
            let key = sorted_after(&mut r, facets.sort.keys().next_back(), "sort key")?;
            let n = r.count("sort entry count", 2)?;
            let mut values = Vec::with_capacity(n);
            let mut previous = None;
            for _ in 0..n {
                let doc = next_document(&mut r, previous, count)?;
                previous = Some(doc);
                values.push((doc, r.string("sort value")?.to_string()));
            }
            facets.sort.insert(key, SortColumn::new(values));
        }
        if partitioned {
            let count = expect_count(&mut r, "partition count", partitions)?;
            let mut of: BTreeMap<String, BTreeMap<String, Vec<u32>>> = BTreeMap::new();
            for (name, values) in &facets.filters {
                let mut lists = BTreeMap::new();
                for value in values.keys() {
                    lists.insert(value.clone(), read_deltas(&mut r, count)?);
                }
                of.insert(name.clone(), lists);
            }
            facets.partitions = Some(ValuePartitions { count, of });
        }
        r.finish("facets trailing bytes")?;
        Ok(facets)
    }

    /// Which documents pass every filter (`None`: no filters, every document passes). Computed
    /// from the lists of documents the file holds, so what it takes is bounded by the file.
    pub fn passing(&self, filters: &BTreeMap<String, Filter>) -> Option<Passing> {
        if filters.is_empty() {
            return None;
        }
        let empty = Vec::new();
        let mut passing = Passing::default();
        for (name, filter) in filters {
            let by_value = self.filters.get(name);
            let docs = |v: &String| by_value.and_then(|b| b.get(v)).unwrap_or(&empty);
            // The documents this filter requires, if it requires any: one of `any`, all of `all`.
            let mut required: Option<HashSet<u32>> =
                (!filter.any.is_empty()).then(|| filter.any.iter().flat_map(docs).copied().collect());
            for v in &filter.all {
                let has: HashSet<u32> = docs(v).iter().copied().collect();
                required = Some(match required {
                    None => has,
                    Some(r) => r.intersection(&has).copied().collect(),
                });
            }
            if let Some(r) = required {
                passing.required = Some(match passing.required.take() {
                    None => r,
                    Some(p) => p.intersection(&r).copied().collect(),
                });
            }
            passing.excluded.extend(filter.none.iter().flat_map(docs));
        }
        Some(passing)
    }

    /// For every filter and value, how many of `documents` have it (0 included, so a reader sees
    /// every value).
    pub fn counts(&self, documents: &HashSet<u32>) -> BTreeMap<String, BTreeMap<String, usize>> {
        self.filters
            .iter()
            .map(|(name, values)| {
                let counts = values
                    .iter()
                    .map(|(v, docs)| (v.clone(), docs.iter().filter(|d| documents.contains(d)).count()))
                    .collect();
                (name.clone(), counts)
            })
            .collect()
    }

    /// Orders `items` (each with its document) by `key`'s values in `order`, stably; items whose
    /// document has no value keep their order after the rest.
    pub fn sort_by<T>(&self, items: &mut [T], key: &str, order: SortOrder, document_of: impl Fn(&T) -> Option<u32>) {
        let Some(column) = self.sort.get(key) else {
            return;
        };
        items.sort_by(|a, b| {
            let va = document_of(a).and_then(|d| column.value(d));
            let vb = document_of(b).and_then(|d| column.value(d));
            match (va, vb) {
                (Some(x), Some(y)) => match order {
                    SortOrder::Asc => column.compare(x, y),
                    SortOrder::Desc => column.compare(y, x),
                },
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            }
        });
    }
}

fn delta(previous: Option<u32>, doc: u32) -> u32 {
    previous.map_or(doc, |p| doc - p - 1)
}

fn put_deltas(out: &mut Vec<u8>, docs: impl ExactSizeIterator<Item = u32>) {
    put_varint(out, docs.len() as u64);
    let mut previous = None;
    for d in docs {
        put_varint(out, u64::from(delta(previous, d)));
        previous = Some(d);
    }
}

/// The next document number: after `previous`, below `count`.
fn next_document(r: &mut ByteReader, previous: Option<u32>, count: u32) -> Result<u32, DecodeError> {
    let offset = r.offset();
    let d = r.varint_u32("document delta")?;
    previous
        .map_or(Some(d), |p| p.checked_add(d).and_then(|x| x.checked_add(1)))
        .filter(|&doc| doc < count)
        .ok_or(DecodeError::Invalid {
            what: "document number",
            offset,
        })
}

/// A count that must be `expected` (the index's documents or partitions), read as a varint.
fn expect_count(r: &mut ByteReader, what: &'static str, expected: usize) -> Result<u32, DecodeError> {
    let offset = r.offset();
    let count = r.varint_u32(what)?;
    if count as usize != expected {
        return Err(DecodeError::Invalid { what, offset });
    }
    Ok(count)
}

fn read_deltas(r: &mut ByteReader, count: u32) -> Result<Vec<u32>, DecodeError> {
    let n = r.count("document count", 1)?;
    let mut docs = Vec::with_capacity(n);
    let mut previous = None;
    for _ in 0..n {
        let doc = next_document(r, previous, count)?;
        previous = Some(doc);
        docs.push(doc);
    }
    Ok(docs)
}

/// A name or value, after `last` in order (each once).
fn sorted_after(r: &mut ByteReader, last: Option<&String>, what: &'static str) -> Result<String, DecodeError> {
    let offset = r.offset();
    let s = r.string(what)?.to_string();
    if last.is_some_and(|l| *l >= s) {
        return Err(DecodeError::Invalid { what, offset });
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(filters: &[(&str, &[&str])], sort: &[(&str, &str)]) -> DocumentInfo {
        DocumentInfo {
            filters: filters
                .iter()
                .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
                .collect(),
            sort: sort.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..DocumentInfo::default()
        }
    }

    fn sample() -> Facets {
        Facets::of_documents(&[
            document(&[("tags", &["a", "b"]), ("lang", &["en"])], &[("weight", "10")]),
            document(&[("tags", &["b"])], &[("weight", "9")]),
            document(&[], &[]),
            document(&[("tags", &["c"]), ("lang", &["fr"])], &[("weight", "2.5")]),
        ])
        .unwrap()
    }

    /// The sample with each filter value's partitions, as the writer lists them: 8 chunks in
    /// partition order (3 partitions of 3), of documents 0 0 1 3 0 1 3 3 (document 2 has none).
    fn partitioned() -> Facets {
        let mut facets = sample();
        facets.list_partitions(&[5, 0, 2, 7, 1, 3, 6, 4], 3, &[0, 0, 1, 1, 3, 0, 3, 3]);
        facets
    }

    #[test]
    fn round_trips_and_rejects_what_no_writer_writes() {
        for facets in [sample(), partitioned()] {
            let bytes = facets.to_bytes();
            assert_eq!(Facets::from_bytes(&bytes, 4, 3).unwrap(), facets);
            assert!(
                Facets::from_bytes(&bytes, 3, 3).is_err(),
                "another index's document count"
            );
            for cut in 0..bytes.len() {
                assert!(Facets::from_bytes(&bytes[..cut], 4, 3).is_err(), "cut at {cut}");
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert!(Facets::from_bytes(&longer, 4, 3).is_err(), "trailing bytes");
        }
        let bytes = partitioned().to_bytes();
        assert_eq!(&bytes[..4], PARTITIONED_FACETS_MAGIC);
        assert_eq!(&sample().to_bytes()[..4], FACETS_MAGIC, "without lists, the 2.5 file");
        assert!(
            Facets::from_bytes(&bytes, 4, 4).is_err(),
            "another index's partition count"
        );
        // A partition past the count: value c lists partition 2 of 3, past a count of 2.
        let mut past = partitioned();
        past.partitions.as_mut().unwrap().count = 2;
        assert!(Facets::from_bytes(&past.to_bytes(), 4, 2).is_err());
        // A count claiming far more entries than the bytes behind it fails before allocating.
        let mut huge = FACETS_MAGIC.to_vec();
        put_varint(&mut huge, 4);
        put_varint(&mut huge, u64::from(u32::MAX));
        assert!(Facets::from_bytes(&huge, 4, 3).is_err());
        assert_eq!(Facets::of_documents(&[document(&[], &[])]), None, "nothing to store");
    }

    #[test]
    fn each_value_lists_the_partitions_of_its_pages_and_filters_select_them() {
        let f = partitioned();
        let lists = f.partitions.as_ref().unwrap();
        assert_eq!(lists.count, 3);
        // Positions 0-2 hold chunks 5 0 2 (documents 0 0 1), 3-5 chunks 7 1 3 (3 0 1), 6-7
        // chunks 6 4 (3 3): document 0 is in partitions 0 1, 1 in 0 1, 3 in 1 2.
        let of = |name: &str, value: &str| lists.of[name][value].clone();
        assert_eq!(of("tags", "a"), [0, 1]);
        assert_eq!(of("tags", "b"), [0, 1]);
        assert_eq!(of("tags", "c"), [1, 2]);
        assert_eq!(of("lang", "en"), [0, 1]);
        assert_eq!(of("lang", "fr"), [1, 2]);
        let filters = |json: &str| serde_json::from_str::<BTreeMap<String, Filter>>(json).unwrap();
        let passing = |json: &str| f.passing_partitions(&filters(json));
        assert_eq!(passing(r#"{"tags": "c"}"#), Some(vec![1, 2]));
        assert_eq!(passing(r#"{"tags": {"any": ["a", "c"]}}"#), Some(vec![0, 1, 2]));
        assert_eq!(passing(r#"{"tags": ["b", "c"]}"#), Some(vec![1]), "all: each value's");
        assert_eq!(
            passing(r#"{"tags": "b", "lang": "fr"}"#),
            Some(vec![1]),
            "every filter's"
        );
        assert_eq!(passing(r#"{"missing": "x"}"#), Some(vec![]));
        assert_eq!(
            passing(r#"{"tags": {"none": ["c"]}}"#),
            None,
            "none lists exclude pages only"
        );
        assert_eq!(
            sample().passing_partitions(&filters(r#"{"tags": "c"}"#)),
            None,
            "no lists"
        );
        // Every page that passes has its chunks in the partitions said (the lists are a superset).
        let pages = [vec![0, 1], vec![0, 1], vec![], vec![1, 2]];
        for json in [
            r#"{"tags": ["b", "c"]}"#,
            r#"{"tags": {"any": ["a", "c"]}, "lang": "fr"}"#,
        ] {
            let said = passing(json).unwrap();
            let pass = f.passing(&filters(json)).unwrap();
            for (d, holding) in pages.iter().enumerate().filter(|(d, _)| pass.allows(*d as u32)) {
                assert!(holding.iter().all(|p| said.contains(p)), "{json}: page {d}");
            }
        }
    }

    #[test]
    fn every_byte_flipped_is_an_error_or_a_valid_file() {
        for facets in [sample(), partitioned()] {
            let bytes = facets.to_bytes();
            for i in 0..bytes.len() {
                for bit in 0..8 {
                    let mut b = bytes.clone();
                    b[i] ^= 1 << bit;
                    if let Ok(f) = Facets::from_bytes(&b, 4, 3) {
                        assert_eq!(Facets::from_bytes(&f.to_bytes(), 4, 3).unwrap(), f);
                    }
                }
            }
        }
    }

    #[test]
    fn filters_select_documents_and_counts_cover_every_value() {
        let f = sample();
        let filters = |json: &str| serde_json::from_str::<BTreeMap<String, Filter>>(json).unwrap();
        let docs = |passing: Option<Passing>| {
            let passing = passing.unwrap();
            (0..4).filter(|&d| passing.allows(d)).collect::<Vec<u32>>()
        };
        assert_eq!(f.passing(&BTreeMap::new()), None);
        assert_eq!(docs(f.passing(&filters(r#"{"tags": "b"}"#))), [0, 1]);
        assert_eq!(docs(f.passing(&filters(r#"{"tags": ["a", "b"]}"#))), [0]);
        assert_eq!(docs(f.passing(&filters(r#"{"tags": {"any": ["a", "c"]}}"#))), [0, 3]);
        assert_eq!(docs(f.passing(&filters(r#"{"tags": {"none": ["b"]}}"#))), [2, 3]);
        assert_eq!(docs(f.passing(&filters(r#"{"tags": "b", "lang": "en"}"#))), [0]);
        assert!(docs(f.passing(&filters(r#"{"missing": "x"}"#))).is_empty());
        // The lists agree with each page's values read one by one.
        let pages = [vec!["a", "b"], vec!["b"], vec![], vec!["c"]];
        for json in [r#"{"tags": {"any": ["a", "c"], "none": ["b"]}}"#, r#"{"tags": ["b"]}"#] {
            let fs = filters(json);
            let passing = f.passing(&fs).unwrap();
            for (d, values) in pages.iter().enumerate() {
                let values: Vec<String> = values.iter().map(|s| s.to_string()).collect();
                assert_eq!(passing.allows(d as u32), fs["tags"].passes(&values), "{json}: page {d}");
            }
        }
        let counts = f.counts(&[0, 1, 2].into());
        assert_eq!(counts["tags"]["b"], 2);
        assert_eq!(counts["tags"]["c"], 0, "a value no match has is still listed");
        assert_eq!(counts["lang"]["en"], 1);
    }

    #[test]
    fn sorting_compares_numbers_as_numbers_and_puts_the_unvalued_last() {
        let f = sample();
        let mut docs = vec![2u32, 0, 1, 3];
        f.sort_by(&mut docs, "weight", SortOrder::Asc, |d| Some(*d));
        assert_eq!(docs, [3, 1, 0, 2], "2.5 < 9 < 10 as numbers; document 2 has none");
        f.sort_by(&mut docs, "weight", SortOrder::Desc, |d| Some(*d));
        assert_eq!(docs, [0, 1, 3, 2]);
        let mut text = Facets::of_documents(&[
            document(&[], &[("date", "2024-05-01")]),
            document(&[], &[("date", "2023-12-31")]),
        ])
        .unwrap();
        let mut docs = vec![0u32, 1];
        text.sort_by(&mut docs, "date", SortOrder::Asc, |d| Some(*d));
        assert_eq!(docs, [1, 0], "ISO dates order as text");
        text.sort.clear();
        text.sort_by(&mut docs, "date", SortOrder::Desc, |d| Some(*d));
        assert_eq!(docs, [1, 0], "an unknown key leaves the order alone");
    }
}
