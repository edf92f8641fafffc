//! Where the objects of an index are (format 2.4): each a file of its own, or a byte range of a
//! **pack** (an immutable, content-addressed file holding many objects, read with HTTP `Range`
//! requests); and the **pages** that list a run's objects, so the manifest names a few pages
//! instead of every object.
//!
//! An object keeps its content-addressed name (`kw.<16 hex>.bin`) wherever it is stored, and is
//! checked against it when it arrives, so a pack adds no trust: a damaged or truncated range fails
//! as the object it should have been. A reference is written `name` (a file of its own) or
//! `name@P:O:L` (bytes `O … O + L − 1` of pack `P` of the manifest's `files.packs`).
//!
//! A page (`page.<16 hex>.bin`) lists `page_entries` consecutive objects of one run (keyword
//! shards, fragments, code files or vector blocks), each as its name's hash and location, and for
//! keyword shards their first term. Byte layout: `docs/FORMAT.md` ("Packs and pages").

use crate::codec::{put_string, put_varint, ByteReader, DecodeError};

use super::files::{valid_file_name, NAME_HASH_LEN};

/// First bytes of a page.
pub const PAGE_MAGIC: &[u8; 4] = b"SXpg";

/// A run of objects a page lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Run {
    /// Keyword shards, in term order.
    Keyword,
    /// Text fragments, in chunk order.
    Fragments,
    /// Binary code files, in cluster order.
    Codes,
    /// Int8 vector blocks, in cluster order.
    Blocks,
}

impl Run {
    /// Every run, in the order objects are stored.
    pub const ALL: [Run; 4] = [Run::Codes, Run::Keyword, Run::Fragments, Run::Blocks];

    fn code(self) -> u8 {
        match self {
            Run::Keyword => 1,
            Run::Fragments => 2,
            Run::Codes => 3,
            Run::Blocks => 4,
        }
    }

    /// The kind and extension of its objects' names.
    pub fn kind_and_extension(self) -> (&'static str, &'static str) {
        match self {
            Run::Keyword => ("kw", "bin"),
            Run::Fragments => ("frag", "json"),
            Run::Codes => ("codes", "bin"),
            Run::Blocks => ("vec", "bin"),
        }
    }

    /// What its objects are, for errors.
    pub fn describe(self) -> &'static str {
        match self {
            Run::Keyword => "keyword shard",
            Run::Fragments => "fragment",
            Run::Codes => "code file",
            Run::Blocks => "vector block",
        }
    }
}

/// Where in a pack an object's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// The pack's number in the manifest's `files.packs`.
    pub pack: u32,
    /// Offset of the object's first byte.
    pub offset: u64,
    /// The length in bytes of what is stored.
    pub len: u64,
    /// The object's length when it is stored deflated (raw DEFLATE), 0 when stored as is. A
    /// range of a pack is not gzipped by hosts, so the writer deflates what compresses.
    pub inflated: u64,
}

impl Location {
    /// The end of the range (exclusive), if it fits in 64 bits.
    pub fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.len)
    }

    /// The object from the bytes stored at this location: inflated to exactly its length (never
    /// more: a bound, not a promise, on what is allocated), or as stored.
    pub fn object<'a>(&self, stored: &'a [u8]) -> Result<std::borrow::Cow<'a, [u8]>, String> {
        if self.inflated == 0 {
            return Ok(std::borrow::Cow::Borrowed(stored));
        }
        let limit = usize::try_from(self.inflated).map_err(|_| "it is too large to inflate here".to_string())?;
        match miniz_oxide::inflate::decompress_to_vec_with_limit(stored, limit) {
            Ok(bytes) if bytes.len() == limit => Ok(std::borrow::Cow::Owned(bytes)),
            Ok(bytes) => Err(format!("it inflates to {} bytes, not {limit}", bytes.len())),
            Err(_) => Err(format!("it does not inflate to the {limit} bytes its place says")),
        }
    }
}

/// The most an object may inflate to (the largest pack a host serves).
pub const MAX_INFLATED: u64 = 25 << 20;

/// An object: its content-addressed name, and where it is stored (`None`: a file of that name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    /// `kind.<16 hex>.ext`.
    pub name: String,
    /// Its range of a pack, if packed.
    pub at: Option<Location>,
}

impl ObjectRef {
    /// A reference as the manifest writes it: `name`, `name@pack:offset:len`, or
    /// `name@pack:offset:len:inflated` when stored deflated.
    pub fn encode(&self) -> String {
        match self.at {
            None => self.name.clone(),
            Some(at) if at.inflated == 0 => format!("{}@{}:{}:{}", self.name, at.pack, at.offset, at.len),
            Some(at) => format!("{}@{}:{}:{}:{}", self.name, at.pack, at.offset, at.len, at.inflated),
        }
    }

    /// Reads a reference of the manifest, checking the name's form and that the pack is one of
    /// `packs`.
    pub fn parse(text: &str, packs: usize) -> Result<Self, String> {
        let bad = || {
            format!(
                "it names the object {text:?}, which is not of the form kind.<16 hex digits>.ext[@pack:offset:length] that sextant writes (no paths, no URLs)"
            )
        };
        let (name, at) = match text.split_once('@') {
            None => (text, None),
            Some((name, place)) => {
                let mut parts = place.split(':').map(|p| {
                    (!p.is_empty() && p.len() <= 20 && p.bytes().all(|b| b.is_ascii_digit()))
                        .then(|| p.parse::<u64>().ok())
                        .flatten()
                });
                let (Some(Some(pack)), Some(Some(offset)), Some(Some(len))) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    return Err(bad());
                };
                let inflated = match (parts.next(), parts.next()) {
                    (None, _) => 0,
                    (Some(Some(inflated)), None) if inflated > 0 => inflated,
                    _ => return Err(bad()),
                };
                let at = Location {
                    pack: u32::try_from(pack).map_err(|_| bad())?,
                    offset,
                    len,
                    inflated,
                };
                (name, Some(at))
            }
        };
        if !valid_file_name(name) {
            return Err(bad());
        }
        if let Some(at) = at {
            check_location(&at, packs).map_err(|reason| format!("{name}: {reason}"))?;
        }
        Ok(Self {
            name: name.to_string(),
            at,
        })
    }
}

fn check_location(at: &Location, packs: usize) -> Result<(), String> {
    if at.pack as usize >= packs {
        return Err(format!("pack {} of {packs}", at.pack));
    }
    if at.len == 0 || at.end().is_none() {
        return Err(format!(
            "an empty or impossible range ({} bytes at {})",
            at.len, at.offset
        ));
    }
    if at.inflated > MAX_INFLATED {
        return Err(format!(
            "an object said to inflate to {} bytes, over {MAX_INFLATED}",
            at.inflated
        ));
    }
    Ok(())
}

/// One object a page lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageEntry {
    /// A keyword shard's first term (`None` for the other runs).
    pub first: Option<String>,
    /// The object.
    pub object: ObjectRef,
}

/// A page of `run` listing `entries`, the first of them the run's object number `first`.
pub fn page_to_bytes(run: Run, first: usize, entries: &[PageEntry]) -> Vec<u8> {
    let mut out = PAGE_MAGIC.to_vec();
    out.push(run.code());
    put_varint(&mut out, first as u64);
    put_varint(&mut out, entries.len() as u64);
    for entry in entries {
        if let Some(term) = &entry.first {
            put_string(&mut out, term);
        }
        let hash = entry.object.name.split('.').nth(1).unwrap_or_default();
        for pair in hash.as_bytes().chunks(2) {
            let digit = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
            out.push(digit(pair[0]) << 4 | digit(pair.get(1).copied().unwrap_or(b'0')));
        }
        match entry.object.at {
            None => put_varint(&mut out, 0),
            Some(at) => {
                put_varint(&mut out, (u64::from(at.pack) + 1) << 1 | u64::from(at.inflated > 0));
                put_varint(&mut out, at.offset);
                put_varint(&mut out, at.len);
                if at.inflated > 0 {
                    put_varint(&mut out, at.inflated);
                }
            }
        }
    }
    out
}

/// Reads a page of `run` that must list `count` objects from the run's object `first`, each
/// packed in one of `packs` packs or a file of its own.
pub fn page_from_bytes(
    bytes: &[u8],
    run: Run,
    first: usize,
    count: usize,
    packs: usize,
) -> Result<Vec<PageEntry>, DecodeError> {
    let mut r = ByteReader::new(bytes);
    let offset = r.offset();
    if r.take(4)? != PAGE_MAGIC || r.take(1)? != [run.code()] {
        return Err(DecodeError::Invalid {
            what: "page magic or run",
            offset,
        });
    }
    let offset = r.offset();
    if r.varint()? != first as u64 {
        return Err(DecodeError::Invalid {
            what: "page's first object",
            offset,
        });
    }
    let offset = r.offset();
    // An entry takes at least its hash and one byte of location.
    let stated = r.count("page entries", NAME_HASH_LEN / 2 + 1)?;
    if stated != count {
        return Err(DecodeError::Invalid {
            what: "page's entry count",
            offset,
        });
    }
    let (kind, extension) = run.kind_and_extension();
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        let term = match run {
            Run::Keyword => Some(r.string("first term")?.to_string()),
            _ => None,
        };
        let hash: String = r.take(NAME_HASH_LEN / 2)?.iter().map(|b| format!("{b:02x}")).collect();
        let offset = r.offset();
        let at = match r.varint()? {
            0 => None,
            1 => {
                return Err(DecodeError::Invalid {
                    what: "object's place",
                    offset,
                })
            }
            tag => {
                let pack = (tag >> 1) - 1;
                let mut at = Location {
                    pack: u32::try_from(pack).map_err(|_| DecodeError::Invalid { what: "pack", offset })?,
                    offset: r.varint()?,
                    len: r.varint()?,
                    inflated: 0,
                };
                if tag & 1 == 1 {
                    at.inflated = r.varint()?;
                    if at.inflated == 0 {
                        return Err(DecodeError::Invalid {
                            what: "inflated length",
                            offset,
                        });
                    }
                }
                check_location(&at, packs).map_err(|_| DecodeError::Invalid {
                    what: "object's pack range",
                    offset,
                })?;
                Some(at)
            }
        };
        entries.push(PageEntry {
            first: term,
            object: ObjectRef {
                name: format!("{kind}.{hash}.{extension}"),
                at,
            },
        });
    }
    r.finish("page trailing bytes")?;
    if run == Run::Keyword && entries.windows(2).any(|w| w[0].first >= w[1].first) {
        return Err(DecodeError::Invalid {
            what: "page's terms out of order",
            offset: 0,
        });
    }
    Ok(entries)
}

/// Objects laid out into packs in order: a new pack starts when the next object would take the
/// current one past `pack_bytes` (an object larger than that alone gets a pack of its own).
#[derive(Debug, Default)]
#[cfg(feature = "collection")]
pub struct PackWriter {
    pack_bytes: usize,
    /// The packs so far, each its bytes.
    pub packs: Vec<Vec<u8>>,
}

#[cfg(feature = "collection")]
impl PackWriter {
    /// Packs of about `pack_bytes` (at least 1).
    pub fn new(pack_bytes: usize) -> Self {
        Self {
            pack_bytes: pack_bytes.max(1),
            packs: Vec::new(),
        }
    }

    /// Appends an object, deflated when that saves at least a sixty-fourth of it (text by far,
    /// binary codes and int8 vectors by a few percent, as a host's gzip would), returning where
    /// it went.
    pub fn put(&mut self, object: &[u8]) -> Location {
        let deflated = miniz_oxide::deflate::compress_to_vec(object, 6);
        let (bytes, inflated) = if deflated.len() + object.len() / 64 <= object.len() {
            (deflated.as_slice(), object.len() as u64)
        } else {
            (object, 0)
        };
        let fits = self
            .packs
            .last()
            .is_some_and(|p| p.is_empty() || p.len() + bytes.len() <= self.pack_bytes);
        if !fits {
            self.packs.push(Vec::new());
        }
        let pack = self.packs.len() - 1;
        let current = &mut self.packs[pack];
        let at = Location {
            pack: pack as u32,
            offset: current.len() as u64,
            len: bytes.len() as u64,
            inflated,
        };
        current.extend_from_slice(bytes);
        at
    }
}

/// What a run's table says of an object.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Found<'a> {
    /// The object.
    Object(&'a ObjectRef),
    /// Its page, which must be added first.
    Page(&'a ObjectRef),
    /// No such object.
    Missing,
}

/// An object of a run, with its first term for a keyword shard.
pub(crate) type Listed = (Option<String>, ObjectRef);

/// A run's objects as far as they are known: every one from the start (listed in the manifest,
/// before 2.4), or a page at a time. What it holds is bounded by the bytes behind it (the
/// manifest's list, or the pages added), never by the count the manifest claims.
#[derive(Debug, Clone)]
pub(crate) struct RunTable {
    run: Run,
    /// How many objects the run has (a count, never allocated by).
    count: usize,
    /// Objects a page lists (a listed run is one page of them all).
    per_page: usize,
    pages: Vec<ObjectRef>,
    /// Keyword pages: each page's first term.
    page_firsts: Vec<String>,
    /// Each page's entries, once added: (first term for keyword shards, object).
    entries: Vec<Option<Vec<Listed>>>,
}

impl RunTable {
    /// A run listed in the manifest: its objects (keyword shards with their first terms).
    pub(crate) fn listed(run: Run, objects: Vec<Listed>) -> Self {
        Self {
            run,
            count: objects.len(),
            per_page: objects.len().max(1),
            pages: Vec::new(),
            page_firsts: Vec::new(),
            entries: vec![Some(objects)],
        }
    }

    /// A run of `count` objects listed by `pages` of `per_page` (keyword pages with their first
    /// terms).
    pub(crate) fn paged(run: Run, count: usize, per_page: usize, pages: Vec<Listed>) -> Self {
        let (page_firsts, pages): (Vec<Option<String>>, Vec<ObjectRef>) = pages.into_iter().unzip();
        Self {
            run,
            count,
            per_page: per_page.max(1),
            entries: vec![None; pages.len()],
            pages,
            page_firsts: page_firsts.into_iter().map(Option::unwrap_or_default).collect(),
        }
    }

    /// Entry `i`, if its page is added.
    fn entry(&self, i: usize) -> Option<&Listed> {
        self.entries.get(i / self.per_page)?.as_ref()?.get(i % self.per_page)
    }

    /// How many objects the run has.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// The pages (none when listed in the manifest).
    pub(crate) fn pages(&self) -> &[ObjectRef] {
        &self.pages
    }

    /// Whether page `p` is added.
    pub(crate) fn page_held(&self, p: usize) -> bool {
        self.entries.get(p).is_some_and(Option::is_some)
    }

    /// The objects page `p` lists.
    pub(crate) fn page_span(&self, p: usize) -> std::ops::Range<usize> {
        let start = p.saturating_mul(self.per_page).min(self.len());
        start..start.saturating_add(self.per_page).min(self.len())
    }

    /// Object `i`, or the page that lists it.
    pub(crate) fn get(&self, i: usize) -> Found<'_> {
        if i >= self.count {
            return Found::Missing;
        }
        match self.entry(i) {
            Some((_, object)) => Found::Object(object),
            None => self.pages.get(i / self.per_page).map_or(Found::Missing, Found::Page),
        }
    }

    /// Every object known so far, with its number.
    pub(crate) fn known(&self) -> impl Iterator<Item = (usize, &ObjectRef)> {
        let per_page = self.per_page;
        self.entries.iter().enumerate().flat_map(move |(p, entries)| {
            entries
                .iter()
                .flatten()
                .enumerate()
                .map(move |(j, (_, o))| (p.saturating_mul(per_page).saturating_add(j), o))
        })
    }

    /// The pages not added yet.
    pub(crate) fn pages_missing(&self) -> impl Iterator<Item = &ObjectRef> {
        self.pages
            .iter()
            .enumerate()
            .filter(|(p, _)| !self.page_held(*p))
            .map(|(_, o)| o)
    }

    /// Fills page `p` from its entries (read by [`page_from_bytes`] with [`RunTable::page_span`]);
    /// a keyword page must start at the term the manifest gives it.
    pub(crate) fn fill(&mut self, p: usize, entries: Vec<PageEntry>) -> Result<(), String> {
        if self.run == Run::Keyword
            && entries.first().and_then(|e| e.first.as_deref()) != self.page_firsts.get(p).map(String::as_str)
        {
            return Err("its first term is not the one the manifest gives the page".into());
        }
        let next = self.page_firsts.get(p + 1);
        if self.run == Run::Keyword
            && next.is_some_and(|n| entries.last().and_then(|e| e.first.as_ref()).is_some_and(|l| l >= n))
        {
            return Err("its terms run past the next page's".into());
        }
        if let Some(slot) = self.entries.get_mut(p) {
            *slot = Some(entries.into_iter().map(|e| (e.first, e.object)).collect());
        }
        Ok(())
    }

    /// The first term of shard `i` and of the shard after it, where known (keyword runs).
    pub(crate) fn term_bounds(&self, i: usize) -> (Option<&str>, Option<&str>) {
        let first = |j: usize| {
            self.entry(j).and_then(|(f, _)| f.as_deref()).or_else(|| {
                (self.per_page > 0 && j.is_multiple_of(self.per_page))
                    .then(|| self.page_firsts.get(j / self.per_page).map(String::as_str))
                    .flatten()
            })
        };
        (first(i), first(i + 1))
    }

    /// The shard whose terms may hold `term` (`Ok(None)`: before every shard), or the page to
    /// add to know it (keyword runs).
    pub(crate) fn shard_of(&self, term: &str) -> Result<Option<usize>, &ObjectRef> {
        self.count_before(|first| first <= term).map(|n| n.checked_sub(1))
    }

    /// How many shards start before `term` (keyword runs), or the page to add to know it.
    pub(crate) fn starting_before(&self, term: &str) -> Result<usize, &ObjectRef> {
        self.count_before(|first| first < term)
    }

    /// How many shards' first terms satisfy `before` (a prefix of the run, in term order).
    fn count_before(&self, before: impl Fn(&str) -> bool) -> Result<usize, &ObjectRef> {
        let counted = |p: usize| {
            let entries = self
                .entries
                .get(p)
                .and_then(Option::as_ref)
                .map_or(&[][..], Vec::as_slice);
            p.saturating_mul(self.per_page)
                + entries
                    .iter()
                    .take_while(|(f, _)| f.as_deref().is_some_and(&before))
                    .count()
        };
        if self.pages.is_empty() {
            return Ok(counted(0));
        }
        let Some(p) = self.page_firsts.partition_point(|f| before(f)).checked_sub(1) else {
            return Ok(0);
        };
        if !self.page_held(p) {
            return Err(&self.pages[p]);
        }
        Ok(counted(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(name: &str, at: Option<Location>) -> ObjectRef {
        ObjectRef { name: name.into(), at }
    }

    #[test]
    fn references_read_back_and_bad_ones_say_why() {
        let at = Location {
            pack: 1,
            offset: 4096,
            len: 300,
            inflated: 0,
        };
        let deflated = Location { inflated: 900, ..at };
        for r in [
            object("kw.0123456789abcdef.bin", None),
            object("vec.0123456789abcdef.bin", Some(at)),
            object("frag.0123456789abcdef.json", Some(deflated)),
        ] {
            assert_eq!(ObjectRef::parse(&r.encode(), 2).unwrap(), r);
        }
        let huge = ObjectRef::parse("kw.0123456789abcdef.bin@0:0:3:999999999999", 2).unwrap_err();
        assert!(huge.contains("inflate"), "{huge}");
        for bad in [
            "../kw.0123456789abcdef.bin",
            "kw.0123456789abcdef.bin@1:2",
            "kw.0123456789abcdef.bin@1:2:3:4:5",
            "kw.0123456789abcdef.bin@1:2:3:0",
            "kw.0123456789abcdef.bin@-1:2:3",
            "kw.0123456789abcdef.bin@1:+2:3",
            "kw.0123456789abcdef.bin@99999999999:2:3",
        ] {
            assert!(
                ObjectRef::parse(bad, 2).unwrap_err().contains("not of the form"),
                "{bad}"
            );
        }
        let past = ObjectRef::parse("kw.0123456789abcdef.bin@2:0:3", 2).unwrap_err();
        assert!(past.contains("pack 2 of 2"), "{past}");
        let empty = ObjectRef::parse("kw.0123456789abcdef.bin@0:0:0", 2).unwrap_err();
        assert!(empty.contains("empty"), "{empty}");
        let overflow = ObjectRef::parse(&format!("kw.0123456789abcdef.bin@0:{}:2", u64::MAX), 2).unwrap_err();
        assert!(overflow.contains("impossible"), "{overflow}");
    }

    #[test]
    fn a_page_reads_back_and_refuses_what_the_manifest_does_not_say() {
        let entries = vec![
            PageEntry {
                first: Some("alpha".into()),
                object: object("kw.00112233445566ff.bin", None),
            },
            PageEntry {
                first: Some("beta".into()),
                object: object(
                    "kw.8899aabbccddeeff.bin",
                    Some(Location {
                        pack: 0,
                        offset: 10,
                        len: 5,
                        inflated: 7,
                    }),
                ),
            },
        ];
        let bytes = page_to_bytes(Run::Keyword, 256, &entries);
        assert_eq!(page_from_bytes(&bytes, Run::Keyword, 256, 2, 1).unwrap(), entries);
        // Another run, another position, another count, a pack past the manifest's.
        assert!(page_from_bytes(&bytes, Run::Fragments, 256, 2, 1).is_err());
        assert!(page_from_bytes(&bytes, Run::Keyword, 0, 2, 1).is_err());
        assert!(page_from_bytes(&bytes, Run::Keyword, 256, 3, 1).is_err());
        assert!(page_from_bytes(&bytes, Run::Keyword, 256, 2, 0).is_err());
        // Every truncation fails; a huge count is refused before anything is allocated for it.
        for len in 0..bytes.len() {
            assert!(
                page_from_bytes(&bytes[..len], Run::Keyword, 256, 2, 1).is_err(),
                "{len}"
            );
        }
        let mut huge = PAGE_MAGIC.to_vec();
        huge.push(2);
        put_varint(&mut huge, 0);
        put_varint(&mut huge, u64::MAX >> 1);
        assert!(page_from_bytes(&huge, Run::Fragments, 0, usize::MAX >> 1, 1).is_err());
        // Terms out of order.
        let swapped: Vec<PageEntry> = entries.iter().rev().cloned().collect();
        let bytes = page_to_bytes(Run::Keyword, 0, &swapped);
        assert!(page_from_bytes(&bytes, Run::Keyword, 0, 2, 1).is_err());
    }

    /// `n` bytes that do not compress.
    fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    #[cfg(feature = "collection")]
    fn packs_fill_to_their_size_and_a_large_object_gets_its_own() {
        let mut w = PackWriter::new(10);
        let places: Vec<Location> = [4usize, 4, 4, 30, 1]
            .iter()
            .enumerate()
            .map(|(i, &n)| w.put(&noise(n, i as u64 + 1)))
            .collect();
        let packs: Vec<(u32, u64)> = places.iter().map(|l| (l.pack, l.offset)).collect();
        assert_eq!(packs, [(0, 0), (0, 4), (1, 0), (2, 0), (3, 0)]);
        assert_eq!(w.packs.iter().map(Vec::len).collect::<Vec<_>>(), [8, 4, 30, 1]);
        assert!(places.iter().all(|l| l.inflated == 0), "noise is stored as is");
    }

    #[test]
    #[cfg(feature = "collection")]
    fn what_compresses_is_stored_deflated_and_inflates_to_exactly_itself() {
        let text = "the keeper trims the wick at dusk; ".repeat(40).into_bytes();
        let mut w = PackWriter::new(1 << 20);
        let at = w.put(&text);
        assert_eq!(at.inflated, text.len() as u64);
        assert!(at.len * 4 < at.inflated, "{} of {}", at.len, at.inflated);
        let stored = &w.packs[0][at.offset as usize..at.end().unwrap() as usize];
        assert_eq!(at.object(stored).unwrap().as_ref(), text.as_slice());
        // A place that says more or fewer bytes than it inflates to, or bytes that are not DEFLATE.
        assert!(Location {
            inflated: at.inflated - 1,
            ..at
        }
        .object(stored)
        .is_err());
        assert!(Location {
            inflated: at.inflated + 1,
            ..at
        }
        .object(stored)
        .is_err());
        assert!(at.object(&noise(stored.len(), 3)).is_err());
        assert!(at.object(&stored[..stored.len() / 2]).is_err());
    }
}
